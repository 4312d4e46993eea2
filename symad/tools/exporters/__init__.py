"""Source code of an expression, its gradient and Hessian, for programs without symad: C99
(``c_source``) and plain Python (``python_source``), both the native backend's straight-line
code read back as source (``straight_line``), for the schedule of ``outputs``."""

from symad.tools.exporters.c_source import c_name_problem, c_source
from symad.tools.exporters.python_source import python_name_problem, python_source

__all__ = ["c_name_problem", "c_source", "python_name_problem", "python_source"]
