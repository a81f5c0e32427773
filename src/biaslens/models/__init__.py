"""Model backends behind one interface. ``load_model`` picks one by name.

- ``smollm2-135m``: the embedded default (offline).
- ``fake``: deterministic scripted scores, for tests and dry runs.
- anything else: a Hugging Face model id or a local folder.
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
) -> Backend:
    """Load a scoring backend by name (see the module docstring)."""
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
