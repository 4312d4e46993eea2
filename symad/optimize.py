"""Public API of minimisation (implemented in :mod:`symad.tools.optimize`).

>>> from symad.optimize import minimize
>>> minimize("(x-3)^2", {"x": 0}).x.round(12).tolist()
[3.0]
"""

from symad.tools.optimize.driver import STATUS, OptimizeResult, check_settings, minimize
from symad.tools.optimize.methods import METHODS
from symad.tools.optimize.problem import Problem, substitute
from symad.tools.optimize.scipy_adapter import ScipyFunctions, scipy_functions

__all__ = ["METHODS", "STATUS", "OptimizeResult", "Problem", "ScipyFunctions", "check_settings", "minimize",
           "scipy_functions", "substitute"]
