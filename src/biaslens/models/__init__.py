"""Model backends behind one interface; :func:`load_model` picks one through the registry
(:data:`MODEL_REGISTRY`, imported on use, so ``import biaslens.models`` loads no framework).

- ``smollm2-135m``: the embedded default (offline; backend ``embedded``).
- ``fake``: deterministic scripted scores, for tests and dry runs (``fake-unbiased``: every text an
  independent draw, so likelihood methods see no bias).
- anything else: a Hugging Face model id or a local folder (backend ``hf``).

``backend="vllm"`` serves the same names through vLLM's offline engine and
``backend="openai"`` calls an OpenAI-compatible server (``base_url``) instead.
"""

from __future__ import annotations

from biaslens.models.base import (
    Backend,
    GenerationParams,
    GenerationRequest,
    ModelError,
    ModelInfo,
    TokenScores,
    row_seed,
)
from biaslens.models.embedded import EMBEDDED_NAME, model_folder
from biaslens.models.registry import MODEL_REGISTRY, LoadOptions, load_model, resolve_backend

__all__ = ["Backend", "EMBEDDED_NAME", "GenerationParams", "GenerationRequest", "LoadOptions", "MODEL_REGISTRY",
           "ModelError", "ModelInfo", "TokenScores", "load_model", "model_folder", "resolve_backend", "row_seed"]
