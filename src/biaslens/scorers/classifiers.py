"""Offensiveness/toxicity classifiers: the offline lexical screen ``alt-profanity-check`` (the
HolisticBias paper's classifier stand-in; the trained head of :mod:`biaslens.scorers.toxicity_head`
is the offline default) and any Hugging Face text-classification model."""

from __future__ import annotations

import numpy as np

from biaslens.scorers.base import ScorerError


class ProfanityCheck:
    """Probability that a text is offensive (alt-profanity-check's linear SVM, shipped in the wheel)."""

    name = "alt-profanity-check"
    labels = ("offensive",)

    def __init__(self):
        try:
            from profanity_check import predict_prob
        except ImportError as e:
            raise ScorerError("alt-profanity-check is not installed: pip install alt-profanity-check") from e
        self._predict = predict_prob

    def probability(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        return np.asarray(self._predict(list(texts)), dtype=np.float64)


class HFTextClassifier:
    """Any Hugging Face sequence-classification model: a probability per label.

    ``positive_label`` picks the column :meth:`probability` returns (e.g. "toxic",
    "offensive", "LABEL_1"); :meth:`probabilities` returns all of them.
    """

    def __init__(self, name_or_path: str, *, device: str = "cpu", batch_size: int = 32,
                 positive_label: str | None = None, multi_label: bool | None = None,
                 trust_remote_code: bool = False):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=trust_remote_code)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                name_or_path, dtype=torch.float32, trust_remote_code=trust_remote_code).eval().to(device)
        except OSError as e:
            raise ScorerError(f"cannot load classifier {name_or_path!r} (offline? not a local folder?): {str(e)[:200]}") from e
        self.name = str(name_or_path)
        self.device = device
        self.batch_size = batch_size
        id2label = self.model.config.id2label
        self.labels = tuple(str(id2label[i]) for i in range(len(id2label)))
        pt = getattr(self.model.config, "problem_type", None)
        self.multi_label = multi_label if multi_label is not None else pt == "multi_label_classification"
        if positive_label is not None and positive_label not in self.labels:
            raise ScorerError(f"{name_or_path}: label {positive_label!r} not among {list(self.labels)}")
        self.positive_label = positive_label or self.labels[-1]

    def probabilities(self, texts: list[str]) -> np.ndarray:
        import torch

        texts = list(texts)
        out = np.zeros((len(texts), len(self.labels)), dtype=np.float64)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                enc = self.tokenizer([texts[i] for i in idx], padding=True, truncation=True,
                                     return_tensors="pt").to(self.device)
                logits = self.model(**enc).logits.float()
                p = torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, -1)
                out[idx] = p.cpu().numpy()
        return out

    def probability(self, texts: list[str]) -> np.ndarray:
        return self.probabilities(texts)[:, self.labels.index(self.positive_label)]
