"""Each RedditBias debiasing loss against a computation by hand on small tensors."""

from __future__ import annotations

import math

import pytest
import torch

from biaslens.methods.redditbias.mitigation import add_loss, bias_subspace, find_spans, hd_loss, lmd_loss


def test_lmd_is_abs_log_ratio_over_the_two_terms_averaged_over_pairs():
    # occurrence 0 belongs to pairs 0 and 1, occurrence 1 to pair 1 only
    l1 = torch.tensor([[2.0, 0.5], [1.0, 3.0]])
    l2 = torch.tensor([[1.0, 1.5], [0.0, 1.0]])
    mask = torch.tensor([[True, True], [False, True]])

    def by_hand(a, b):  # softmax over {t1, t2} only: p1/p2 = e^a / e^b
        p1 = math.exp(a) / (math.exp(a) + math.exp(b))
        return abs(math.log(p1 / (1 - p1)))

    occ0 = (by_hand(2.0, 1.0) + by_hand(0.5, 1.5)) / 2
    occ1 = by_hand(3.0, 1.0)
    assert lmd_loss(l1, l2, mask).item() == pytest.approx((occ0 + occ1) / 2, rel=1e-6)
    assert (occ0, occ1) == pytest.approx((1.0, 2.0))  # |l1 - l2| in the end


def test_lmd_is_zero_for_equal_logits_and_without_occurrences():
    x = torch.tensor([[0.3, -1.0]])
    assert lmd_loss(x, x.clone(), torch.ones(1, 2, dtype=torch.bool)).item() == 0.0
    empty = torch.zeros((0, 2), requires_grad=True)
    out = lmd_loss(empty, empty, torch.zeros((0, 2), dtype=torch.bool))
    assert out.item() == 0.0 and out.requires_grad


def test_add_sums_cosine_gaps_over_pairs_and_averages_occurrences():
    a = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    e1 = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    e2 = torch.tensor([[0.0, 1.0], [3.0, 0.0]])
    s = 1 / math.sqrt(2)
    occ0 = abs(1.0 - 0.0) + abs(0.0 - 1.0)      # cos(a0, e1_p) - cos(a0, e2_p)
    occ1 = abs(s - s) + abs(s - s)
    assert add_loss(a, e1, e2).item() == pytest.approx((occ0 + occ1) / 2, rel=1e-6)


def test_bias_subspace_takes_fewest_directions_for_half_the_squared_norm():
    e1 = torch.tensor([[4.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    e2 = torch.zeros(2, 3)
    # C = diag-ish rows (2,0,0), (0,1,0): singular values 2 and 1 -> shares 0.8, 1.0 -> k = 1
    b = bias_subspace(e1, e2)
    assert b.shape == (1, 3)
    assert b[0].abs().tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)
    b2 = bias_subspace(e1, e2, explained=0.9)
    assert b2.shape == (2, 3)


def test_hd_sums_absolute_projections():
    subspace = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    a = torch.tensor([[2.0, -3.0, 5.0], [0.0, 1.0, -1.0]])
    # occurrence 0: |2| + |-3| = 5; occurrence 1: |0| + |1| = 1
    assert hd_loss(a, subspace).item() == pytest.approx(3.0)


def test_spans_are_whole_words_with_wildcards_longest_first():
    text = "Jews are greedy; a jewel is not. beady eyes and beady"
    spans = find_spans(text, ["jews", "greed*", "beady eyes", "beady", "jew"])
    found = [(text[s:e], i) for s, e, i in spans]
    assert found == [("Jews", 0), ("greedy", 1), ("beady eyes", 2), ("beady", 3)]
