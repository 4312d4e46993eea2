"""The expression DAG and what every layer reads: the op table (``ops``), value semantics
(``semantics``), the hash-consed DAG with folding and rewrites (``dag``, ``simplify``),
terms with arithmetic (``term``), printing, errors, limits, and fork safety."""
