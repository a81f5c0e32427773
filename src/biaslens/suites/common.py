"""Plumbing every suite shares: the run folder's default name, the call cache and the
model, all from a RunConfig."""

from __future__ import annotations

import time
from pathlib import Path

from biaslens.config import RunConfig
from biaslens.engine.cache import CallCache
from biaslens.models import Backend, load_model
from biaslens.paths import cache_dir


def open_cache(config: RunConfig) -> CallCache | None:
    """The call cache the config asks for (None with ``use_cache: false``)."""
    if not config.use_cache:
        return None
    root = Path(config.cache_dir) if config.cache_dir else cache_dir()
    return CallCache(root / "calls.sqlite")


def default_out(config: RunConfig) -> Path:
    """``runs/<suite>-<model>-<time>`` when the user gave no --out."""
    model = Path(config.model.name).name.replace("/", "_") or "model"
    return Path("runs") / f"{config.suite}-{model}-{time.strftime('%Y%m%d-%H%M%S')}"


def out_dir(config: RunConfig) -> Path:
    return Path(config.out) if config.out else default_out(config)


#: ModelConfig fields that only the openai backend reads
OPENAI_FIELDS = ("base_url", "api_key_env", "api", "max_concurrency", "requests_per_second",
                 "request_timeout", "max_retries")


def backend_from_config(config: RunConfig) -> Backend:
    m = config.model
    options = {f: getattr(m, f) for f in OPENAI_FIELDS} if m.backend == "openai" else {}
    return load_model(m.name, device=m.device, dtype=m.dtype, kind=m.kind, start_token=m.start_token,
                      score_first_token=m.score_first_token, trust_remote_code=m.trust_remote_code,
                      compile=m.compile, backend=m.backend, **options)


def model_record(backend: Backend) -> dict:
    """The model identity as run.json records it."""
    i = backend.info
    return {"backend": i.backend, "name": i.name, "kind": i.kind, "weights_hash": i.weights_hash,
            "dtype": i.dtype, "start_token": i.start_token, **i.extra}
