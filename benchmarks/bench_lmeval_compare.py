"""Scoring speed and agreement against EleutherAI lm-evaluation-harness, in one run.

On the same HolisticBias sentences (../shared/bench/hb_2k.txt), the embedded model and the
same thread count, side by side:

(a) lm-evaluation-harness's Hugging Face backend, ``loglikelihood_rolling``, at each batch
    size asked for (its best is the reference);
(b) biaslens exact float32 scoring (the engine, default batch size);
(c) the one-sentence-at-a-time loop (one forward pass per sentence);
(d) biaslens's fast mode (``--dtype bf16-fast``), when the CPU has native bfloat16.

It reports sentences/s and ratios, the per-sentence log-likelihood agreement of (b) with
lm-eval (both score the same tokens: lm-eval is given biaslens's start token as its prefix
token; its own default would be this tokenizer's BOS, the chat marker ``<|im_start|>``),
the fast mode's median perplexity error against float32, and computed tokens/s against the
compute ceiling (this CPU's float32 GEMM GFLOP/s at the model's own shapes / (2 x parameters)).

    python benchmarks/bench_lmeval_compare.py [--limit 200] [--install-lm-eval]

Writes benchmarks/results/lmeval_compare.json (``--out`` to change). No call cache is used.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from biaslens.machine import machine_facts

HERE = Path(__file__).resolve().parent
#: lm-eval version this benchmark was written against (its HF backend's internals are used)
LM_EVAL_PIN = "lm-eval==0.4.13"
TARGETS = {"exact_vs_lm_eval": 2.0, "exact_vs_naive": 6.5, "ceiling_fraction": 0.85,
           "fast_vs_lm_eval": 3.0, "fast_median_ppl_error": 0.01, "loglik_max_abs_diff": 1e-4}


def _sentences(path: Path, limit: int | None) -> list[str]:
    if not path.exists():
        sys.exit(f"benchmark sentences not found: {path} (pass --sentences FILE, one sentence per line)")
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[:limit] if limit else lines


def _install_lm_eval() -> None:
    import torch
    import transformers

    # keep the installed torch/transformers: lm-eval's own requirements would accept others
    constraints = HERE / "results" / ".lm_eval_constraints.txt"
    constraints.parent.mkdir(parents=True, exist_ok=True)
    constraints.write_text(f"torch=={torch.__version__}\ntransformers=={transformers.__version__}\n")
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", LM_EVAL_PIN, "-c", str(constraints)],
                       check=True)
    finally:
        constraints.unlink(missing_ok=True)


def gemm_gflops(model, rows: int, reps: int = 5) -> dict:
    """float32 GEMM GFLOP/s over the model's own linear shapes (each (out, in) weighted by
    how often the model uses it), ``rows`` tokens at a time, best of ``reps``."""
    import torch
    import torch.nn.functional as F

    shapes: dict[tuple[int, int], int] = {}
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear):
            key = tuple(mod.weight.shape)
            shapes[key] = shapes.get(key, 0) + 1
    flops = seconds = 0.0
    per_shape = {}
    with torch.inference_mode():
        for (n, k), count in shapes.items():
            x, w = torch.randn(rows, k), torch.randn(n, k)
            F.linear(x, w)
            best = min(_timed(lambda: F.linear(x, w)) for _ in range(reps))  # noqa: B023 - timed at once
            per_shape[f"{n}x{k}"] = {"count": count, "gflops": round(2 * rows * n * k / best / 1e9, 1)}
            flops += 2 * rows * n * k * count
            seconds += best * count
    return {"rows": rows, "gflops": round(flops / seconds / 1e9, 1), "per_shape": per_shape}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_lm_eval(path: str, texts: list[str], batch_sizes: list[str], prefix_token_id: int, tokenizer) -> dict:
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    out: dict = {"runs": {}}
    for bs in batch_sizes:
        # max_length 64: sentences are <= ~25 tokens (one rolling window each); it also keeps
        # "auto" detection from probing 64 x 8192-token batches on a CPU
        lm = HFLM(pretrained=path, device="cpu", dtype="float32", batch_size=bs, max_batch_size=64,
                  prefix_token_id=prefix_token_id, max_length=64)
        if "same_tokens" not in out:
            ours = tokenizer(texts, add_special_tokens=False)["input_ids"]
            out["same_tokens"] = sum(lm.tok_encode(t) == list(o) for t, o in zip(texts, ours))
            out["prefix_token"] = lm.tokenizer.convert_ids_to_tokens(lm.prefix_token_id)
            out["its_default_prefix_token"] = lm.tokenizer.bos_token or lm.tokenizer.eos_token
        reqs = [Instance(request_type="loglikelihood_rolling", doc={}, arguments=(t,), idx=i)
                for i, t in enumerate(texts)]
        t0 = time.perf_counter()
        ll = lm.loglikelihood_rolling(reqs, disable_tqdm=True)
        sec = time.perf_counter() - t0
        out["runs"][str(bs)] = {"seconds": round(sec, 3), "sentences_per_second": round(len(texts) / sec, 2)}
        if "loglikelihoods" not in out:
            out["loglikelihoods"] = [float(x) for x in ll]
        print(f"lm-eval batch {bs}: {len(texts) / sec:.1f} sentences/s", flush=True)
        del lm
    best = max(out["runs"], key=lambda k: out["runs"][k]["sentences_per_second"])
    out["best_batch_size"] = best
    out["sentences_per_second"] = out["runs"][best]["sentences_per_second"]
    return out


def float64_reference(backend, texts: list[str]) -> list[float]:
    """Sentence log-likelihoods from a float64 copy of the model, one plain forward per
    sentence: the yardstick both float32 implementations are measured against."""
    import copy

    import torch

    model = copy.deepcopy(backend.model).to(torch.float64)
    out = []
    with torch.inference_mode():
        for ids in backend.tokenizer(texts, add_special_tokens=False)["input_ids"]:
            seq = torch.tensor([[backend._start_id, *ids]])
            logp = torch.log_softmax(model(input_ids=seq).logits[0, :-1], dim=-1)
            out.append(float(logp.gather(-1, seq[0, 1:, None]).sum()))
    del model
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=Path, default=HERE.parents[1] / "shared" / "bench" / "hb_2k.txt")
    ap.add_argument("--limit", type=int, default=None, help="use the first N sentences (quick runs)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lm-eval-batch-sizes", default="1,8,16,32,64,auto")
    ap.add_argument("--naive-n", type=int, default=500, help="sentences for the one-at-a-time loop")
    ap.add_argument("--batch-size", type=int, default=None, help="biaslens batch size (default: the backend's)")
    ap.add_argument("--f64-n", type=int, default=200, help="sentences checked against a float64 forward")
    ap.add_argument("--gemm-rows", type=int, default=1024, help="tokens per GEMM for the ceiling")
    ap.add_argument("--skip-lm-eval", action="store_true")
    ap.add_argument("--install-lm-eval", action="store_true", help=f"pip install {LM_EVAL_PIN} when absent")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "lmeval_compare.json")
    args = ap.parse_args()

    os.environ["BIASLENS_THREADS"] = str(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # lm-eval must load the local folder, never the Hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not args.skip_lm_eval and importlib.util.find_spec("lm_eval") is None:
        if not args.install_lm_eval:
            sys.exit(f"lm-eval is not installed: pass --install-lm-eval (installs {LM_EVAL_PIN}) or --skip-lm-eval")
        _install_lm_eval()

    import numpy as np
    import torch

    from biaslens.engine.scoring import ScoringStats, score_texts
    from biaslens.models import load_model
    from biaslens.models.embedded import embedded_model_dir
    from biaslens.models.hf import FAST_BF16, cpu_has_bf16

    texts = _sentences(args.sentences, args.limit)
    path = str(embedded_model_dir())
    backend = load_model("smollm2-135m")
    torch.set_num_threads(args.threads)
    n_params = backend.info.extra["n_parameters"]
    start_id = backend.tokenizer.convert_tokens_to_ids(backend.info.start_token)
    result: dict = {"benchmark": "lmeval_compare", "sentences": len(texts), "source": str(args.sentences),
                    "threads": args.threads, "model": backend.info.name, "parameters": n_params,
                    "start_token": backend.info.start_token, "targets": TARGETS}

    # (b) biaslens exact fp32 (warm-up first: first calls allocate)
    backend.score_batch(texts[:16])
    backend.computed_tokens = 0
    stats = ScoringStats()
    t0 = time.perf_counter()
    exact = score_texts(backend, texts, cache=None, batch_size=args.batch_size, stats=stats)
    sec = time.perf_counter() - t0
    computed = backend.computed_tokens
    scored = sum(s.n_tokens for s in exact) + len(exact)  # + the start token each text carries
    result["biaslens_exact"] = {
        "dtype": backend.info.dtype, "seconds": round(sec, 3), "sentences_per_second": round(len(texts) / sec, 2),
        "batch_size": args.batch_size or getattr(backend, "score_batch_size", backend.default_batch_size),
        "batches": stats.batches, "tokens": scored, "computed_tokens": computed,
        "computed_tokens_per_second": round(computed / sec, 1), "tokens_per_second": round(scored / sec, 1)}
    print(f"biaslens exact: {len(texts) / sec:.1f} sentences/s", flush=True)

    # compute ceiling at the model's own shapes
    gemm = gemm_gflops(backend.model, args.gemm_rows)
    ceiling = gemm["gflops"] * 1e9 / (2 * n_params)
    result["ceiling"] = {**gemm, "tokens_per_second": round(ceiling, 1),
                         "computed_fraction": round(computed / sec / ceiling, 3),
                         "note": "computed tokens: positions that went through the model (each distinct prefix "
                                 "of a batch once); tokens_per_second of biaslens_exact counts every scored "
                                 "token of every sentence"}

    # (c) one sentence per forward pass
    naive = texts[: args.naive_n]
    t0 = time.perf_counter()
    naive_scores = [backend.score_batch([t])[0] for t in naive]
    sec = time.perf_counter() - t0
    result["naive_loop"] = {"sentences": len(naive), "seconds": round(sec, 3),
                            "sentences_per_second": round(len(naive) / sec, 2),
                            "max_abs_logprob_diff_vs_batched": max(
                                float(np.max(np.abs(a.logprobs - b.logprobs)))
                                for a, b in zip(naive_scores, exact) if a.n_tokens)}
    print(f"naive loop: {len(naive) / sec:.1f} sentences/s", flush=True)

    # (d) fast mode
    if cpu_has_bf16():
        fast_backend = load_model("smollm2-135m", dtype=FAST_BF16)
        fast_backend.score_batch(texts[:16])
        t0 = time.perf_counter()
        fast = score_texts(fast_backend, texts, cache=None, batch_size=args.batch_size)
        sec = time.perf_counter() - t0
        p32 = np.array([s.perplexity() for s in exact])
        pf = np.array([s.perplexity() for s in fast])
        err = np.abs(pf / p32 - 1)
        result["biaslens_fast"] = {"dtype": FAST_BF16, "seconds": round(sec, 3),
                                   "sentences_per_second": round(len(texts) / sec, 2),
                                   "median_ppl_error": round(float(np.median(err)), 5),
                                   "p90_ppl_error": round(float(np.quantile(err, 0.9)), 5),
                                   "max_ppl_error": round(float(err.max()), 5)}
        print(f"biaslens {FAST_BF16}: {len(texts) / sec:.1f} sentences/s, "
              f"median perplexity error {np.median(err):.4f}", flush=True)
        del fast_backend
    else:
        result["biaslens_fast"] = {"skipped": "this CPU has no native bfloat16 (AVX512-BF16 or AMX)"}

    # (a) lm-evaluation-harness
    if not args.skip_lm_eval:
        import lm_eval

        sizes = [s.strip() for s in args.lm_eval_batch_sizes.split(",") if s.strip()]
        sizes = [s if s == "auto" else int(s) for s in sizes]
        le = run_lm_eval(path, texts, sizes, start_id, backend.tokenizer)
        ours = np.array([s.sum_logprob for s in exact])
        theirs = np.array(le.pop("loglikelihoods"))
        diff = np.abs(ours - theirs)
        le.update(version=lm_eval.__version__ if hasattr(lm_eval, "__version__") else LM_EVAL_PIN,
                  loglik_max_abs_diff_vs_biaslens=float(diff.max()),
                  loglik_median_abs_diff_vs_biaslens=float(np.median(diff)))
        # both are float32 computations: which one is off, measured against float64
        k = min(args.f64_n, len(texts))
        if k:
            ref = np.array(float64_reference(backend, texts[:k]))
            le["float64_check"] = {"sentences": k,
                                   "biaslens_max_abs_diff": float(np.max(np.abs(ours[:k] - ref))),
                                   "lm_eval_max_abs_diff": float(np.max(np.abs(theirs[:k] - ref))),
                                   "biaslens_vs_lm_eval_max_abs_diff": float(np.max(diff[:k]))}
        result["lm_eval"] = le
        ref = le["sentences_per_second"]
        result["ratios"] = {
            "exact_vs_lm_eval": round(result["biaslens_exact"]["sentences_per_second"] / ref, 2),
            "fast_vs_lm_eval": (round(result["biaslens_fast"]["sentences_per_second"] / ref, 2)
                                if "sentences_per_second" in result["biaslens_fast"] else None),
        }
    result.setdefault("ratios", {})["exact_vs_naive"] = round(
        result["biaslens_exact"]["sentences_per_second"] / result["naive_loop"]["sentences_per_second"], 2)
    r = result["ratios"]
    result["targets_met"] = {
        "exact_vs_lm_eval": r.get("exact_vs_lm_eval") is not None and r["exact_vs_lm_eval"] >= TARGETS["exact_vs_lm_eval"],
        "exact_vs_naive": r["exact_vs_naive"] >= TARGETS["exact_vs_naive"],
        "ceiling_fraction": result["ceiling"]["computed_fraction"] >= TARGETS["ceiling_fraction"],
        "fast_vs_lm_eval": bool(r.get("fast_vs_lm_eval")) and r["fast_vs_lm_eval"] >= TARGETS["fast_vs_lm_eval"],
        "fast_median_ppl_error": result["biaslens_fast"].get("median_ppl_error", 1.0) <= TARGETS["fast_median_ppl_error"],
        "loglik_agreement": "lm_eval" in result and
                            result["lm_eval"]["loglik_max_abs_diff_vs_biaslens"] <= TARGETS["loglik_max_abs_diff"],
    }
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["machine"] = {**machine_facts(), "cpu_bf16": cpu_has_bf16()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("ratios", "targets_met")}, indent=2))


if __name__ == "__main__":
    main()
