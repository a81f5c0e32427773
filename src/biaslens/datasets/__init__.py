"""Readers every method uses: bring-your-own generations, lm-evaluation-harness and Hugging Face
dataset formats. A method's own dataset lives in its folder (``biaslens.methods.<name>.dataset``).

The HolisticBias loader and builders this package exported before still resolve, on first use,
from ``biaslens.methods.holistic.dataset``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: the package that holds the names exported here before each method had its own folder
_MOVED_TO = "biaslens.methods.holistic.dataset"


def __getattr__(name: str) -> Any:
    """HolisticBias's loader and builders (``biaslens.datasets.load_holistic_dataset`` ...)."""
    if not name.startswith("__"):
        module = importlib.import_module(_MOVED_TO)
        if name in getattr(module, "__all__", ()):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
