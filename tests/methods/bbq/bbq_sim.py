"""Seeded simulation of BBQ answers with template effects, for the interval tests (tests/methods/bbq/test_bbq.py).

Each template has its own tendency to be answered UNKNOWN and to be answered with the biased
option (logit-normal with heavy-tailed, t(3), template effects), and writes ``per_template`` items
in each context condition. The true scores are those of the template population (computed from a
large draw), which is what an interval over templates should cover.
"""

from __future__ import annotations

import numpy as np

from biaslens.methods.bbq.metrics import bootstrap_p, scores, widen
from biaslens.metrics.resampling import draw_counts


def template_counts(rng: np.random.Generator, shape: tuple[int, ...], k: int, per_template: int, *,
                    p_unknown_amb: float = 0.5, p_bias: float = 0.6, p_unknown_dis: float = 0.1,
                    p_correct_dis: float = 0.8, spread: float = 0.8) -> np.ndarray:
    """Counts (..., k, 12) in metrics.bbq.COUNTS order for k templates (``shape``: leading replicates)."""
    def logit(p):
        return np.log(p / (1 - p))

    def eff(size):
        return spread * rng.standard_t(3, size=size)

    full = (*shape, k)
    pu_a = 1 / (1 + np.exp(-(logit(p_unknown_amb) + eff(full))))
    pb = 1 / (1 + np.exp(-(logit(p_bias) + eff(full))))
    pu_d = 1 / (1 + np.exp(-(logit(p_unknown_dis) + eff(full))))
    pc = 1 / (1 + np.exp(-(logit(p_correct_dis) + eff(full))))
    n = per_template
    unk_a = rng.binomial(n, pu_a)
    nu_a = n - unk_a
    b_a = rng.binomial(nu_a, pb)
    unk_d = rng.binomial(n, pu_d)
    nu_d = n - unk_d
    b_d = rng.binomial(nu_d, pb)
    corr_d = np.minimum(rng.binomial(nu_d, pc), nu_d)
    c = np.zeros((*full, 12))
    c[..., 0], c[..., 1], c[..., 2], c[..., 3] = n, unk_a, nu_a, b_a
    c[..., 4], c[..., 5], c[..., 6], c[..., 7] = n, corr_d, nu_d, b_d
    c[..., 8], c[..., 9], c[..., 10], c[..., 11] = n / 2, corr_d / 2, n / 2, corr_d / 2
    return c


def truth(seed: int = 99, **kw) -> dict[str, float]:
    """The population scores: one draw of 200,000 templates."""
    c = template_counts(np.random.default_rng(seed), (), 200_000, kw.pop("per_template", 4), **kw).sum(0)
    return {k: float(v) for k, v in scores(c).items()}


def coverage(k: int, per_template: int, *, reps: int = 400, n_boot: int = 400, seed: int = 0,
             level: float = 0.95, **kw) -> dict[str, float]:
    """For S_DIS and S_AMB: the share of replicates whose interval (methods/bbq/metrics.py: widened
    template-bootstrap percentiles) covers the population value, and the share whose bootstrap
    test rejects S = 0 at 5% (its size when the population value is 0, its power otherwise)."""
    rng = np.random.default_rng(seed)
    c = template_counts(rng, (reps,), k, per_template, **kw)          # (reps, k, 12)
    w = draw_counts(rng.integers(0, k, (reps, n_boot, k)), k)            # (reps, n_boot, k)
    boot = scores(np.einsum("rbk,rkc->rbc", w, c))
    point = scores(c.sum(1))
    true = truth(per_template=per_template, **kw)
    a = (1 - level) / 2
    out = {}
    for name in ("s_dis", "s_amb"):
        d = widen(boot[name], point[name], k, 1, level)
        lo, hi = np.nanquantile(d, [a, 1 - a], axis=1)
        out[name] = float(np.mean((lo <= true[name]) & (true[name] <= hi)))
        out[f"reject_{name}"] = float(np.mean(bootstrap_p(d) < 0.05))
        out[f"truth_{name}"] = true[name]
    return out
