"""The result of a minimisation: scipy's ``OptimizeResult`` fields, as a dict with attribute access."""

from __future__ import annotations

from typing import Any


class OptimizeResult(dict):
    """scipy's ``OptimizeResult`` fields (``x fun jac nit nfev njev nhev success status message``)
    as a dict with attribute access, plus ``variables``, ``point`` (by name, fixed ones
    included), ``grad_norm``, ``method``, ``hessian`` (``"matrix"``, ``"products"`` for
    Hessian-vector products, ``"sparse"`` for trust-constr's and IPOPT's sparse matrices, or
    None), ``time`` (seconds, iterating), ``setup_time`` (seconds, parsing and compiling) and,
    with ``keep_path=True``, ``path`` and ``path_fun`` (every iterate, the start included).  After a mini-batch run
    (``batch_size``), ``fun``, ``jac`` and ``grad_norm`` are over every row at ``x`` (one
    pass at the end), and ``batch_fun``, ``batch_jac`` and ``batch_grad_norm`` the last
    mini-batch's, which the stopping rules judged."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    __setattr__ = dict.__setitem__  # type: ignore[assignment]

    def __repr__(self) -> str:
        width = max(map(len, self), default=0)
        return "\n".join(f"{k.rjust(width)}: {v!r}" for k, v in self.items() if not k.startswith("path"))
