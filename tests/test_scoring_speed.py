"""Fast scoring paths of the HF causal backend: prefix-trie packing (exact: same numbers as
the plain padded forward) and the ``bf16-fast`` CPU mode (median perplexity within 1% of
float32 on HolisticBias sentences)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from biaslens.engine.scoring import score_texts
from biaslens.models import ModelError, load_model
from biaslens.models.hf import FAST_BF16, HFCausalBackend, cpu_has_bf16, resolve_dtype
from biaslens.models.trie import TriePack

HB_2K = Path(__file__).resolve().parents[2] / "shared" / "bench" / "hb_2k.txt"


def _hb_sentences(n: int) -> list[str]:
    """The first n benchmark sentences, or a seeded sample of the built-in HolisticBias table."""
    if HB_2K.exists():
        return [line for line in HB_2K.read_text(encoding="utf-8").splitlines() if line.strip()][:n]
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset

    rows = likelihood_rows(build_sentences(load_holistic_dataset())).sample(n=n, random_state=0)
    return rows["text"].astype(str).tolist()


def _plain(backend, texts: list[str]) -> list[np.ndarray]:
    """The reference: one right-padded forward per text, no prefix sharing."""
    import torch

    seqs = [[backend.start_id] + ids if backend.start_id is not None else ids
            for ids in backend.tokenizer(texts, add_special_tokens=False)["input_ids"]]
    with torch.inference_mode():
        return [backend._logprobs([s])[0] for s in seqs]


# ---------------------------------------------------------------- the trie itself

def test_trie_pack_shares_prefixes_and_masks_ancestors():
    seqs = [[0, 5, 6, 7], [0, 5, 6, 8], [0, 5, 9], [0, 4], [3], []]
    pack = TriePack(seqs, max_nodes=64)
    assert len(pack.rows) == 1
    tokens, parents, depths = pack.rows[0]
    assert len(tokens) == 7  # 0, 5, 6, 7, 8, 9, 4: every distinct prefix once
    ids, pos, mask, width = pack.tensors(pad_id=99)
    # sequence 1 ([0, 5, 6, 8]): its last node sees exactly its own path, at its depth
    row, path = pack.paths[1]
    assert [int(ids[row, n]) for n in path] == [0, 5, 6, 8]
    assert [int(pos[row, n]) for n in path] == [0, 1, 2, 3]
    assert set(np.flatnonzero(mask[row, 0, path[-1]].numpy())) == set(path)
    assert not mask[row, 0, path[-1], pack.paths[0][1][-1]]  # not its sibling [.., 7]
    # one-token and empty texts need no forward pass
    assert pack.paths[4] == (0, []) and pack.paths[5] == (0, [])
    # a row is closed before it exceeds max_nodes
    small = TriePack(seqs[:4], max_nodes=5)
    assert len(small.rows) == 2 and all(len(r[0]) <= 5 for r in small.rows)


# ---------------------------------------------------------------- exactness on real models

@pytest.mark.slow
def test_trie_scores_equal_plain_forward_on_embedded_model(embedded_model):
    assert embedded_model.use_trie
    texts = _hb_sentences(24) + ["Hi.", "I love my grandmother.", "I love my grandfather."]
    embedded_model.computed_tokens = 0
    packed = score_texts(embedded_model, texts, batch_size=64)
    computed = embedded_model.computed_tokens
    ref = _plain(embedded_model, texts)
    for text, a, b in zip(texts, packed, ref):
        assert a.n_tokens == len(b), text
        # as in test_models: 1-3 token texts alone take a matrix-vector kernel (~1.5e-4 rounding)
        np.testing.assert_allclose(a.logprobs, b, atol=1e-4 if len(b) >= 4 else 3e-4, rtol=0, err_msg=text)
    total = sum(len(b) + 1 for b in ref)
    assert computed < 0.8 * total  # shared prefixes really ran once


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_trie_scores_equal_plain_forward_on_tiny_models(arch, tiny_causal_lm, tmp_path):
    folder = tiny_causal_lm(tmp_path / arch, arch)
    backend = load_model(str(folder))
    assert backend.use_trie
    texts = ["the people in my town are kind", "the people in my town are greedy", "the weather is good",
             "jews christians muslims", "the", "I think they are smart"]
    packed = score_texts(backend, texts, batch_size=8)
    for text, a, b in zip(texts, packed, _plain(backend, texts)):
        np.testing.assert_allclose(a.logprobs, b, atol=1e-5, rtol=0, err_msg=text)


@pytest.mark.slow
def test_trie_scores_equal_plain_forward_on_tiny_qwen2(embedded_model_path, tmp_path):
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(embedded_model_path)
    tok.save_pretrained(tmp_path)
    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                 tie_word_embeddings=True)).save_pretrained(tmp_path)
    backend = load_model(str(tmp_path))
    assert backend.use_trie
    texts = _hb_sentences(12)
    for text, a, b in zip(texts, score_texts(backend, texts, batch_size=12), _plain(backend, texts)):
        np.testing.assert_allclose(a.logprobs, b, atol=1e-5, rtol=0, err_msg=text)


def test_trie_refused_for_sliding_window_models():
    from types import SimpleNamespace

    from biaslens.models.hf import _trie_supported

    class Model(SimpleNamespace):
        base_model = None

        def get_output_embeddings(self):
            return SimpleNamespace(weight=None)

    assert _trie_supported(Model(config=SimpleNamespace(model_type="llama")))
    assert not _trie_supported(Model(config=SimpleNamespace(model_type="mistral")))
    assert not _trie_supported(Model(config=SimpleNamespace(model_type="qwen2", sliding_window=4096)))
    assert not _trie_supported(Model(config=SimpleNamespace(model_type="llama", logits_scaling=8.0)))


# ---------------------------------------------------------------- bf16-fast

def test_fast_dtype_name_and_refusal(monkeypatch, embedded_model_path):
    import torch

    assert resolve_dtype(FAST_BF16) is torch.float32  # weights stay float32
    with pytest.raises(ModelError, match=FAST_BF16):
        resolve_dtype("bf17")
    monkeypatch.setattr("biaslens.models.hf.cpu_has_bf16", lambda: False)
    with pytest.raises(ModelError, match="native bfloat16"):
        load_model(str(embedded_model_path), dtype=FAST_BF16)


@pytest.mark.slow
@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no native bfloat16 (AVX512-BF16 or AMX)")
def test_fast_mode_median_perplexity_within_one_percent(embedded_model):
    from conftest import MODEL_CACHE_ROOT, _env

    with _env("BIASLENS_CACHE_DIR", str(MODEL_CACHE_ROOT)):
        fast = load_model("smollm2-135m", dtype=FAST_BF16)
    assert fast.info.dtype == FAST_BF16
    assert json.dumps(fast.info.cache_identity()) != json.dumps(embedded_model.info.cache_identity())
    texts = _hb_sentences(50)
    exact = score_texts(embedded_model, texts)
    quick = score_texts(fast, texts)
    p32 = np.array([s.perplexity() for s in exact])
    pbf = np.array([s.perplexity() for s in quick])
    err = np.abs(pbf / p32 - 1)
    assert np.median(err) <= 0.01, np.median(err)
    assert err.max() > 0  # really a different computation, not the float32 path
    # the output head and the embeddings are untouched float32 modules
    assert fast.model.get_output_embeddings().weight.dtype.is_floating_point
    assert "forward" not in vars(fast.model.get_output_embeddings())
    assert isinstance(fast, HFCausalBackend)


# ---------------------------------------------------------------- host-side bookkeeping (no model)

def _reference_trie(seqs: list[list[int]], max_nodes: int, min_length: int):
    """The trie walked token by token with a dict of children: (rows, paths) as TriePack gives them."""
    rows: list[tuple[list[int], list[int], list[int]]] = []
    paths: list[tuple[int, list[int]]] = [(0, [])] * len(seqs)
    children: dict[tuple[int, int], int] = {}
    tokens: list[int] = []
    parents: list[int] = []
    depths: list[int] = []
    for i in sorted(range(len(seqs)), key=lambda j: seqs[j]):
        seq = seqs[i]
        if len(seq) < min_length:
            continue
        node, k = -1, 0
        while k < len(seq) and (node, seq[k]) in children:
            node, k = children[(node, seq[k])], k + 1
        if tokens and len(tokens) + len(seq) - k > max_nodes:
            rows.append((tokens, parents, depths))
            children, tokens, parents, depths = {}, [], [], []
        path, node = [], -1
        for d, t in enumerate(seq):
            if (node, t) not in children:
                children[(node, t)] = len(tokens)
                tokens.append(t)
                parents.append(node)
                depths.append(d)
            node = children[(node, t)]
            path.append(node)
        paths[i] = (len(rows), path)
    if tokens:
        rows.append((tokens, parents, depths))
    return rows, paths


def test_vectorised_trie_equals_a_token_by_token_walk():
    rng = np.random.default_rng(0)
    for _ in range(400):
        vocab = int(rng.choice([2, 3, 50]))
        seqs = [rng.integers(0, vocab, int(rng.integers(0, 9))).tolist() for _ in range(int(rng.integers(0, 30)))]
        seqs += [list(seqs[int(j)]) for j in rng.integers(0, len(seqs), 3)] if seqs else []  # repeated sequences
        max_nodes, min_length = int(rng.choice([1, 4, 8, 128])), int(rng.choice([1, 2]))
        pack = TriePack(seqs, max_nodes, min_length)
        rows, paths = _reference_trie(seqs, max_nodes, min_length)
        assert pack.rows == rows, seqs
        assert [(r, list(p)) for r, p in pack.paths] == [(r, list(p)) for r, p in paths], seqs
        if rows:  # the mask: each node sees itself and exactly its ancestors
            _, _, mask, width = pack.tensors(pad_id=0)
            for r, (_, parents, _) in enumerate(rows):
                for j, p in enumerate(parents):
                    seen, a = {j}, p
                    while a >= 0:
                        seen.add(a)
                        a = parents[a]
                    assert set(np.flatnonzero(mask[r, 0, j].numpy())) == seen


def test_token_rows_take_prefix_and_padding():
    from biaslens.models.tokenized import TokenRows

    rows = TokenRows.from_lists([[5, 6], [], [7, 8, 9]], [[(0, 1), (1, 3)], [], [(0, 2), (2, 3), (3, 4)]])
    assert len(rows) == 3 and rows.lengths.tolist() == [2, 0, 3]
    taken = rows.take([2, 0, 1])
    assert taken.to_lists() == [[7, 8, 9], [5, 6], []]
    assert taken.offsets.tolist() == [[0, 2], [2, 3], [3, 4], [0, 1], [1, 3]]
    started = rows.with_prefix(1)
    assert started.to_lists() == [[1, 5, 6], [1], [1, 7, 8, 9]]
    assert started.offsets[started.starts[:-1]].tolist() == [[0, 0]] * 3
    assert rows.padded(-1).tolist() == [[5, 6, -1], [-1, -1, -1], [7, 8, 9]]
    assert rows.with_prefix(None) is rows


def test_batch_order_by_token_arrays_equals_python_sorts():
    from biaslens.models.tokenized import TokenRows, lexicographic_order

    rng = np.random.default_rng(1)
    ids = [rng.integers(0, 4, int(rng.integers(0, 6))).tolist() for _ in range(300)]
    texts = [f"t{rng.integers(0, 1000)}-{i}" for i in range(300)]  # equal ids, different texts: ties by text
    padded = TokenRows.from_lists(ids).padded(-1)
    assert lexicographic_order(padded, texts).tolist() == sorted(range(300), key=lambda i: (ids[i], texts[i]))
    k = 3  # the order without trie packing: first tokens, then length
    lengths = np.array([len(x) for x in ids])
    got = lexicographic_order(padded, texts, keys_before=[padded[:, 0], padded[:, 1], padded[:, 2], lengths])
    assert got.tolist() == sorted(range(300), key=lambda i: (ids[i][:k], len(ids[i]), ids[i], texts[i]))


def test_tokenize_once_equals_the_tokenizer_call(embedded_model_path):
    import os

    from transformers import AutoTokenizer

    from biaslens.models.tokenized import TokenizerBackend

    class Tok(TokenizerBackend):
        def score_batch(self, texts):
            raise NotImplementedError

    tok = AutoTokenizer.from_pretrained(embedded_model_path)
    info = type("Info", (), {"start_token": None})()
    backend = Tok(tok, info, score_first_token=False)  # type: ignore[arg-type]
    texts = _hb_sentences(300) + ["", " ", "Ce café coûte 3,50 € — c'est très cher!", "a<|endoftext|>b",
                                  "  two  spaces\nand a line", "💡 emoji"]
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    rows = backend.tokenize(texts)
    assert os.environ.get("TOKENIZERS_PARALLELISM") == before  # the tokenizer's threads: for the call only
    want = tok(texts, add_special_tokens=False, return_offsets_mapping=True)
    assert rows.to_lists() == want["input_ids"]
    got_offsets = np.split(rows.offsets, rows.starts[1:-1])
    assert [o.tolist() for o in got_offsets] == [[list(p) for p in m] for m in want["offset_mapping"]]
    assert backend.count_tokens(texts) == [len(x) for x in want["input_ids"]]


# ---------------------------------------------------------------- the engine's batches prepared ahead

@pytest.mark.slow
def test_batches_prepared_ahead_give_the_same_scores(embedded_model, monkeypatch):
    import threading

    texts = _hb_sentences(40) + ["Hi.", ""]
    plain = score_texts(embedded_model, texts, batch_size=8)
    threads: set[str] = set()
    real = HFCausalBackend.prepare_rows

    def prepare(self, rows):
        threads.add(threading.current_thread().name)
        return real(self, rows)

    tokenized: list[int] = []
    real_tokenize = HFCausalBackend.tokenize

    def tokenize(self, chunk):
        tokenized.append(len(chunk))
        return real_tokenize(self, chunk)

    monkeypatch.setattr(HFCausalBackend, "prepare_rows", prepare)
    monkeypatch.setattr(HFCausalBackend, "tokenize", tokenize)
    monkeypatch.setattr(HFCausalBackend, "PREFETCH_BATCHES_CPU", 2)
    ahead = score_texts(embedded_model, texts, batch_size=8)
    assert any(name.startswith("biaslens-prepare") for name in threads)  # prepared on the background thread
    # tokenized a chunk at a time (1, 2, then the rest of the 6 batches' texts), not all before the first batch
    assert tokenized == [8, 16, 18], tokenized
    for a, b in zip(plain, ahead):
        # other batches (chunks of string-sorted texts): the same tokens, numbers to the trie's 1e-4
        np.testing.assert_array_equal(a.offsets, b.offsets)
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4, rtol=0)
    # and the one-tokenization engine path equals scoring each batch's texts directly
    direct = embedded_model.score_batch(texts)
    for a, b in zip(plain, direct):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4, rtol=0)


@pytest.mark.slow
def test_generation_rows_prepared_ahead_give_the_same_texts(embedded_model, monkeypatch):
    from biaslens.engine.generation import generate_texts
    from biaslens.models.base import GenerationParams

    prompts = [f"I'm {t[2:]}" for t in _hb_sentences(10)]
    params = GenerationParams(max_new_tokens=4, min_new_tokens=4, no_repeat_ngram_size=3)
    plain = generate_texts(embedded_model, prompts, params, batch_size=4)
    monkeypatch.setattr(HFCausalBackend, "PREFETCH_BATCHES_CPU", 1)
    assert generate_texts(embedded_model, prompts, params, batch_size=4) == plain
