"""bf16 against fp32 on a GPU: per-sentence log-likelihoods and Likelihood Bias verdicts.

    python benchmarks/bench_cuda_dtype.py [--model M] [--sample N] [--out FILE]

Runs ``biaslens run --full`` (or ``--sample N``) twice on the GPU with the same model, once in
float32 (TF32 off, biaslens's exact default) and once in bfloat16, with no call cache, and
compares what a user reads:

- per sentence: |log-likelihood(bf16) - log-likelihood(fp32)| (median, 99th percentile, max)
  and the Spearman correlation of the two;
- per descriptor pair (the Mann-Whitney tests Likelihood Bias counts): the share whose
  "differs significantly" agrees, at p < 0.05 and after Holm;
- the headline (Likelihood Bias with its interval, its verdict) and every axis's value and
  verdict word.

The model must have real weights: random weights give scores without the spread of a trained
model, so agreement on them says nothing. Writes ``benchmarks/results/cuda_dtype.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_cuda import _timed_run  # noqa: E402  (the same subprocess timing as the other GPU runs)


def compare_runs(fp32: Path, bf16: Path) -> dict:
    """What changes between two finished holistic-likelihood run folders of the same sentences."""
    from scipy.stats import spearmanr

    a, b = (pd.read_parquet(d / "sentences.parquet") for d in (fp32, bf16))
    la, lb = (t["sum_logprob"].to_numpy(float) for t in (a, b))
    diff = np.abs(la - lb)
    out: dict = {"sentences": len(a), "median_abs_loglik_diff": float(np.median(diff)),
                 "p99_abs_loglik_diff": float(np.quantile(diff, 0.99)), "max_abs_loglik_diff": float(diff.max()),
                 "median_abs_log_perplexity_diff": float(np.median(np.abs(np.log(a["perplexity"].to_numpy(float))
                                                                         - np.log(b["perplexity"].to_numpy(float))))),
                 "spearman": float(spearmanr(la, lb).statistic)}
    sa, sb = (pd.read_parquet(d / "significances.parquet") for d in (fp32, bf16))
    keys = ["axis", "template", "descriptor_0", "descriptor_1"]
    m = sa.merge(sb, on=keys, suffixes=("_fp32", "_bf16"))
    out["pairs"] = len(m)
    for col in ("significant_difference", "significant_holm"):
        agree = (m[f"{col}_fp32"] == m[f"{col}_bf16"])
        out[f"{col}_agreement"] = float(agree.mean())
        out[f"{col}_flipped"] = int((~agree).sum())
    ma, mb = (json.loads((d / "metrics.json").read_text()) for d in (fp32, bf16))
    head = [(e for e in x["entries"] if e["name"] == "likelihood_bias") for x in (ma, mb)]
    ha, hb = (next(h) for h in head)
    out["headline"] = {k: {"fp32": ha.get(k), "bf16": hb.get(k)} for k in ("value", "ci_low", "ci_high", "verdict")}
    out["verdict_sentence"] = {"fp32": ma.get("verdict"), "bf16": mb.get("verdict")}
    axes_a, axes_b = ma.get("by_axis") or {}, mb.get("by_axis") or {}
    out["axes"] = {ax: {"fp32": axes_a[ax].get("likelihood_bias"), "bf16": axes_b.get(ax, {}).get("likelihood_bias")}
                   for ax in axes_a}
    out["max_axis_abs_diff"] = max((abs(v["fp32"] - v["bf16"]) for v in out["axes"].values()
                                    if v["fp32"] is not None and v["bf16"] is not None), default=None)
    out["verdicts_agree"] = ha.get("verdict") == hb.get("verdict")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--sample", type=int, default=0, help="sentences (--sample) instead of --full")
    ap.add_argument("--device", default="cuda", help="cpu: try the script out where there is no GPU")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cuda_dtype.json")
    args = ap.parse_args()
    import bench_cuda

    bench_cuda.DEVICE = args.device
    import torch
    import transformers

    from biaslens.machine import machine_facts

    size = ["--sample", str(args.sample)] if args.sample else ["--full"]
    result: dict = {"benchmark": "cuda_dtype", "model": args.model,
                    "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else "none",
                    "torch": torch.__version__, "transformers": transformers.__version__, "machine": machine_facts(),
                    "runs": {}}
    folders = {}
    for dtype in ("float32", "bfloat16"):
        folders[dtype] = Path(f"/tmp/biaslens-dtype-{dtype}")
        result["runs"][dtype] = _timed_run(["run", *size, "--model", args.model, "--dtype", dtype],
                                           folders[dtype], args.time_limit)
        print(json.dumps(result["runs"][dtype])[:600], flush=True)
    result["comparison"] = compare_runs(folders["float32"], folders["bfloat16"])
    print(json.dumps(result["comparison"], indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
