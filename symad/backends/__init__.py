"""Evaluating a schedule or the DAG, with no threads of their own: interpreted on floats
(``interpret``) or on a tape of numbers (``tape``), as instructions for the shared interpreter
(``vm``), or as Python code (``python_code``)."""
