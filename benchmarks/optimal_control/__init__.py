"""Discretised optimal control from text to the optimum, symad + IPOPT beside CasADi + IPOPT (issue 33)."""
