"""Small vector helpers an optimizer's loop calls once or more an iterate."""

from __future__ import annotations

import math

import numpy as np


def norm(v: np.ndarray) -> float:
    """The 2-norm of a 1-D float array: the same bits as ``np.linalg.norm(v)`` (which computes
    ``sqrt(v.dot(v))`` for it) without that function's checks of its arguments, a few
    microseconds an iterate on problems whose evaluation takes about as long."""
    return math.sqrt(float(v.dot(v)))
