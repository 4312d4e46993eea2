"""The expression DAG and what every layer reads: the op table (``ops``), value semantics
(``semantics``), the hash-consed graph with folding and rewrites (``graph``, ``simplify``),
terms with arithmetic (``term``), printing, errors, limits, and fork safety."""
