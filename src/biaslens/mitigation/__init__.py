"""Mitigation and fine-tuning procedures that produce a model folder every suite can evaluate.

All of them share :func:`biaslens.mitigation.training.train_causal_lm` (resumable, with
progress, an optional extra loss term), so each method only writes its data and its loss.
"""

from biaslens.mitigation.training import TrainExample, TrainingConfig, TrainingResult, train_causal_lm

__all__ = ["TrainExample", "TrainingConfig", "TrainingResult", "train_causal_lm"]
