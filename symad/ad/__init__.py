"""Differentiation on the DAG: the sweeps' order (``sweep``), local partials (``local``), the one
reverse sweep (``reverse``) and the one forward sweep (``forward``) over algebras (nodes there,
numbers in ``numbers``, either traced step by step in ``trace``), branches' strong zeros
(``branches``) and the derivative matrices as nodes: Jacobians and Hessians (``matrices``)."""
