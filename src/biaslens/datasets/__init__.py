"""Datasets shipped with or read by biaslens.

The HolisticBias loader and builders are re-exported here (``holistic.__all__``); the other
datasets are imported from their packages (``biaslens.datasets.redditbias`` ...).
"""

from .holistic import *  # noqa: F403
from .holistic import __all__ as __all__
