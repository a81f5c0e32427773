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


@pytest.fixture(scope="session")
def embedded_model_path() -> Path:
    """Folder of the converted embedded model (shared conversion; skips when not installed)."""
    return shared_embedded_model_dir()


_DEFAULT_CORPUS = [
    "the people in my town are kind and the weather is good",
    "jews christians muslims women men black white gay straight people are here",
    "I think they are greedy lazy smart kind violent peaceful and very nice",
    "what do you think about my friends and their families today",
]


def make_tiny_causal_lm(folder: Path, arch: str = "llama", *, corpus: list[str] | None = None,
                        tokenizer_from: Path | None = None) -> Path:
    """A random 2-layer, hidden-32 GPT-2 or Llama saved to ``folder``: fast to train in tests.

    The tokenizer is copied from ``tokenizer_from`` (e.g. the embedded model's) or is a
    400-token byte-level BPE trained on ``corpus``.
    """
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    if tokenizer_from is not None:
        tok = AutoTokenizer.from_pretrained(tokenizer_from)
    else:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        from transformers import PreTrainedTokenizerFast

        bpe = Tokenizer(models.BPE())
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        bpe.train_from_iterator(corpus or _DEFAULT_CORPUS,
                                trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                                    initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    if arch == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=256))
    elif arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=256, pad_token_id=tok.pad_token_id,
                                             bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                             tie_word_embeddings=True))
    else:
        raise ValueError(arch)
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_causal_lm():
    """The :func:`make_tiny_causal_lm` factory, for tests that fine-tune."""
    return make_tiny_causal_lm


@pytest.fixture(scope="session")
def style_encoder():
    """The sentence encoder, unzipped once into the shared (real) cache instead of per session,
    and loaded once per process: ``default_encoder`` memoises it, so suites run in tests reuse it."""
    from biaslens.scorers.base import ScorerError
    from biaslens.scorers.styles import default_encoder

    with _env("BIASLENS_CACHE_DIR", str(MODEL_CACHE_ROOT)):
        try:
            return default_encoder()
        except ScorerError as e:
            pytest.skip(f"sentence encoder unavailable: {e}")


@pytest.fixture(scope="session")
def fake_smoke_card(tmp_path_factory, style_encoder):
    """(folder, card) of a smoke bias card of the fake model, every method, made once per session
    (tests/test_card.py, tests/test_compare_gate.py). Read it, or copy it before changing it."""
    from rich.console import Console

    from biaslens.bias_card import make_card

    out = tmp_path_factory.mktemp("card") / "fake"
    cache = tmp_path_factory.mktemp("card-cache")
    card = make_card({"model": "fake", "cache_dir": str(cache)}, out=out, budget="smoke",
                     console=Console(stderr=True, quiet=True))
    return out, card


# -- lines a test hands to pytest's terminal summary (not printed between the progress dots) --
_SUMMARY_LINES = pytest.StashKey[dict]()


@pytest.fixture
def terminal_summary_lines(request) -> dict[str, list[str]]:
    """A dict title -> lines that pytest prints in its terminal summary at the end."""
    return request.config.stash.setdefault(_SUMMARY_LINES, {})


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for title, lines in config.stash.get(_SUMMARY_LINES, {}).items():
        terminalreporter.section(title)
        for line in lines:
            terminalreporter.line(line)
