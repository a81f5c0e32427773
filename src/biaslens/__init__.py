"""biaslens: measure and reduce social bias in language models.

>>> import biaslens
>>> result = biaslens.run(model="fake", sample=600, out="runs/demo")   # doctest: +SKIP

Imports are lazy: ``import biaslens`` does not load torch or transformers.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "run", "rerender", "card", "compare_cards", "leaderboard", "compare", "compare_gate", "check_backend", "debias",
           "debias_grid", "DebiasOptions", "TrainingConfig", "finetune_community", "tune_style_equality",
           "downstream_dst", "downstream_generation", "RunConfig", "load_model", "load_holistic_dataset",
           "build_sentences"]


#: public name -> "module:attribute", imported on first use (importlib: the layers of
#: docs/architecture.md do not depend on this package root)
_LAZY = {
    "run": "biaslens.api:run",
    "rerender": "biaslens.api:rerender",
    "card": "biaslens.bias_card:make_card",
    "compare_cards": "biaslens.bias_card:compare_cards",
    "leaderboard": "biaslens.card_leaderboard:leaderboard",
    "compare": "biaslens.comparison.runs:compare_runs",
    "compare_gate": "biaslens.gate:compare_gate",
    "check_backend": "biaslens.engine.backend_check:check_backend",
    "debias": "biaslens.methods.redditbias.mitigation:debias",
    "debias_grid": "biaslens.methods.redditbias.mitigation:run_grid",
    "DebiasOptions": "biaslens.methods.redditbias.mitigation:DebiasOptions",
    "TrainingConfig": "biaslens.mitigation.training:TrainingConfig",
    "finetune_community": "biaslens.methods.community.mitigation:finetune_community",
    "tune_style_equality": "biaslens.methods.holistic.style_equality:tune_style_equality",
    "downstream_dst": "biaslens.methods.redditbias.downstream:run_dst",
    "downstream_generation": "biaslens.methods.redditbias.downstream:run_generation",
    "RunConfig": "biaslens.config:RunConfig",
    "load_model": "biaslens.models:load_model",
    "load_holistic_dataset": "biaslens.methods.holistic.dataset:load_holistic_dataset",
    "build_sentences": "biaslens.methods.holistic.dataset:build_sentences",
}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        module, attr = _LAZY[name].split(":")
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'biaslens' has no attribute {name!r}")
