"""Minimisation with exact derivatives: ``methods`` (update rules), ``problem`` (the objective
over the free variables), ``driver`` (:func:`minimize`, the stopping rules) and
``scipy_adapter`` (the objective in scipy's calling conventions).  The public
names are re-exported by :mod:`symad.optimize`."""
