"""Shared fixtures.

- Every test session gets its own ``BIASLENS_CACHE_DIR`` (a temp dir), so call caches and
  fingerprint memos never leak between runs or into the user's cache.
- The embedded model, however, is converted once into the *real* user cache
  (``$BIASLENS_CACHE_DIR`` as it was when pytest started, else ~/.cache/biaslens), so
  repeated test runs do not pay the ~25 s GGUF conversion again.
- Torch uses one thread (``BIASLENS_THREADS=1``) unless the caller set it: on a small shared
  machine two OpenMP threads competing with other processes were ~8x slower than one.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from biaslens.paths import cache_dir as _default_cache_dir

#: where the converted embedded model lives, decided once before any test changes the env
#: (kept in the environment so a second import of this file, e.g. as ``tests.conftest``
#: after the session fixture has set BIASLENS_CACHE_DIR, still finds the shared model)
os.environ.setdefault("BIASLENS_TEST_MODEL_CACHE", str(_default_cache_dir()))
MODEL_CACHE_ROOT: Path = Path(os.environ["BIASLENS_TEST_MODEL_CACHE"])

os.environ.setdefault("BIASLENS_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Never reach for the Hub from tests: a missing local model must fail fast, not hang.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@contextlib.contextmanager
def _env(name: str, value: str | None):
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def shared_embedded_model_dir() -> Path:
    """The converted embedded model in the shared (real) cache; skips if not installed."""
    from biaslens.models.base import ModelError
    from biaslens.models.embedded import embedded_model_dir

    with _env("BIASLENS_CACHE_DIR", str(MODEL_CACHE_ROOT)):
        try:
            return embedded_model_dir()
        except ModelError as e:
            pytest.skip(f"embedded model unavailable: {e}")


def model_env(**extra: str) -> dict[str, str]:
    """Environment for a subprocess that loads the embedded model from the shared cache."""
    env = dict(os.environ)
    env["BIASLENS_CACHE_DIR"] = str(MODEL_CACHE_ROOT)
    env.update(extra)
    return env


@pytest.fixture(scope="session", autouse=True)
def _session_cache_dir(tmp_path_factory):
    """A per-session BIASLENS_CACHE_DIR for call caches and fingerprint memos."""
    path = tmp_path_factory.mktemp("biaslens-cache")
    with _env("BIASLENS_CACHE_DIR", str(path)):
        yield path


@pytest.fixture(scope="session")
def embedded_model():
    """SmolLM2-135M (fp32, cpu), loaded once per session from the shared conversion."""
    shared_embedded_model_dir()
    from biaslens.models import load_model

    # load with the shared cache active so the 540 MB weights-fingerprint memo is reused too
    with _env("BIASLENS_CACHE_DIR", str(MODEL_CACHE_ROOT)):
        backend = load_model("smollm2-135m")
    yield backend


@pytest.fixture
def call_cache_dir(tmp_path) -> Path:
    """A fresh, empty call-cache folder."""
    path = tmp_path / "call-cache"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """Reference material (official dataset files etc.): $BIASLENS_REFERENCE_DIR or ../shared/reference."""
    env = os.environ.get("BIASLENS_REFERENCE_DIR")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "reference"
    if not path.is_dir():
        pytest.skip(f"reference files not found at {path} (set BIASLENS_REFERENCE_DIR)")
    return path
