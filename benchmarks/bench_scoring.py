"""Scoring throughput on the embedded model: biaslens's batched engine vs the naive
loop (one sentence per forward pass), on the same HolisticBias sentences.

    python benchmarks/bench_scoring.py [--n 2000] [--naive-n 200] [--threads 2]

Writes benchmarks/results/scoring.json. No cache is used, so every sentence is computed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

from biaslens.machine import machine_facts

HERE = Path(__file__).resolve().parent


def load_sentences(n: int) -> tuple[list[str], str]:
    bench = HERE.parents[1] / "shared" / "bench" / "hb_2k.txt"
    if bench.exists():
        lines = [line for line in bench.read_text(encoding="utf-8").splitlines() if line.strip()]
        return lines[:n], str(bench)
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset

    rows = likelihood_rows(build_sentences(load_holistic_dataset())).sample(n=n, random_state=0)
    return rows["text"].astype(str).tolist(), "built-in HolisticBias v1.0 sample (seed 0)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--naive-n", type=int, default=400, help="sentences for the slow one-at-a-time loop")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BIASLENS_THREADS", os.cpu_count() or 1)))
    ap.add_argument("--with-compile", action="store_true", help="also measure --compile (adds ~2-3 min)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "scoring.json")
    args = ap.parse_args()
    os.environ["BIASLENS_THREADS"] = str(args.threads)

    import numpy as np
    import torch

    from biaslens.engine.scoring import ScoringStats, score_texts
    from biaslens.models import load_model

    texts, source = load_sentences(args.n)
    t0 = time.perf_counter()
    backend = load_model("smollm2-135m")
    load_s = time.perf_counter() - t0
    torch.set_num_threads(args.threads)

    # warm-up (first calls allocate)
    backend.score_batch(texts[:8])

    naive = texts[: args.naive_n]
    t0 = time.perf_counter()
    naive_scores = [backend.score_batch([t])[0] for t in naive]
    naive_s = time.perf_counter() - t0

    stats = ScoringStats()
    t0 = time.perf_counter()
    batched = score_texts(backend, texts, cache=None, batch_size=args.batch_size, stats=stats)
    batched_s = time.perf_counter() - t0

    diffs = [float(np.max(np.abs(a.logprobs - b.logprobs))) for a, b in zip(naive_scores, batched[: len(naive)])]
    compiled = None
    if args.with_compile:
        cbackend = load_model("smollm2-135m", compile=True)
        t0 = time.perf_counter()
        cbackend.score_batch(texts[:32])  # triggers compilation
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        cscores = score_texts(cbackend, texts, cache=None, batch_size=args.batch_size)
        c_s = time.perf_counter() - t0
        compiled = {"compile_seconds": round(compile_s, 1), "seconds": round(c_s, 3),
                    "sentences_per_second": round(len(texts) / c_s, 2),
                    "speedup_vs_naive": round((len(texts) / c_s) / (len(naive) / naive_s), 2),
                    "max_abs_logprob_diff_vs_eager": max(float(np.max(np.abs(a.logprobs - b.logprobs)))
                                                         for a, b in zip(batched, cscores))}
    tokens = sum(s.n_tokens for s in batched) + len(batched)  # + the start token each text carries
    result = {
        "benchmark": "scoring",
        "model": backend.info.name,
        "dtype": backend.info.dtype,
        "start_token": backend.info.start_token,
        "threads": args.threads,
        "sentences": len(texts),
        "source": source,
        "model_load_seconds": round(load_s, 3),
        "naive": {"sentences": len(naive), "seconds": round(naive_s, 3),
                  "sentences_per_second": round(len(naive) / naive_s, 2)},
        "batched": {"sentences": len(texts), "seconds": round(batched_s, 3),
                    "sentences_per_second": round(len(texts) / batched_s, 2),
                    "tokens_per_second": round(tokens / batched_s, 1),
                    "batch_size": args.batch_size or backend.default_batch_size, "batches": stats.batches},
        "speedup_vs_naive": round((len(texts) / batched_s) / (len(naive) / naive_s), 2),
        "compiled": compiled,
        "target_speedup": 4.0,
        "max_abs_logprob_diff_naive_vs_batched": max(diffs),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "machine": machine_facts(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
