"""Fine-tuning examples fit the 128-token window by cutting the post, never the separator or the
comment (with the embedded model's real tokenizer; no training)."""

from __future__ import annotations

import pytest

from biaslens.methods.community.dataset import CommunityData, CommunityExample
from biaslens.methods.community.mitigation import MIN_POST_TOKENS, community_examples, fit_example

SEP = "<|sep|>"
START = "<|endoftext|>"


@pytest.fixture(scope="module")
def tokenizer(embedded_model_path):
    from biaslens.methods.community.mitigation import _tokenizer

    return _tokenizer(str(embedded_model_path), SEP)


def _n(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"])


def test_a_long_post_keeps_separator_and_each_comment(tokenizer):
    post = "Title of a long post\n" + " ".join(f"word{i} about the market today" for i in range(60))
    assert _n(tokenizer, post) > 170
    comments = ["I agree with you completely.", "This is a terrible idea, sell now.", "Source? I doubt it."]
    data = CommunityData(examples=[CommunityExample(post=post, comment=c, post_id="p1") for c in comments],
                         counts={}, removed={}, sources=["x"])
    counts: dict[str, int] = {}
    ex = community_examples(data, separator=SEP, start_token=START, tokenizer=tokenizer, max_length=128,
                            counts=counts)
    texts = [e.text for e in ex]
    # what right-truncation at 128 tokens used to give: 3 identical texts, no separator, no comment
    naive = [tokenizer.decode(tokenizer(START + post + SEP + c, add_special_tokens=False)["input_ids"][:128])
             for c in comments]
    assert len(set(naive)) == 1 and SEP not in naive[0]
    assert len(set(texts)) == 3
    for t, c in zip(texts, comments, strict=True):
        assert t.startswith(START + "Title of a long post") and t.endswith(SEP + c)
        assert _n(tokenizer, t) <= 128
        assert _n(tokenizer, t) >= 128 - 3  # the post fills the rest of the window
    assert counts == {"examples": 3, "posts_truncated": 3, "comments_truncated": 0, "posts_emptied": 0}


def test_short_examples_are_untouched_and_a_huge_comment_is_cut_at_its_end(tokenizer):
    assert fit_example(tokenizer, START, "Short post", SEP, "short reply", 128) == \
        ("Short post", "short reply", False, False)
    post = "A post " * 30
    comment = "A very long comment that goes on and on " * 40
    p, c, post_cut, comment_cut = fit_example(tokenizer, START, post, SEP, comment, 128)
    assert post_cut and comment_cut
    assert _n(tokenizer, p) <= MIN_POST_TOKENS and p and post.startswith(p) and comment.startswith(c)
    text = START + p + SEP + c
    assert SEP in text and _n(tokenizer, text) <= 128 and _n(tokenizer, c) >= 128 - 2 - MIN_POST_TOKENS - 1
    # loss on the comment only: the post (context) ends right after the separator
    data = CommunityData(examples=[CommunityExample(post=post, comment="ok", post_id="p")], counts={}, removed={},
                         sources=["x"])
    ex = community_examples(data, separator=SEP, start_token=START, loss_on="comment", tokenizer=tokenizer,
                            max_length=32)
    assert ex[0].text[: ex[0].prompt_chars].endswith(SEP) and ex[0].text[ex[0].prompt_chars:] == "ok"
