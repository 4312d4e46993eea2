"""Minimisation with exact derivatives: ``methods`` (update rules), ``problem`` (the objective
over the free variables), ``driver`` (:func:`minimize`, the stopping rules), ``constraints`` and
``constrained`` (SciPy's constrained methods), ``ipopt`` (IPOPT through cyipopt), ``nlp``,
``sparse`` and ``loops`` (a constrained problem in the sparse form IPOPT takes, written out or
with loops and ``each`` families), ``conditions`` (what a bound or constraint may be) and
``scipy_adapter`` (the objective in scipy's calling conventions).

>>> from symad.optimize import minimize
>>> minimize("(x-3)^2", {"x": 0}).x.round(12).tolist()
[3.0]
"""

from symad.optimize.driver import STATUS, OptimizeResult, check_settings, minimize
from symad.optimize.methods import METHODS
from symad.optimize.problem import Problem, substitute
from symad.optimize.scipy_adapter import ScipyFunctions, scipy_functions

__all__ = ["METHODS", "STATUS", "OptimizeResult", "Problem", "ScipyFunctions", "check_settings", "minimize",
           "scipy_functions", "substitute"]
