"""The model and the call cache a RunConfig asks for (used by the runner)."""

from __future__ import annotations

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


#: ModelConfig fields that only the openai backend reads
OPENAI_FIELDS = ("base_url", "api_key_env", "api", "max_concurrency", "requests_per_second",
                 "request_timeout", "max_retries")


def backend_from_config(config: RunConfig) -> Backend:
    m = config.model
    options = {f: getattr(m, f) for f in OPENAI_FIELDS} if m.backend == "openai" else {}
    if m.backend == "vllm":
        options = dict(m.engine_options)
    executor = None
    if config.executor.kind != "local":
        from biaslens.engine.executors import executor_from_config

        # connect first (a bad address fails before a model loads); the driver's copy only
        # tokenizes, orders batches and names the cache keys, so it stays on the CPU
        executor = executor_from_config(config.executor, m)
    backend = load_model(m.name, device="cpu" if executor else m.device, dtype=m.dtype, kind=m.kind,
                         start_token=m.start_token, score_first_token=m.score_first_token,
                         trust_remote_code=m.trust_remote_code, compile=m.compile and not executor,
                         backend=m.backend, **options)
    backend.executor = executor  # None: the engine runs batches in this process
    return backend
