"""Benchmark: all Mann-Whitney pairs of a full HolisticBias v1.0 Likelihood Bias run.

Builds a synthetic per-sentence table with the exact group structure of a v1.0 run
(460,980 rows, 30 per (axis, template, descriptor), 571,584 pairs), taken from the official
descriptor files when ``/work/shared/reference/holistic_bias/v1.0`` (or ``$HB_REFERENCE``)
exists, else from the per-axis descriptor counts measured on them. Perplexities are
log-normal with a fixed seed. Times:

* ``likelihood_bias(df)`` end to end;
* the pair computation alone (per-block loop over the vectorized kernel);
* the stacked scipy approach (``mannwhitneyu(X, Y, axis=1)`` on all pairs of a block);
* scipy called once per pair, on a sample of pairs, extrapolated to the full run;

and checks 2,000 random pairs against ``scipy.stats.mannwhitneyu``. Writes
``benchmarks/results/pairwise_mwu.json``.

Run: ``python benchmarks/bench_pairwise_mwu.py``
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
try:
    import biaslens  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "src"))

from biaslens.machine import machine_facts
from biaslens.metrics import likelihood_bias, pairwise_mannwhitney  # noqa: E402

REFERENCE = Path(os.environ.get("HB_REFERENCE", "/work/shared/reference/holistic_bias/v1.0"))
# Ungendered descriptors per axis in v1.0 (descriptor_noun + noun_descriptor phrases).
V10_AXIS_SIZES = {
    "ability": 64,
    "age": 60,
    "body_type": 149,
    "characteristics": 88,
    "cultural": 24,
    "gender_and_sex": 46,
    "political_ideologies": 25,
    "nationality": 20,
    "nonce": 8,
    "race_ethnicity": 28,
    "religion": 39,
    "sexual_orientation": 16,
    "socioeconomic_class": 24,
}
N_TEMPLATES = 26
PER_GROUP = 30
SEED = 20240601


def structure() -> tuple[dict[str, list[str]], list[str], str]:
    """Axis -> descriptors and the template list (from the reference files if present)."""
    if (REFERENCE / "descriptors.json").exists():
        desc = json.loads((REFERENCE / "descriptors.json").read_text())
        phrases = json.loads((REFERENCE / "standalone_noun_phrases.json").read_text())
        templates = sorted(json.loads((REFERENCE / "sentence_templates.json").read_text()))
        axes: dict[str, list[str]] = {}
        for axis, buckets in desc.items():
            names: set[str] = set()
            for items in buckets.values():
                for item in items:
                    if isinstance(item, str):
                        names.add(item)
                    elif "gender" not in item:
                        names.add(item["descriptor"])
            for item in phrases.get(axis, []):
                item = {"noun_phrase": item} if isinstance(item, str) else item
                # noun-templated phrases ("{article} {noun} who uses a wheelchair") only
                if "{noun}" in item["noun_phrase"] and "gender" not in item:
                    names.add(item["noun_phrase"].replace("{article} {noun} ", ""))
            axes[axis] = sorted(names)
        if len(templates) == N_TEMPLATES:
            return axes, templates, str(REFERENCE)
    axes = {a: [f"{a}_{k:03d}" for k in range(n)] for a, n in V10_AXIS_SIZES.items()}
    return axes, [f"template {k:02d} {{noun_phrase}}" for k in range(N_TEMPLATES)], "synthetic"


def build_table(axes: dict[str, list[str]], templates: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(SEED)
    a_col, t_col, d_col = [], [], []
    for axis, descs in axes.items():
        for template in templates:
            for d in descs:
                a_col.append(axis)
                t_col.append(template)
                d_col.append(d)
    n_groups = len(a_col)
    # each (axis, template, descriptor) gets its own location so some pairs differ
    loc = rng.normal(4.0, 0.15, size=n_groups)
    ppl = rng.lognormal(np.repeat(loc, PER_GROUP), 0.5)
    rep = np.repeat(np.arange(n_groups), PER_GROUP)
    df = pd.DataFrame(
        {
            "axis": pd.Categorical(np.asarray(a_col, dtype=object)[rep]),
            "template": pd.Categorical(np.asarray(t_col, dtype=object)[rep]),
            "descriptor": pd.Categorical(np.asarray(d_col, dtype=object)[rep]),
            "perplexity": ppl,
        }
    )
    return df.sample(frac=1.0, random_state=SEED).reset_index(drop=True)  # rows arrive shuffled


def blocks(df: pd.DataFrame) -> list[list[np.ndarray]]:
    """Per (axis, template) block, the list of descriptor samples (sorted descriptors)."""
    out = []
    for _, block in df.groupby(["axis", "template"], sort=True, observed=True):
        grouped = block.groupby("descriptor", sort=True, observed=True)["perplexity"]
        out.append([g.to_numpy() for _, g in grouped])
    return out


def main() -> None:
    axes, templates, source = structure()
    t0 = time.perf_counter()
    df = build_table(axes, templates)
    t_build = time.perf_counter() - t0
    print(f"table: {len(df):,} rows from {source} ({t_build:.1f} s)")

    t0 = time.perf_counter()
    res = likelihood_bias(df)
    t_e2e = time.perf_counter() - t0
    n_pairs = len(res.significances)
    print(f"likelihood_bias end to end: {t_e2e:.2f} s, {n_pairs:,} pairs")

    blks = blocks(df)
    t0 = time.perf_counter()
    n_kernel = 0
    for samples in blks:
        n_kernel += len(pairwise_mannwhitney(samples))
    t_kernel = time.perf_counter() - t0
    print(f"pairs alone (per-block pairwise_mannwhitney): {t_kernel:.2f} s")

    # Stacked scipy: for each block, X[k] / Y[k] = the two samples of pair k; one call.
    t0 = time.perf_counter()
    p_stacked = []
    for samples in blks:
        mat = np.stack(samples)
        ii, jj = np.triu_indices(len(samples), 1)
        p_stacked.append(stats.mannwhitneyu(mat[ii], mat[jj], axis=1).pvalue)
    t_stacked = time.perf_counter() - t0
    p_stacked_all = np.concatenate(p_stacked)
    print(f"reference style (stacked scipy, axis=1): {t_stacked:.2f} s")

    # Per-pair scipy loop on a random sample, extrapolated.
    rng = np.random.default_rng(SEED + 1)
    sig = res.significances
    sample_idx = np.sort(rng.choice(n_pairs, size=2000, replace=False))
    lookup = {
        key: g.to_numpy()
        for key, g in df.groupby(["axis", "template", "descriptor"], observed=True)["perplexity"]
    }
    rows = sig.iloc[sample_idx]
    t0 = time.perf_counter()
    ref_u, ref_p = [], []
    for a, t, d0, d1 in rows[["axis", "template", "descriptor_0", "descriptor_1"]].itertuples(index=False):
        r = stats.mannwhitneyu(lookup[(a, t, d0)], lookup[(a, t, d1)])
        ref_u.append(float(r.statistic))
        ref_p.append(float(r.pvalue))
    t_loop_sample = time.perf_counter() - t0
    ref_u_arr, ref_p_arr = np.array(ref_u), np.array(ref_p)
    got_u = rows["mann_whitney_u"].to_numpy()
    got_p = rows["p_value"].to_numpy()
    max_abs_diff_p = float(np.max(np.abs(got_p - ref_p_arr)))
    max_rel_diff_p = float(np.max(np.abs(got_p - ref_p_arr) / np.maximum(ref_p_arr, 1e-300)))
    max_abs_diff_u = float(np.max(np.abs(got_u - ref_u_arr)))
    stacked_diff = float(np.max(np.abs(p_stacked_all - sig["p_value"].to_numpy())))
    print(f"2,000 sampled pairs vs scipy: max |dp| = {max_abs_diff_p:.3g}, max |dU| = {max_abs_diff_u}")
    print(f"all pairs vs stacked scipy: max |dp| = {stacked_diff:.3g}")

    out = {
        "n_rows": int(len(df)),
        "n_pairs": int(n_pairs),
        "n_pairs_kernel": int(n_kernel),
        "n_blocks": len(blks),
        "structure_source": source,
        "seconds_biaslens": round(t_e2e, 3),
        "seconds_biaslens_pairs_only": round(t_kernel, 3),
        "seconds_reference_style": round(t_stacked, 3),
        "seconds_scipy_per_pair_loop_extrapolated": round(t_loop_sample / len(sample_idx) * n_pairs, 1),
        "seconds_build_table": round(t_build, 3),
        "n_checked_pairs": int(len(sample_idx)),
        "max_abs_diff_p": max_abs_diff_p,
        "max_rel_diff_p": max_rel_diff_p,
        "max_abs_diff_u": max_abs_diff_u,
        "max_abs_diff_p_vs_stacked_all_pairs": stacked_diff,
        "fraction_significant": float(sig["significant_difference"].mean()),
        "fraction_significant_bh": float(sig["significant_bh"].mean()),
        "fraction_significant_holm": float(sig["significant_holm"].mean()),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "seed": SEED,
        "machine": machine_facts(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "pandas": pd.__version__,
    }
    path = ROOT / "benchmarks" / "results" / "pairwise_mwu.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
