"""biaslens: measure and reduce social bias in language models.

>>> import biaslens
>>> result = biaslens.run(model="fake", sample=600, out="runs/demo")   # doctest: +SKIP

Imports are lazy: ``import biaslens`` does not load torch or transformers.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "run", "rerender", "card", "compare_cards", "RunConfig", "load_model", "load_holistic_dataset",
           "build_sentences"]


def __getattr__(name: str):
    if name in ("run", "rerender"):
        from biaslens import api

        return getattr(api, name)
    if name in ("card", "compare_cards"):
        from biaslens import card as card_module

        return card_module.make_card if name == "card" else card_module.compare_cards
    if name == "RunConfig":
        from biaslens.config import RunConfig

        return RunConfig
    if name == "load_model":
        from biaslens.models import load_model

        return load_model
    if name in ("load_holistic_dataset", "build_sentences"):
        from biaslens.datasets import holistic

        return getattr(holistic, name)
    raise AttributeError(f"module 'biaslens' has no attribute {name!r}")
