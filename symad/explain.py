"""Public API of the step-by-step tables (implemented in :mod:`symad.tools.explain`)."""

from symad.tools.explain import Explanation, explain

__all__ = ["Explanation", "explain"]
