"""Comparing finished runs of several models (``biaslens compare``, the bias card's comparison):
:mod:`~biaslens.comparison.entries` (what is compared), :mod:`~biaslens.comparison.runs` (the page),
and one module per suite with its own comparison."""
