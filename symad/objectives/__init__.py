"""Objectives over data: the loss of one row summed over the rows (``over_data``), in one fused
loop shared among the cores (``row_sums``), chunk by chunk on Dask's workers (``dask_sums``),
with the data read as float64 columns (``columns``)."""

from symad.objectives.over_data import Objective, objective

__all__ = ["Objective", "objective"]
