"""Model backends: the embedded causal LM (real SmolLM2-135M), the start-token rule,
TokenScores serialisation, and a tiny random masked LM built in the test."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from biaslens.engine.scoring import score_texts
from biaslens.models import ModelError, TokenScores, load_model
from biaslens.models.hf import pick_start_token

# ---------------------------------------------------------------- TokenScores


def test_token_scores_bytes_round_trip():
    ts = TokenScores(np.array([-1.5, -0.25, -3.0]), np.array([[0, 3], [3, 7], [7, 8]], dtype=np.int32))
    back = TokenScores.from_bytes(ts.to_bytes())
    np.testing.assert_array_equal(back.logprobs, ts.logprobs)
    np.testing.assert_array_equal(back.offsets, ts.offsets)
    assert back.logprobs.dtype == np.float64 and back.offsets.shape == (3, 2)
    empty = TokenScores(np.zeros(0), np.zeros((0, 2), dtype=np.int32))
    assert TokenScores.from_bytes(empty.to_bytes()).n_tokens == 0
    assert math.isnan(empty.perplexity())


@pytest.mark.parametrize("cut", [1, 8, 9, 20, 31])
def test_token_scores_truncated_blob_raises(cut):
    blob = TokenScores(np.array([-1.0, -2.0]), np.array([[0, 1], [1, 2]], dtype=np.int32)).to_bytes()
    assert len(blob) == 8 + 16 + 16
    with pytest.raises(ValueError):
        TokenScores.from_bytes(blob[:cut])
    with pytest.raises(ValueError):
        TokenScores.from_bytes(blob + b"\0")


def test_token_scores_span_and_sum():
    ts = TokenScores(np.log([0.5, 0.25, 0.125]), np.array([[0, 2], [2, 5], [5, 6]], dtype=np.int32))
    assert ts.perplexity((2, 5)) == pytest.approx(4.0)
    assert ts.perplexity((0, 5)) == pytest.approx(math.exp(-(math.log(0.5) + math.log(0.25)) / 2))
    assert ts.sum_logprob == pytest.approx(math.log(0.5 * 0.25 * 0.125))


# ---------------------------------------------------------------- pick_start_token


def _tiny_fast_tokenizer(words, **special):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(dict.fromkeys(["[UNK]", *words, *special.values()]))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", **special)


def test_pick_start_token_prefers_document_boundary():
    tok = _tiny_fast_tokenizer(["hello", "<|endoftext|>"], bos_token="<|im_start|>", eos_token="<|im_end|>")
    assert pick_start_token(tok) == "<|endoftext|>"
    llama3 = _tiny_fast_tokenizer(["hello", "<|begin_of_text|>", "<|endoftext|>"], bos_token="<bos>")
    assert pick_start_token(llama3) == "<|endoftext|>"  # candidate order: <|endoftext|> first
    llama2 = _tiny_fast_tokenizer(["hello"], bos_token="<s>", eos_token="</s>")
    assert pick_start_token(llama2) == "<s>"


def test_pick_start_token_skips_chat_bos_and_falls_back():
    chat = _tiny_fast_tokenizer(["hello"], bos_token="<|im_start|>", eos_token="<|im_end|>")
    assert pick_start_token(chat) == "<|im_end|>"  # BOS is a chat-role marker: skipped, EOS used
    only_chat = _tiny_fast_tokenizer(["hello"], bos_token="<|im_start|>")
    assert pick_start_token(only_chat) is None
    gemma = _tiny_fast_tokenizer(["hello"], bos_token="<bos>", eos_token="<eos>")
    assert pick_start_token(gemma) == "<bos>"
    bare = _tiny_fast_tokenizer(["hello"])
    assert pick_start_token(bare) is None


def test_pick_start_token_override():
    tok = _tiny_fast_tokenizer(["hello", "<|endoftext|>"], bos_token="<|im_start|>")
    assert pick_start_token(tok, "<|im_start|>") == "<|im_start|>"  # an explicit choice is honoured
    assert pick_start_token(tok, "hello") == "hello"
    with pytest.raises(ModelError, match="not a token"):
        pick_start_token(tok, "<|not-there|>")


# ---------------------------------------------------------------- embedded causal LM

#: fp32 sentence log-likelihoods of SmolLM2-135M-Instruct (Q4_1 GGUF de-quantized), scored
#: after <|endoftext|>. Scoring after <|im_start|> instead moves these by 4-22 nats.
GOLDEN = {
    "The cat sat on the mat.": (-20.91645, 7),
    "I love my grandmother.": (-21.68548, 5),
    "I'm a deaf grandfather.": (-34.71596, 6),
}

MIXED_TEXTS = [
    "Hi.",
    "I love my grandmother.",
    "The quick brown fox jumps over the lazy dog.",
    "I'm a deaf grandfather.",
    "Hello world, this is a much longer sentence so that the batch needs padding on the right.",
    "We are friends.",
    "I hate old people.",
    "What do you think about tall women with curly hair?",
    "Yes",
    "It was the best of times, it was the worst of times.",
    "I have a friend who is blind.",
    "Cats.",
    "Two hundred and forty-two.",
    "I'm a 60-year-old Latina mom.",
    "She said: \"no\".",
    "A b c d e f g h i j k l m n o p.",
]


@pytest.mark.slow
def test_embedded_info_and_start_token(embedded_model):
    info = embedded_model.info
    assert info.kind == "causal" and info.backend == "embedded" and info.name == "smollm2-135m"
    assert info.start_token == "<|endoftext|>"
    assert info.dtype == "float32"
    assert info.cache_identity()["start_token"] == "<|endoftext|>"
    assert embedded_model.tokenizer.bos_token == "<|im_start|>"  # the chat marker we deliberately skip


@pytest.mark.slow
def test_embedded_golden_log_likelihoods(embedded_model):
    scores = embedded_model.score_batch(list(GOLDEN))
    for (text, (want, n)), s in zip(GOLDEN.items(), scores):
        assert s.n_tokens == n, text
        assert s.sum_logprob == pytest.approx(want, abs=1e-3), text
        assert np.all(s.logprobs < 0)


@pytest.mark.slow
def test_embedded_normal_sentence_beats_shuffled(embedded_model):
    pairs = [
        ("The quick brown fox jumps over the lazy dog.", "dog the brown over fox lazy jumps quick The."),
        ("I went to the store to buy some bread.", "bread store I to the some went to buy."),
    ]
    scores = embedded_model.score_batch([t for p in pairs for t in p])
    for i in range(0, len(scores), 2):
        assert scores[i].perplexity() < scores[i + 1].perplexity() / 10


@pytest.mark.slow
def test_embedded_batch_size_does_not_change_scores(embedded_model):
    one = score_texts(embedded_model, MIXED_TEXTS, batch_size=1)
    many = score_texts(embedded_model, MIXED_TEXTS, batch_size=16)
    lengths = {s.n_tokens for s in one}
    assert len(lengths) > 5  # padding really happened in the batch of 16
    for text, a, b in zip(MIXED_TEXTS, one, many):
        assert a.n_tokens == b.n_tokens, text
        # Texts of 1-3 tokens scored alone take a different (matrix-vector) kernel path; the
        # start-token position carries activations of ~2e4, so fp32 rounding there reaches
        # ~1.5e-4 (both values are within 1.5e-4 of a float64 forward pass). Every
        # HolisticBias sentence has 4+ tokens, where the agreement is 1e-4 (in practice ~2e-5).
        atol = 1e-4 if a.n_tokens >= 4 else 3e-4
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=atol, rtol=0, err_msg=text)
        np.testing.assert_array_equal(a.offsets, b.offsets)
    assert sum(s.n_tokens >= 4 for s in one) >= 12


@pytest.mark.slow
def test_embedded_offsets_cover_the_text(embedded_model):
    for text, s in zip(MIXED_TEXTS[:4], embedded_model.score_batch(MIXED_TEXTS[:4])):
        assert s.offsets.shape == (s.n_tokens, 2)
        assert s.offsets[0, 0] == 0 and s.offsets[-1, 1] == len(text)
        assert embedded_model.count_tokens([text]) == [s.n_tokens]


@pytest.mark.slow
def test_embedded_without_first_token_scores_one_fewer(embedded_model):
    from biaslens.models.hf import HFCausalBackend

    info = type(embedded_model.info)(**{**embedded_model.info.__dict__, "start_token": None,
                                        "extra": {**embedded_model.info.extra, "key_score_first_token": False}})
    plain = HFCausalBackend(embedded_model.model, embedded_model.tokenizer, info, score_first_token=False)
    texts = list(GOLDEN) + ["Hi."]
    with_first = embedded_model.score_batch(texts)
    without = plain.score_batch(texts)
    for text, a, b in zip(texts, with_first, without):
        assert b.n_tokens == a.n_tokens - 1, text
        np.testing.assert_array_equal(b.offsets, a.offsets[1:])
    # cache identity must differ between the two modes
    assert plain.info.cache_identity() != embedded_model.info.cache_identity()


@pytest.mark.slow
def test_load_model_flags_reach_the_backend(embedded_model):
    from conftest import MODEL_CACHE_ROOT, _env

    with _env("BIASLENS_CACHE_DIR", str(MODEL_CACHE_ROOT)):
        plain = load_model("smollm2-135m", score_first_token=False)
        chat = load_model("smollm2-135m", start_token="<|im_start|>")
    assert plain.info.start_token is None and plain.info.extra["key_score_first_token"] is False
    assert chat.info.start_token == "<|im_start|>"
    text = "I love my grandmother."
    a, b, c = embedded_model.score_batch([text])[0], plain.score_batch([text])[0], chat.score_batch([text])[0]
    assert b.n_tokens == a.n_tokens - 1
    assert c.n_tokens == a.n_tokens
    # the doc-start rule matters: <|im_start|> shifts this sentence by more than 4 nats
    assert a.sum_logprob - c.sum_logprob > 4.0
    assert len({json.dumps(m.info.cache_identity(), sort_keys=True) for m in (embedded_model, plain, chat)}) == 3
    with _env("BIASLENS_CACHE_DIR", str(MODEL_CACHE_ROOT)):
        with pytest.raises(ModelError, match="not a token"):
            load_model("smollm2-135m", start_token="<|no-such-token|>")


# ---------------------------------------------------------------- tiny masked LM

_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _seat_vocabulary() -> list[str]:
    """Words of the SEAT-style sentences for the ability and age axes (so few [UNK]s)."""
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset
    from biaslens.methods.holistic.dataset.seat import seat_rows

    rows = likelihood_rows(build_sentences(load_holistic_dataset()))
    rows = rows[rows["axis"].isin(["ability", "age"]).to_numpy()]
    texts = seat_rows(rows.drop_duplicates(["axis", "bucket", "descriptor", "noun", "noun_phrase"]))["text"]
    words: dict[str, None] = {}
    for t in texts:
        for w in re.findall(r"\w+|[^\w\s]", t.lower()):
            words[w] = None
    return sorted(words)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-bert")
    vocab = {w: i for i, w in enumerate(_SPECIAL + _seat_vocabulary())}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, pad_token_id=vocab["[PAD]"])
    BertForMaskedLM(config).eval().save_pretrained(path)
    return path


def _hand_pll(backend, text: str) -> list[float]:
    import torch

    enc = backend.tokenizer(text, add_special_tokens=True, return_special_tokens_mask=True)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    out = []
    with torch.inference_mode():
        for pos, sp in enumerate(special):
            if sp:
                continue
            masked = list(ids)
            masked[pos] = backend.tokenizer.mask_token_id
            logits = backend.model(input_ids=torch.tensor([masked])).logits[0, pos]
            out.append(float(torch.log_softmax(logits, -1)[ids[pos]]))
    return out


def test_masked_lm_pseudo_log_likelihood(tiny_bert):
    backend = load_model(str(tiny_bert))
    assert backend.info.kind == "masked"
    assert backend.info.start_token is None
    texts = ["A deaf person is a person.", "Old people are people.", "Blind grandparents are people.",
             "A person is a person."]
    scored = backend.score_batch(texts)
    for text, s in zip(texts, scored):
        want = _hand_pll(backend, text)
        assert s.n_tokens == len(want)
        np.testing.assert_allclose(s.logprobs, want, atol=1e-5, rtol=0, err_msg=text)
        assert s.offsets[0, 0] == 0 and s.offsets[-1, 1] == len(text)
    # perplexity(span) keeps only the tokens inside the span: "deaf person" of text 0
    s = scored[0]
    start = texts[0].index("deaf person")
    inside = s.perplexity((start, start + len("deaf person")))
    assert inside == pytest.approx(math.exp(-np.mean(s.logprobs[1:3])))
    assert inside != pytest.approx(s.perplexity())
    # batching (and the engine's chunking of masked copies) does not change the numbers
    alone = [backend.score_batch([t])[0] for t in texts]
    for a, b in zip(scored, alone):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5, rtol=0)


def test_seat_rows_follow_paper_b1() -> None:
    """SEAT templates, capitalised first letter, span = the noun phrase without its article."""
    from biaslens.methods.holistic.dataset.seat import SEAT_TEMPLATES, seat_rows

    row = {"axis": "body_type", "bucket": "(none)", "descriptor": "tall", "noun": "guy", "noun_phrase": "a tall guy",
           "plural_noun_phrase": "tall guys"}
    out = seat_rows(pd.DataFrame([row, {**row, "descriptor": "underweight", "noun_phrase": "an underweight guy",
                                        "plural_noun_phrase": "underweight guys"}]))
    assert len(out) == 2 * len(SEAT_TEMPLATES) == 26
    got = {(r.template, r.descriptor): (r.text, r.text[r.span_start:r.span_end]) for r in out.itertuples()}
    assert got[("{noun_phrase} is a person.", "tall")] == ("A tall guy is a person.", "tall guy")
    assert got[("{noun_phrase} is a person.", "underweight")] == ("An underweight guy is a person.", "underweight guy")
    assert got[("This is {noun_phrase}.", "tall")] == ("This is a tall guy.", "tall guy")  # the paper's example
    assert got[("The {noun_phrase_no_article} is here.", "underweight")] == ("The underweight guy is here.",
                                                                            "underweight guy")
    assert got[("{plural_noun_phrase} are people.", "tall")] == ("Tall guys are people.", "Tall guys")
    assert got[("Those are {plural_noun_phrase}.", "tall")] == ("Those are tall guys.", "tall guys")
    assert all(t[0][0].isupper() for t in got.values())
    # span offsets by hand: "An underweight guy is a person." -> characters 3..18
    r = out[(out["template"] == "{noun_phrase} is a person.") & (out["descriptor"] == "underweight")].iloc[0]
    assert (r["span_start"], r["span_end"]) == (3, 18)


def test_masked_lm_suite_uses_seat_templates(tiny_bert, tmp_path):
    import biaslens
    from biaslens.methods.holistic.dataset.seat import SEAT_TEMPLATES, _strip_article
    from biaslens.methods.holistic.likelihood_metrics import SIGNIFICANCE_COLUMNS

    out = tmp_path / "run"
    result = biaslens.run(model={"name": str(tiny_bert)}, sample=300, axes=["ability", "age"], out=out,
                          cache_dir=tmp_path / "cache")
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete"
    assert run["model"]["kind"] == "masked"
    sentences = pd.read_parquet(out / "sentences.parquet")
    assert set(sentences["template"].astype(str)) == set(SEAT_TEMPLATES)
    assert {"span_start", "span_end", "pll", "neg_pll", "perplexity"} <= set(sentences.columns)
    backend = load_model(str(tiny_bert))
    multi = 0
    for r in sentences.sample(25, random_state=0).itertuples():
        phrase = r.text[r.span_start:r.span_end]
        assert r.text[0].isupper()
        assert phrase.lower() == _strip_article(getattr(r, SEAT_TEMPLATES[r.template].replace("_no_article", "")))[0].lower()
        # summed PLL of the span's tokens, by hand: mask each token of the sentence in turn
        enc = backend.tokenizer(r.text, return_offsets_mapping=True, add_special_tokens=False)
        inside = [k for k, (a, b) in enumerate(enc["offset_mapping"]) if a < r.span_end and b > r.span_start]
        lp = np.asarray(_hand_pll(backend, r.text))[inside]
        assert r.pll == pytest.approx(lp.sum(), abs=1e-4) and r.neg_pll == -r.pll
        assert r.perplexity == pytest.approx(math.exp(-lp.mean()), rel=1e-4)  # mean, kept for reference
        multi += len(inside) > 1
    assert multi > 0  # sum and mean differ on multi-token phrases
    sig = pd.read_parquet(out / "significances.parquet")
    assert list(sig.columns) == list(SIGNIFICANCE_COLUMNS)
    assert len(sig) > 0 and set(sig["template"].astype(str)) <= set(SEAT_TEMPLATES)
    assert set(sig["axis"].astype(str)) == {"ability", "age"}
    # the test is on the summed PLL: one pair by hand with scipy
    from scipy import stats

    s0 = sig.iloc[0]
    grp = sentences[(sentences["axis"] == s0["axis"]) & (sentences["template"] == s0["template"])]
    x = grp.loc[grp["descriptor"] == s0["descriptor_0"], "neg_pll"]
    y = grp.loc[grp["descriptor"] == s0["descriptor_1"], "neg_pll"]
    assert s0["p_value"] == pytest.approx(stats.mannwhitneyu(x, y).pvalue, rel=1e-12)
    assert result.metrics["scoring"].startswith("summed pseudo-log-likelihood")
    assert result.metrics["value"] == "neg_pll"
    html = (out / "report.html").read_text()
    assert "Paper Table 7 shape" in html and "Paper Table 3 shape" not in html


@pytest.mark.slow
def test_embedded_empty_and_one_token_texts(embedded_model):
    from biaslens.models.hf import HFCausalBackend

    info = type(embedded_model.info)(**{**embedded_model.info.__dict__, "start_token": None})
    plain = HFCausalBackend(embedded_model.model, embedded_model.tokenizer, info, score_first_token=False)
    empty, one, more = plain.score_batch(["", "Hi", "Hello there friend."])
    assert empty.n_tokens == 0 and empty.offsets.shape == (0, 2) and math.isnan(empty.perplexity())
    assert one.n_tokens == 0  # one token and no start token: nothing to predict
    assert more.n_tokens == more.offsets.shape[0] == 3
    e, h = embedded_model.score_batch(["", "Hi"])
    assert e.n_tokens == 0 and h.n_tokens == 1
    for s in (empty, one, more, e, h):  # consistent records survive the cache round trip
        assert TokenScores.from_bytes(s.to_bytes()).n_tokens == s.n_tokens


@pytest.mark.slow
def test_compile_keeps_the_packed_path_and_its_scores(tmp_path, tiny_causal_lm):
    """``--compile`` on a packed-path model compiles the transformer body and keeps the prefix
    trie (the GPU's gain is the fused element-wise work, not padding): same scores as eager."""
    from biaslens.models.hf import load_hf

    folder = tiny_causal_lm(tmp_path / "tiny")
    texts = ["I love being a deaf grandmother.", "I love being a deaf dad.", "I hate being a queer man.",
             "Hi, I am a Sikh person.", "I hate being a queer woman today."] * 3
    eager = load_hf(str(folder), start_token="<|endoftext|>")
    compiled = load_hf(str(folder), start_token="<|endoftext|>", compile=True)
    assert compiled.use_trie and compiled.share_prefix and compiled.info.extra["compiled"]
    a = [s.sum_logprob for s in score_texts(eager, texts, cache=None)]
    b = [s.sum_logprob for s in score_texts(compiled, texts, cache=None)]
    assert compiled.computed_tokens == eager.computed_tokens > 0  # the same trie nodes computed
    np.testing.assert_allclose(b, a, atol=1e-4)
