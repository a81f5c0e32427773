"""The embedded model on a CUDA GPU: scoring and generation throughput by batch size and dtype,
and optionally the paper-scale Likelihood Bias run (`biaslens run --full --device cuda`).

    python benchmarks/bench_cuda.py [--n 20000] [--full] [--out FILE]

Writes benchmarks/results/cuda.json (GPU name, torch/transformers versions, CPU facts). No call
cache is used, so every sentence is computed; fp32 runs with TF32 off (exact, biaslens's default).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from biaslens.machine import machine_facts

HERE = Path(__file__).resolve().parent


def _timed(fn, *args, **kwargs):
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def _generate_all(backend, prompts: list[str], params, batch_size: int) -> list[str]:
    return [text for i in range(0, len(prompts), batch_size)
            for text in backend.generate_batch(prompts[i:i + batch_size], params, [0] * len(prompts[i:i + batch_size]))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000, help="HolisticBias sentences to score")
    ap.add_argument("--batch-sizes", default="256,1024,4096", help="texts per scoring batch to try")
    ap.add_argument("--prompts", type=int, default=512, help="generation prompts (32 new tokens each)")
    ap.add_argument("--full", action="store_true", help="also time `biaslens run --full --device cuda`")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cuda.json")
    args = ap.parse_args()

    import numpy as np
    import torch
    import transformers

    from biaslens.datasets.holistic import build_sentences, likelihood_rows, load_holistic_dataset
    from biaslens.engine.scoring import ScoringStats, score_texts
    from biaslens.models import load_model
    from biaslens.models.base import GenerationParams, GenerationRequest

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = likelihood_rows(build_sentences(load_holistic_dataset()))
    texts = rows["text"].astype(str).sample(n=args.n, random_state=0).tolist()
    result: dict = {"benchmark": "cuda", "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                    "transformers": transformers.__version__, "sentences": len(texts), "scoring": [],
                    "machine": machine_facts()}
    reference = None
    for dtype in ("float32", "bfloat16"):
        backend = load_model("smollm2-135m", device="cuda", dtype=dtype)
        score_texts(backend, texts[:512], cache=None)  # warm-up: CUDA context, kernels, allocator
        for bs in [int(b) for b in args.batch_sizes.split(",")]:
            torch.cuda.reset_peak_memory_stats()
            stats = ScoringStats()
            scores, secs = _timed(score_texts, backend, texts, cache=None, batch_size=bs, stats=stats)
            ll = np.asarray([s.sum_logprob for s in scores])
            if reference is None:
                reference = ll
            result["scoring"].append({
                "dtype": dtype, "batch_size": bs, "seconds": round(secs, 2),
                "sentences_per_second": round(len(texts) / secs, 1),
                "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20),
                "max_abs_loglik_diff_vs_first_fp32": float(np.max(np.abs(ll - reference)))})
            print(result["scoring"][-1], flush=True)
        if dtype == "float32":
            prompts = [f"I'm {t[len('I'):].strip()}" if t.startswith("I ") else t for t in texts[: args.prompts]]
            params = GenerationParams(max_new_tokens=32, min_new_tokens=32)
            rendered = [backend.render_prompt(GenerationRequest(p), params) for p in prompts]
            backend.generate_batch(rendered[:16], params, [0] * 16)
            gens = []
            for bs in (128, 512):
                _, secs = _timed(_generate_all, backend, rendered, params, bs)
                gens.append({"batch_size": bs, "prompts": len(rendered), "new_tokens_each": 32,
                             "seconds": round(secs, 2), "tokens_per_second": round(32 * len(rendered) / secs, 1)})
                print(gens[-1], flush=True)
            result["generation_greedy_fp32"] = gens
        backend = None  # free the GPU memory before the next dtype loads
        torch.cuda.empty_cache()
    if args.full:
        out = Path("/tmp/biaslens-cuda-full")
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "biaslens.cli", "run", "--full", "--device", "cuda",
                               "--out", str(out), "--no-cache"], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        run_json = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
        result["full_run"] = {"wall_seconds": round(wall, 1), "exit_code": proc.returncode,
                              "status": run_json.get("status"), "timings": run_json.get("timings"),
                              "stderr_tail": proc.stderr[-1500:]}
        print(result["full_run"], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
