"""Which test can the RedditBias verdict rest on? False-rejection rates at the 5% level of the
candidate tests on skewed paired differences whose parameter is 0 (seeded; docs/redditbias.md
quotes the results).

Differences: lognormal(0, sigma) shifted to the null of each test: skew 6.2 / 13.6 / 33.5 at
sigma 1 / 1.26 / 1.5, and normal for reference; n = 40 and 200 pairs.

- mean-based, at mean 0: the paired t-test; a sign-flip permutation test of the mean (999
  flips); a studentised bootstrap (bootstrap-t) of the mean and a percentile bootstrap of d_z
  (500 resamples each);
- the Wilcoxon signed-rank test at its own centre, the pseudo-median (the median of the Walsh
  averages of a large sample);
- the exact sign test at the median.

Run: ``python benchmarks/sim_redditbias_tests.py`` (about a minute on one core); writes
``benchmarks/results/redditbias_tests.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy import stats

REPS = 1000
SHAPES = {"normal": None, "skew 6.2": 1.0, "skew 13.6": 1.26, "skew 33.5": 1.5}


def _draw(rng, sigma, shape, centre):
    if sigma is None:
        return rng.normal(0.0, 1.0, shape)
    x = rng.lognormal(0.0, sigma, shape)
    if centre == "mean":
        return x - np.exp(sigma**2 / 2)
    if centre == "median":
        return x - 1.0
    big = rng.lognormal(0.0, sigma, 3000)
    walsh = (big[:, None] + big[None, :]) / 2
    return x - np.median(walsh[np.triu_indices(big.size)])


def rates(sigma, n, rng) -> dict[str, float]:
    out = {}
    x = _draw(rng, sigma, (REPS, n), "mean")
    out["paired t"] = float(np.mean(stats.ttest_1samp(x, 0.0, axis=1).pvalue < 0.05))
    flips = rng.choice([-1.0, 1.0], size=(999, n))
    perm = np.abs(x @ flips.T) / n
    p_flip = (1 + (perm >= np.abs(x.mean(1))[:, None]).sum(1)) / 1000
    out["sign-flip permutation of the mean"] = float(np.mean(p_flip < 0.05))
    idx = rng.integers(0, n, (500, n))
    boot_t, boot_d = [], []
    for r in range(REPS):
        xb = x[r][idx]
        sd = xb.std(1, ddof=1)
        tb = (xb.mean(1) - x[r].mean()) / (sd / np.sqrt(n))
        t0 = x[r].mean() / (x[r].std(ddof=1) / np.sqrt(n))
        lo, hi = np.quantile(tb, [0.025, 0.975])
        boot_t.append(not lo <= t0 <= hi)
        dlo, dhi = np.quantile(xb.mean(1) / sd, [0.025, 0.975])
        boot_d.append(not dlo <= 0.0 <= dhi)
    out["studentised bootstrap of the mean"] = float(np.mean(boot_t))
    out["percentile bootstrap of d_z"] = float(np.mean(boot_d))
    w = _draw(rng, sigma, (REPS, n), "pseudo-median")
    out["Wilcoxon signed-rank at the pseudo-median"] = float(np.mean(stats.wilcoxon(w, axis=1).pvalue < 0.05))
    s = _draw(rng, sigma, (REPS, n), "median")
    k = (s > 0).sum(1)
    p_sign = np.minimum(1, 2 * np.minimum(stats.binom.cdf(k, n, 0.5), stats.binom.sf(k - 1, n, 0.5)))
    out["exact sign test at the median"] = float(np.mean(p_sign < 0.05))
    return out


def main() -> None:
    rng = np.random.default_rng(2026)
    results = {f"{name}, n = {n}": rates(sigma, n, rng) for name, sigma in SHAPES.items() for n in (40, 200)}
    doc = {"what": "false-rejection rate at the 5% level when the tested parameter is 0 (mean, pseudo-median or "
                   "median as each test tests); lognormal(0, sigma) differences shifted to it",
           "replicates": REPS, "seed": 2026, "results": results}
    out = Path(__file__).parent / "results" / "redditbias_tests.json"
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    for k, v in results.items():
        print(k, {t: round(r, 3) for t, r in v.items()})


if __name__ == "__main__":
    main()
