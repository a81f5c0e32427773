"""The host's share of scoring: the time spent outside the model's forward passes and output
head (tokenizing, sorting, batching, prefix-trie bookkeeping, result objects), per sentence,
for this tree's engine and optionally an older one, side by side.

    python benchmarks/bench_scoring_host.py [--before SRC] [--n 100000] [--sample 2000]
        [--prompts 64] [--prefetch-n 1024] [--only host,exact,generation,prefetch] [--threads 2] [--out FILE]

``--before SRC``: the root of another biaslens source tree (a folder holding ``src/biaslens``),
e.g. ``git archive <commit> src | tar -x -C /tmp/before``; every measurement runs for it too,
each in its own process with that tree first on ``PYTHONPATH``.

1. **Host time.** The embedded model's transformer body and output head are replaced by stubs
   that return zeros of the right shapes, and ``score_texts`` scores ``--n`` HolisticBias v1.0
   sentences (seeded sample, no call cache). What is left is the host's work; the stubs' own time
   (allocating the zeros) is measured and subtracted. A second pass does the same with a fresh
   in-memory call cache (keys, records, commits).
2. **Exactness.** ``biaslens run --sample N --no-cache`` with the real model: every sentence's
   log-likelihood and the Likelihood Bias, compared across the trees; wall time and the run's own
   scoring time.
3. **Generation.** Greedy generation through the engine (``--prompts`` HolisticBias chat prompts,
   32 new tokens, 3-gram blocking) and plain ``model.generate`` at the same batch (once):
   generated tokens/s.
4. **Prepared ahead on a CPU?** This tree only: the real model on ``--prefetch-n`` sentences with
   the next batch prepared on a background thread and without (interleaved, twice each).

Writes benchmarks/results/scoring_host.json with the CPU model and flags.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
THIS_TREE = HERE.parent


def sentences(n: int) -> list[str]:
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset

    rows = likelihood_rows(build_sentences(load_holistic_dataset()))
    return rows["text"].astype(str).sample(n=min(n, len(rows)), random_state=0).tolist()


def stub_model(backend) -> dict:
    """Replace the transformer body and the output head by zero-returning stubs; returns the
    counter of the stubs' own seconds and calls."""
    import numpy as np
    import torch
    from transformers.modeling_outputs import BaseModelOutputWithPast

    spent = {"seconds": 0.0, "forward_calls": 0, "head_calls": 0, "positions": 0}
    body = backend.model.base_model
    hidden = backend.model.config.hidden_size

    def forward(*args, input_ids=None, **kwargs):
        t = time.perf_counter()
        out = BaseModelOutputWithPast(last_hidden_state=torch.zeros((*input_ids.shape, hidden)))
        spent["seconds"] += time.perf_counter() - t
        spent["forward_calls"] += 1
        spent["positions"] += int(input_ids.numel())
        return out

    def head(hidden_states, rows, targets, *args, **kwargs):
        t = time.perf_counter()
        out = np.zeros(len(rows), dtype=np.float64)
        spent["seconds"] += time.perf_counter() - t
        spent["head_calls"] += 1
        return out

    body.forward = forward
    backend._head_logprobs = head
    return spent


def child_host(args) -> dict:
    import torch

    from biaslens.engine.cache import CallCache
    from biaslens.engine.scoring import ScoringStats, score_texts
    from biaslens.models import load_model

    torch.set_num_threads(args.threads)
    texts = sentences(args.n)
    backend = load_model("smollm2-135m")
    spent = stub_model(backend)
    score_texts(backend, texts[:300], cache=None)  # warm-up (imports, first allocations)
    out = {"sentences": len(texts), "unique": len(set(texts))}
    for label, cache in (("no_cache", None), ("in_memory_cache", CallCache(None))):
        for k in spent:
            spent[k] = 0 if isinstance(spent[k], int) else 0.0
        stats = ScoringStats()
        t = time.perf_counter()
        scores = score_texts(backend, texts, cache=cache, stats=stats)
        wall = time.perf_counter() - t
        assert len(scores) == len(texts)
        host = wall - spent["seconds"]
        out[label] = {"wall_seconds": round(wall, 3), "stub_seconds": round(spent["seconds"], 3),
                      "host_seconds": round(host, 3), "host_microseconds_per_sentence": round(1e6 * host / len(texts), 1),
                      "batches": stats.batches, "forward_calls": spent["forward_calls"],
                      "positions_incl_padding": spent["positions"]}
        print(label, out[label], file=sys.stderr, flush=True)
    if args.profile:
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        score_texts(backend, texts, cache=None)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
        print(buf.getvalue(), file=sys.stderr)
    return out


def child_exact(args) -> dict:
    """``biaslens run --sample N --no-cache``: timings and the per-sentence log-likelihoods (npz)."""
    import numpy as np
    import pandas as pd

    out_dir = Path(args.workdir) / "run"
    env = dict(os.environ, BIASLENS_THREADS=str(args.threads))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "biaslens.cli", "run", "--sample", str(args.sample), "--no-cache",
                           "--out", str(out_dir)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"biaslens run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    run = json.loads((out_dir / "run.json").read_text())
    metrics = json.loads((out_dir / "metrics.json").read_text())
    df = pd.read_parquet(out_dir / "sentences.parquet", columns=["text", "sum_logprob", "n_tokens"])
    np.savez(Path(args.workdir) / "loglik.npz", text=df["text"].to_numpy(str), sum_logprob=df["sum_logprob"].to_numpy(),
             n_tokens=df["n_tokens"].to_numpy())
    return {"sentences": len(df), "wall_seconds": round(wall, 2), "timings": run.get("timings"),
            "scoring": run.get("scoring"), "likelihood_bias": metrics.get("likelihood_bias"),
            "likelihood_bias_by_axis": {a: v.get("likelihood_bias") if isinstance(v, dict) else v
                                        for a, v in (metrics.get("by_axis") or {}).items()}}


def child_generation(args) -> dict:
    import torch

    from biaslens.engine.generation import generate_texts
    from biaslens.engine.scoring import ScoringStats
    from biaslens.models import load_model
    from biaslens.models.base import GenerationParams, GenerationRequest

    torch.set_num_threads(args.threads)
    prompts = sentences(args.prompts)
    backend = load_model("smollm2-135m")
    params = GenerationParams(max_new_tokens=32, min_new_tokens=32, no_repeat_ngram_size=3)
    generate_texts(backend, prompts[:2], params, batch_size=2)  # warm-up
    stats = ScoringStats()
    t = time.perf_counter()
    texts = generate_texts(backend, prompts, params, stats=stats)
    secs = time.perf_counter() - t
    out = {"prompts": len(prompts), "new_tokens_each": 32, "batch_size": backend.generate_batch_size,
           "seconds": round(secs, 2), "generated_tokens": stats.tokens_computed,
           "generated_tokens_per_second": round(stats.tokens_computed / secs, 1), "texts": [r[0] for r in texts]}
    if args.plain:
        from transformers import GenerationConfig

        from biaslens.models.generation import left_padded

        tok = backend.tokenizer
        rendered = [backend.render_prompt(GenerationRequest(prompt=p), params) for p in prompts]
        enc = sorted((tok(p, add_special_tokens=False)["input_ids"] for p in rendered), key=len, reverse=True)
        bs = backend.generate_batch_size
        t = time.perf_counter()
        for i in range(0, len(enc), bs):
            ids, attn = left_padded(enc[i:i + bs], backend._pad_id)
            with torch.inference_mode():
                backend.model.generate(input_ids=ids, attention_mask=attn, generation_config=GenerationConfig(
                    max_new_tokens=32, min_new_tokens=32, do_sample=False, pad_token_id=backend._pad_id))
        secs = time.perf_counter() - t
        out["plain_generate"] = {"batch_size": bs, "seconds": round(secs, 2),
                                 "generated_tokens_per_second": round(len(enc) * 32 / secs, 1)}
    return out


def child_prefetch(args) -> dict:
    """This tree only: the real model on ``--prefetch-n`` sentences with the next batch prepared on
    a background thread or not (the CPU default follows this measurement)."""
    import numpy as np
    import torch

    from biaslens.engine.scoring import score_texts
    from biaslens.models import load_model
    from biaslens.models.hf import HFCausalBackend

    torch.set_num_threads(args.threads)
    texts = sentences(args.prefetch_n)
    backend = load_model("smollm2-135m")
    score_texts(backend, texts[:256], cache=None)  # warm-up
    out, ref = {}, None
    for ahead in (0, 1, 0, 1):  # interleaved: drift on the machine hits both alike
        HFCausalBackend.PREFETCH_BATCHES_CPU = ahead
        t = time.perf_counter()
        ll = np.asarray([s.sum_logprob for s in score_texts(backend, texts, cache=None)])
        out.setdefault(f"prefetch_{ahead}_seconds", []).append(round(time.perf_counter() - t, 2))
        ref = ll if ref is None else ref
        assert np.array_equal(ll, ref)
    out["sentences"] = len(texts)
    out["identical_scores"] = True
    return out


CHILDREN = {"host": child_host, "exact": child_exact, "generation": child_generation, "prefetch": child_prefetch}


def run_child(kind: str, tree: Path, args, workdir: Path, plain: bool = False) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), BIASLENS_THREADS=str(args.threads))
    cmd = [sys.executable, __file__, "--child", kind, "--workdir", str(workdir), "--n", str(args.n),
           "--sample", str(args.sample), "--prompts", str(args.prompts), "--threads", str(args.threads),
           "--prefetch-n", str(args.prefetch_n)]
    if plain:
        cmd.append("--plain")
    if args.profile:
        cmd.append("--profile")
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} measurement for {tree} failed ({proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, default=None, help="root of an older biaslens source tree to compare")
    ap.add_argument("--n", type=int, default=100_000, help="sentences for the host-time measurement")
    ap.add_argument("--sample", type=int, default=2000, help="--sample of the exactness run (0: skip it)")
    ap.add_argument("--prompts", type=int, default=64, help="generation prompts (0: skip generation)")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BIASLENS_THREADS", os.cpu_count() or 1)))
    ap.add_argument("--prefetch-n", type=int, default=1024, help="sentences for the prefetch measurement")
    ap.add_argument("--only", default="host,exact,generation,prefetch", help="which measurements, comma-separated")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one host-time pass to stderr")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "scoring_host.json")
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--workdir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return

    import numpy as np

    from biaslens.machine import machine_facts

    trees = {"after": THIS_TREE, **({"before": args.before.resolve()} if args.before else {})}
    only = {s.strip() for s in args.only.split(",")}
    if not args.sample:
        only.discard("exact")
    if not args.prompts:
        only.discard("generation")
    result: dict = {"benchmark": "scoring_host", "model": "smollm2-135m", "threads": args.threads,
                    "trees": {k: str(v) for k, v in trees.items()}, "machine": machine_facts(),
                    "load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("host", "exact", "generation", "prefetch"):
            if kind not in only:
                continue
            result[kind] = {}
            for label, tree in trees.items():
                if kind == "prefetch" and label != "after":
                    continue
                print(f"{kind}: {label} ({tree})", file=sys.stderr, flush=True)
                result[kind][label] = run_child(kind, tree, args, Path(tmp) / label / kind,
                                                plain=kind == "generation" and label == "after")
        if "host" in result and "before" in result["host"]:
            b, a = result["host"]["before"], result["host"]["after"]
            result["host"]["host_time_ratio_before_over_after"] = {
                k: round(b[k]["host_seconds"] / a[k]["host_seconds"], 2) for k in ("no_cache", "in_memory_cache")}
        if "exact" in result and "before" in result["exact"]:
            ref = np.load(Path(tmp) / "before" / "exact" / "loglik.npz")
            new = np.load(Path(tmp) / "after" / "exact" / "loglik.npz")
            same_rows = bool(np.array_equal(ref["text"], new["text"]))
            diff = np.abs(ref["sum_logprob"] - new["sum_logprob"]) if same_rows else np.array([np.inf])
            b, a = result["exact"]["before"], result["exact"]["after"]
            result["exact"]["comparison"] = {
                "same_sentences": same_rows, "same_token_counts": same_rows and bool(np.array_equal(ref["n_tokens"], new["n_tokens"])),
                "max_abs_loglik_diff": float(diff.max()), "identical_logliks": int((diff == 0).sum()),
                "same_likelihood_bias": b["likelihood_bias"] == a["likelihood_bias"]
                and b["likelihood_bias_by_axis"] == a["likelihood_bias_by_axis"]}
        if "generation" in result:
            a = result["generation"]["after"]
            plain = a.pop("plain_generate", None)
            result["generation"]["plain_generate"] = plain
            texts_after = a.pop("texts")
            for label in result["generation"]:
                g = result["generation"][label]
                if isinstance(g, dict) and "generated_tokens_per_second" in g and plain and label != "plain_generate":
                    g["speedup_vs_plain_generate"] = round(g["generated_tokens_per_second"]
                                                           / plain["generated_tokens_per_second"], 2)
            if "before" in result["generation"]:
                texts_before = result["generation"]["before"].pop("texts")
                result["generation"]["identical_texts"] = f"{sum(x == y for x, y in zip(texts_before, texts_after))}/{len(texts_after)}"
    result["load_average_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
