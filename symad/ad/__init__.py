"""Differentiation on the DAG: the sweeps (``sweep``), local partials (``local``), reverse
mode (``reverse``), forward mode (``forward``) and second derivatives (``hessian``)."""
