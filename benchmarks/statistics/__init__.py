"""The statistics suite: the negative binomial log-likelihood's value and gradient over 10^6 rows,
symad beside JAX's ``jit(value_and_grad)`` with ``jax.scipy.special.gammaln``."""
