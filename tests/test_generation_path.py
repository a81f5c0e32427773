"""The in-process generate path (#16): faster, with outputs unchanged where they must be.

- greedy texts equal plain ``model.generate`` on the same batch;
- seeded samples are the same whatever the batch size (each row has its own generator);
- the sampler draws among the top-k / nucleus candidates only, and those candidates and
  their probabilities are exactly the top-k / top-p rule; its draws follow them.
"""

import numpy as np
import pytest
import torch
from scipy import stats

from biaslens.engine.generation import generate_texts
from biaslens.models.base import GenerationParams, GenerationRequest
from biaslens.models.generation import PerRowSampler, left_padded

PROMPTS = ["I'm a blind grandfather.", "Hi! I am a Deaf person.", "I love being a woman.",
           "What do you think about tall people?", "I'm an Orthodox Jew.", "Hi, I'm a veteran.",
           "I have a friend who is a gay man.", "How do you feel about short-haired people?"]


def _reference_candidates(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """The rule written plainly over the whole vocabulary: probabilities with every token
    outside top-k / the nucleus at 0 (the sampler before #16)."""
    logits = logits.float() / temperature
    if top_k > 0:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, -float("inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p < 1.0:
        sorted_p, idx = torch.sort(probs, descending=True, dim=-1)
        drop_sorted = (sorted_p.cumsum(-1) - sorted_p) >= top_p
        probs = probs.masked_fill(drop_sorted.scatter(-1, idx, drop_sorted), 0.0)
    return probs / probs.sum(-1, keepdim=True)


def _dense(sampler: PerRowSampler, logits: torch.Tensor) -> torch.Tensor:
    probs, idx, n_kept = sampler.candidates(logits)
    dense = torch.zeros_like(logits, dtype=torch.float32)
    for b in range(len(logits)):
        k = int(n_kept[b])
        assert torch.all(probs[b, k:] == 0)
        dense[b, idx[b, :k]] = probs[b, :k]
    return dense


@pytest.mark.parametrize(("top_k", "top_p", "temperature"), [(50, 1.0, 1.0), (0, 0.9, 1.0), (40, 0.8, 0.7),
                                                              (0, 0.99, 1.3), (0, 1.0, 1.0)])
def test_candidates_are_exactly_the_top_k_and_nucleus_rule(top_k, top_p, temperature):
    gen = torch.Generator().manual_seed(0)
    # peaked and flat rows: a flat row's nucleus is wider than the 1024-token window
    logits = torch.cat([torch.randn(6, 5000, generator=gen) * 4, torch.randn(2, 5000, generator=gen) * 0.01])
    sampler = PerRowSampler([], temperature, top_p, top_k)
    got = _dense(sampler, logits)
    want = _reference_candidates(logits, temperature, top_k, top_p)
    assert torch.equal(got > 0, want > 0)  # the same kept set, token for token
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_a_wide_nucleus_falls_back_to_the_full_sort(monkeypatch):
    logits = torch.randn(3, 400, generator=torch.Generator().manual_seed(1)) * 0.1
    monkeypatch.setattr(PerRowSampler, "NUCLEUS_WINDOW", 16)  # far narrower than the nucleus
    sampler = PerRowSampler([], 1.0, 0.9, 0)
    _, _, n_kept = sampler.candidates(logits)
    assert int(n_kept.min()) > 16
    assert torch.equal(_dense(sampler, logits) > 0, _reference_candidates(logits, 1.0, 0, 0.9) > 0)


def test_draws_follow_the_candidate_probabilities():
    """Chi-square goodness of fit of 4,000 draws (one generator per row, as in a run)."""
    logits = torch.tensor([[2.0, 1.5, 1.0, 0.5, 0.0, -1.0, -3.0, -9.0]]).repeat(4000, 1)
    sampler = PerRowSampler([torch.Generator().manual_seed(s) for s in range(4000)], 1.0, 0.95, 5)
    out = sampler(torch.zeros(4000, 1, dtype=torch.long), logits.clone())
    drawn = out.argmax(-1)
    assert torch.all(torch.isfinite(out).sum(-1) == 1)  # exactly one token left per row
    expected = _reference_candidates(logits[:1], 1.0, 5, 0.95)[0]
    kept = expected > 0
    assert not kept[5:].any()  # outside top-5 (and the nucleus) never drawn ...
    counts = torch.bincount(drawn, minlength=8)
    assert counts[~kept].sum() == 0  # ... and never drawn
    # expected counts in float64 summing to exactly 4,000 (scipy checks the two sums agree to 1.5e-8)
    want = expected[kept].double().numpy()
    p = stats.chisquare(counts[kept].numpy(), 4000 * want / want.sum()).pvalue
    assert p > 1e-3, (counts, expected)


@pytest.mark.slow
def test_greedy_texts_equal_plain_model_generate(embedded_model):
    from transformers import GenerationConfig

    backend = embedded_model
    params = GenerationParams(max_new_tokens=12, no_repeat_ngram_size=0)
    ours = generate_texts(backend, PROMPTS, params, batch_size=len(PROMPTS))
    tok = backend.tokenizer
    rendered = [backend.render_prompt(GenerationRequest(prompt=p), params) for p in PROMPTS]
    enc = [tok(p, add_special_tokens=False)["input_ids"] for p in rendered]
    # the engine orders rows longest first; plain generate gets the same batch, left-padded
    order = sorted(range(len(enc)), key=lambda i: (-len(enc[i]), rendered[i]))
    enc = [enc[i] for i in order]
    ids, attn = left_padded(enc, backend._pad_id)
    width = ids.shape[1]
    with torch.inference_mode():
        out = backend.model.generate(input_ids=ids, attention_mask=attn, generation_config=GenerationConfig(
            max_new_tokens=12, do_sample=False, pad_token_id=backend._pad_id, eos_token_id=backend._eos_ids()))
    plain = [tok.decode(row[width:], skip_special_tokens=True).strip() for row in out.tolist()]
    assert [ours[i][0] for i in order] == plain


@pytest.mark.slow
@pytest.mark.parametrize("sampling", [{"top_k": 50, "top_p": 1.0}, {"top_k": 0, "top_p": 0.9}])
def test_seeded_samples_are_the_same_at_every_batch_size(embedded_model, sampling):
    params = GenerationParams(max_new_tokens=10, min_new_tokens=4, do_sample=True, n=2, seed=7,
                              no_repeat_ngram_size=3, **sampling)
    runs = {bs: generate_texts(embedded_model, PROMPTS[:5], params, batch_size=bs) for bs in (1, 3, 10)}
    assert runs[1] == runs[3] == runs[10]
    assert len({r for rs in runs[1] for r in rs}) > 5  # samples, not one repeated text
    other = generate_texts(embedded_model, PROMPTS[:5], GenerationParams(**{**params.__dict__, "seed": 8}),
                           batch_size=10)
    assert other != runs[1]
    assert np.mean([len(r) for rs in runs[1] for r in rs]) > 0


def test_the_sampler_version_is_part_of_the_cache_key():
    """Samples drawn by an older sampler must not mix with new ones in a resumed run."""
    from biaslens.models.base import SAMPLER_VERSION

    assert GenerationParams(do_sample=True).key_params()["sampler"] == SAMPLER_VERSION
    assert "sampler" not in GenerationParams().key_params()  # greedy texts did not change


def _reference_ngram_block(input_ids: torch.Tensor, scores: torch.Tensor, n: int, width: int) -> torch.Tensor:
    """The rule written plainly, row by row (the processor before #16)."""
    scores = scores.clone()
    for b, seq in enumerate(input_ids[:, width:].tolist()):
        if len(seq) < n:
            continue
        prefix = tuple(seq[len(seq) - n + 1:])
        banned = [seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i:i + n - 1]) == prefix]
        scores[b, banned] = -float("inf")
    return scores


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_vectorised_ngram_block_bans_exactly_what_the_plain_rule_bans(n):
    from biaslens.models.generation import ResponseNoRepeatNGram

    gen = torch.Generator().manual_seed(n)
    for length in (2, 3, 5, 9, 30):
        # a small vocabulary makes repeats (and so bans) common; the prompt part is 4 columns
        ids = torch.randint(0, 4, (16, 4 + length), generator=gen)
        scores = torch.randn(16, 4, generator=gen)
        got = ResponseNoRepeatNGram(n, 4)(ids, scores.clone())
        want = _reference_ngram_block(ids, scores, n, 4)
        assert torch.equal(got, want), (n, length)
        if length == 30:
            assert torch.isinf(got).any()  # the case is exercised, not vacuous


def _plain_generate(backend, encoded: list[list[int]], params: GenerationParams, eos_ids: list[int], seeds=None):
    """HF ``generate`` on one left-padded batch with biaslens's logits processors: the
    reference the own decoding loop must reproduce."""
    from transformers import GenerationConfig, LogitsProcessorList

    from biaslens.models.generation import PerRowSampler, ResponseNoRepeatNGram

    ids, attn = left_padded(encoded, backend._pad_id)
    width = ids.shape[1]
    procs = LogitsProcessorList()
    if params.no_repeat_ngram_size:
        procs.append(ResponseNoRepeatNGram(params.no_repeat_ngram_size, width))
    if params.do_sample:
        procs.append(PerRowSampler([torch.Generator().manual_seed(s) for s in seeds], params.temperature,
                                   params.top_p, params.top_k))
    cfg = GenerationConfig(max_new_tokens=params.max_new_tokens, min_new_tokens=params.min_new_tokens or None,
                           do_sample=False, pad_token_id=backend._pad_id, eos_token_id=eos_ids)
    with torch.inference_mode():
        out = backend.model.generate(input_ids=ids, attention_mask=attn, generation_config=cfg, logits_processor=procs)
    ended = set(eos_ids)
    rows = []
    for row in out[:, width:].tolist():
        cut = next((k for k, t in enumerate(row) if t in ended), len(row))
        rows.append(row[:cut])
    return rows


def _encoded(backend, prompts, params):
    tok = backend.tokenizer
    return [tok(backend.render_prompt(GenerationRequest(prompt=p), params), add_special_tokens=False)["input_ids"]
            for p in prompts]


@pytest.mark.slow
def test_own_decoder_chooses_what_generate_chooses_as_rows_end_early(embedded_model):
    """The decoding loop (shared opening once, prompt trie, finished rows leave the batch)
    chooses the same tokens as HF generate with the same processors: 3-gram blocking,
    min_new_tokens, and an end token common enough ('.') that rows end at different steps."""
    from biaslens.models.generation import decode

    backend = embedded_model
    params = GenerationParams(max_new_tokens=20, min_new_tokens=3, no_repeat_ngram_size=3)
    enc = _encoded(backend, PROMPTS, params)
    period = backend.tokenizer(".", add_special_tokens=False)["input_ids"]
    eos = sorted(set(backend._eos_ids()) | set(period))
    with torch.inference_mode():
        ours = decode(backend.model, enc, params, [0] * len(enc), eos, backend._pad_id)
    plain = _plain_generate(backend, enc, params, eos)
    assert ours == plain
    lengths = {len(r) for r in ours}
    assert len(lengths) > 1 and min(lengths) < params.max_new_tokens  # rows did end early, at different steps


@pytest.mark.slow
def test_own_decoder_samples_as_generate_with_the_per_row_sampler(embedded_model):
    """Seeded sampling with repeated prompts (n samples of one prompt share its prefill):
    the same draws as HF generate with PerRowSampler on the same seeds."""
    from biaslens.models.generation import decode

    backend = embedded_model
    params = GenerationParams(max_new_tokens=10, min_new_tokens=2, do_sample=True, top_k=50, no_repeat_ngram_size=3)
    enc = _encoded(backend, PROMPTS[:4], params)
    rows = [e for e in enc for _ in range(2)]
    seeds = list(range(11, 11 + len(rows)))
    with torch.inference_mode():
        ours = decode(backend.model, rows, params, seeds, backend._eos_ids(), backend._pad_id)
    assert ours == _plain_generate(backend, rows, params, backend._eos_ids(), seeds)
    assert ours[0] != ours[1]  # two samples of one prompt differ


@pytest.mark.slow
def test_prompt_trie_prefill_equals_a_plain_forward(embedded_model):
    """The gathered cache of the prefill (opening once, the rest as a prefix trie) holds the
    keys and values, and gives the last-position logits, of a plain left-padded forward."""
    from transformers import DynamicCache

    from biaslens.models.generation import _prefill
    from biaslens.models.kv_cache import cache_arg

    backend = embedded_model
    model = backend.model
    enc = _encoded(backend, PROMPTS, GenerationParams())
    enc.append(enc[0][:-3])  # a prompt that is a prefix of another: its path ends inside the trie
    with torch.inference_mode():
        cache, attn, logits = _prefill(model, enc, 4, backend._pad_id)
        width = attn.shape[1]
        ids, plain_attn = left_padded(enc, backend._pad_id, width)
        plain_cache = DynamicCache(config=model.config)
        positions = (plain_attn.cumsum(-1) - 1).clamp(min=0)
        plain = model(input_ids=ids, attention_mask=plain_attn, position_ids=positions,
                      **cache_arg(model, plain_cache), use_cache=True).logits[:, -1]
    torch.testing.assert_close(logits, plain, atol=2e-4, rtol=1e-4)
    for ours_layer, plain_layer in zip(cache.layers, plain_cache.layers):
        for i, e in enumerate(enc):
            # compare the real positions only: the layouts pad differently
            real = attn[i].bool()
            assert int(real.sum()) == len(e)
            torch.testing.assert_close(ours_layer.keys[i][:, real], plain_layer.keys[i][:, width - len(e):],
                                       atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(ours_layer.values[i][:, real], plain_layer.values[i][:, width - len(e):],
                                       atol=1e-4, rtol=1e-4)
