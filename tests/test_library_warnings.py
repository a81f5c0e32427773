"""biaslens's own model calls trigger no deprecation warning of transformers (issue #25: the
``past_key_values`` FutureWarning appeared three times in a smoke card)."""

from __future__ import annotations

import contextlib
import logging
import warnings

import pytest

PROMPTS = ["I love being a grandmother.", "I love being a grandfather.", "I love being a nurse."]


@pytest.fixture(params=["llama", "gpt2", pytest.param("embedded", marks=pytest.mark.slow)])
def backend(request, tmp_path_factory):
    """Tiny random Llama and GPT-2 (fast: every cache path) and the embedded model."""
    if request.param == "embedded":
        return request.getfixturevalue("embedded_model")
    from biaslens.models import load_model

    make = request.getfixturevalue("tiny_causal_lm")
    return load_model(str(make(tmp_path_factory.mktemp(request.param) / "model", request.param)))


@contextlib.contextmanager
def _deprecations_are_errors():
    """FutureWarning / DeprecationWarning raised as errors, and transformers' own deprecation
    log lines ("... are deprecated. Use `cache` instead.", logged once per process) collected."""
    from transformers.utils import logging as hf_logging

    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            if "deprecat" in record.getMessage().lower():
                records.append(record.getMessage())

    root = logging.getLogger("transformers")
    handler, level = Collect(), root.level
    hf_logging.warning_once.cache_clear()  # a line already logged in this process would stay silent
    root.addHandler(handler)
    root.setLevel(logging.WARNING)  # the CLI tests set transformers to ERROR in this process
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            warnings.simplefilter("error", DeprecationWarning)
            yield records
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_the_harness_catches_the_old_argument_name(backend):
    """Where transformers renamed ``past_key_values``, the old name is caught (so the test below
    can fail); biaslens passes the name the installed version takes."""
    import torch
    from transformers import DynamicCache

    from biaslens.models.kv_cache import cache_arg

    model = backend.model
    name = next(iter(cache_arg(model, None)))
    ids = torch.tensor([[1, 2, 3]])
    if name == "cache":
        with pytest.raises(FutureWarning, match="past_key_values"), _deprecations_are_errors():
            model(input_ids=ids, past_key_values=DynamicCache(config=model.config), use_cache=True)
    with _deprecations_are_errors() as logged, torch.inference_mode():
        model(input_ids=ids, **cache_arg(model, DynamicCache(config=model.config)), use_cache=True)
    assert logged == []


def test_scoring_and_generation_raise_no_library_deprecation(backend):
    """Every path that hands transformers a key/value cache: scoring through the prefix trie and
    through one shared prefix, our decoder (greedy and sampled), and HF generate with a prompt
    cache (sampling) and without (beam search)."""
    from biaslens.models.base import GenerationParams

    saved = {k: getattr(backend, k) for k in ("use_trie", "own_decoder")}
    try:
        with _deprecations_are_errors() as logged:
            for use_trie in (True, False):
                backend.use_trie = use_trie
                scores = backend.score_batch(PROMPTS)
                assert len(scores) == len(PROMPTS)
            sampled = GenerationParams(max_new_tokens=4, do_sample=True, top_k=20)
            for own in (True, False):
                backend.own_decoder = own
                assert len(backend.generate_batch(PROMPTS, GenerationParams(max_new_tokens=4), [0, 1, 2])) == 3
                assert len(backend.generate_batch(PROMPTS[:1] * 2, sampled, [5, 6])) == 2
            backend.own_decoder = saved["own_decoder"]
            beams = GenerationParams(max_new_tokens=4, num_beams=2)
            assert len(backend.generate_batch(PROMPTS[:2], beams, [0, 1])) == 2
        assert logged == []
    finally:
        for k, v in saved.items():
            setattr(backend, k, v)


def test_shared_prefix_cache_gives_the_plain_forward_numbers(backend):
    """The one-shared-prefix path (its cache now passed under the installed name) scores as a
    plain forward pass does."""
    import numpy as np
    import torch

    from biaslens.models.generation import common_prefix_length

    seqs = backend.scored_sequences(backend.encode(PROMPTS)["input_ids"])
    shared = common_prefix_length(seqs)
    assert shared >= 2
    with torch.inference_mode():
        cached, plain = backend._logprobs_with_shared_prefix(seqs, shared), backend._logprobs(seqs)
    for a, b in zip(cached, plain):
        np.testing.assert_allclose(a, b, atol=1e-4)
