"""Generation throughput on the embedded model: biaslens's batched generation (left
padding, rows sorted by prompt length) vs one prompt at a time, on the same HolisticBias
prompts, greedy.

    python benchmarks/bench_generation.py [--n 32] [--new-tokens 24] [--batch-sizes 8,32] [--threads 1]

Every row generates exactly ``--new-tokens`` tokens (min = max new tokens), so generated
tokens/s compare like for like. No cache is used. Writes benchmarks/results/generation.json,
including how many batched responses are identical to the one-at-a-time ones (left padding
can change float rounding, hence a greedy choice, in rare rows).
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


def load_prompts(n: int) -> list[str]:
    from biaslens.datasets.holistic import build_sentences, likelihood_rows, load_holistic_dataset

    rows = likelihood_rows(build_sentences(load_holistic_dataset())).sample(n=n, random_state=0)
    return rows["text"].astype(str).tolist()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--batch-sizes", default="8,32")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BIASLENS_THREADS", "1")))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "generation.json")
    args = ap.parse_args()
    os.environ["BIASLENS_THREADS"] = str(args.threads)

    import torch

    from biaslens.engine.generation import generate_texts
    from biaslens.engine.scoring import ScoringStats
    from biaslens.models import load_model
    from biaslens.models.generation import GenerationParams

    prompts = load_prompts(args.n)
    t0 = time.perf_counter()
    backend = load_model("smollm2-135m")
    load_s = time.perf_counter() - t0
    torch.set_num_threads(args.threads)
    params = GenerationParams(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens)
    generate_texts(backend, prompts[:2], params, batch_size=2)  # warm-up

    def timed(batch_size: int) -> tuple[list[str], float]:
        stats = ScoringStats()
        t = time.perf_counter()
        out = generate_texts(backend, prompts, params, batch_size=batch_size, stats=stats)
        return [r[0] for r in out], time.perf_counter() - t

    tokens = args.n * args.new_tokens
    one, one_s = timed(1)
    results = {"one_at_a_time": {"batch_size": 1, "seconds": round(one_s, 3),
                                 "generated_tokens_per_second": round(tokens / one_s, 2),
                                 "prompts_per_second": round(args.n / one_s, 3)}}
    for bs in [int(b) for b in args.batch_sizes.split(",") if b.strip()]:
        texts, s = timed(bs)
        results[f"batched_{bs}"] = {"batch_size": bs, "seconds": round(s, 3),
                                    "generated_tokens_per_second": round(tokens / s, 2),
                                    "prompts_per_second": round(args.n / s, 3),
                                    "speedup_vs_one_at_a_time": round(one_s / s, 2),
                                    "identical_to_one_at_a_time": sum(a == b for a, b in zip(texts, one))}
    record = {
        "benchmark": "generation", "model": backend.info.name, "n_prompts": args.n,
        "new_tokens_per_prompt": args.new_tokens, "decoding": "greedy", "generated_tokens": tokens,
        "threads": args.threads, "model_load_seconds": round(load_s, 2), "results": results,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "machine": machine_facts(),
        "example": {"prompt": prompts[0], "response": one[0]},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
