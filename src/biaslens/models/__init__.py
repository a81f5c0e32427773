"""Model backends behind one interface. ``load_model`` picks one by name.

- ``smollm2-135m``: the embedded default (offline).
- ``fake``: deterministic scripted scores, for tests and dry runs.
- anything else: a Hugging Face model id or a local folder.

``backend="vllm"`` serves the same names through vLLM's offline engine and
``backend="openai"`` calls an OpenAI-compatible server (``base_url``) instead.
"""

from __future__ import annotations

from biaslens.models.base import Backend, ModelError, ModelInfo, TokenScores
from biaslens.models.embedded import EMBEDDED_NAME

__all__ = ["Backend", "ModelError", "ModelInfo", "TokenScores", "load_model", "EMBEDDED_NAME"]


def load_model(
    name: str = EMBEDDED_NAME,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    kind: str = "auto",
    start_token: str | None = None,
    score_first_token: bool = True,
    trust_remote_code: bool = False,
    compile: bool = False,
    backend: str = "auto",
    **backend_options,
) -> Backend:
    """Load a scoring backend by name (see the module docstring).

    ``backend_options`` go to the vLLM/OpenAI backends (base_url, api_key_env, ...).
    """
    if backend == "openai":
        from biaslens.models.openai_compat import load_openai

        return load_openai(name, start_token=start_token, score_first_token=score_first_token, **backend_options)
    if backend == "vllm":
        from biaslens.models.vllm_backend import load_vllm

        return load_vllm(name, device=device, dtype=dtype, start_token=start_token,
                         score_first_token=score_first_token, trust_remote_code=trust_remote_code, **backend_options)
    if backend not in ("auto", "hf"):
        raise ModelError(f"unknown backend {backend!r}: use auto, hf, vllm or openai")
    if name == "fake":
        from biaslens.models.fake import FakeBackend

        return FakeBackend()
    from biaslens.models.hf import load_hf

    if name == EMBEDDED_NAME:
        from biaslens.models.embedded import embedded_model_dir

        return load_hf(str(embedded_model_dir()), device=device, dtype=dtype, kind="causal",
                       start_token=start_token, score_first_token=score_first_token,
                       display_name=EMBEDDED_NAME, backend_name="embedded", compile=compile)
    return load_hf(name, device=device, dtype=dtype, kind=kind, start_token=start_token,
                   score_first_token=score_first_token, trust_remote_code=trust_remote_code, compile=compile)
