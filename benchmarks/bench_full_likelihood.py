"""The paper-scale Likelihood Bias run, timed end to end, against its physical floor.

    python benchmarks/bench_full_likelihood.py [--out-dir /tmp/full-run] [--cache-dir /tmp/full-cache]
        [--threads 2] [--floor-only]

1. **Floor.** Every distinct token prefix of the ``--full`` sentences (as the model scores them:
   start token first) must go through the model at least once, whatever the batching; the
   script counts them and times plain causal forward passes of the embedded model at the engine's
   batch shape (10 rows x 128 tokens, about the 1,300 nodes a packed batch holds) to get this
   CPU's positions/s through the transformer body, and with the output head. Every prefix goes
   through the body; the prefixes that predict a token (all but the sentences' last tokens)
   also need the head, since a log-probability needs the whole vocabulary's normaliser. floor =
   prefixes / body rate + predicting prefixes x (1 / full rate - 1 / body rate): a lower bound,
   since the head's matrix product alone is timed, not its log-sum-exp. ``--floor-only``
   re-measures the floor beside a recorded run.
2. **Run.** ``biaslens run --full`` in a subprocess with its own call cache, so nothing is
   reused from earlier runs; wall time, the run's own scoring speed (run.json) and the peak RSS
   of the subprocess. A killed run resumes from that cache: run the script again with the same
   ``--cache-dir`` and the pieces' times are added (recorded per piece in the JSON); the run's
   progress lines go to ``full_likelihood.log`` beside the JSON.

Writes benchmarks/results/full_likelihood.json with the CPU model and flags and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from biaslens.machine import machine_facts

HERE = Path(__file__).resolve().parent


def full_texts() -> list[str]:
    """The sentences ``biaslens run --full`` scores (v1.0 built-in transcription, all rows)."""
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset

    return likelihood_rows(build_sentences(load_holistic_dataset()))["text"].astype(str).tolist()


def distinct_prefixes(token_rows) -> tuple[int, int]:
    """Nodes of the prefix trie over the token rows (each distinct prefix counted once), and
    how many of them predict a next token (have a child)."""
    trie: dict[tuple[int, int], int] = {}
    parents: set[int] = set()
    for row in token_rows:
        node = 0
        for tok in row:
            key = (node, tok)
            nxt = trie.get(key)
            if nxt is None:
                nxt = trie[key] = len(trie) + 1
            if node:
                parents.add(node)
            node = nxt
    return len(trie), len(parents)


def forward_rate(model, rows: int = 10, length: int = 128, repeats: int = 7) -> float:
    """Positions per second of a plain causal forward at the engine's batch shape (median of repeats)."""
    import torch

    ids = torch.randint(100, 20000, (rows, length), generator=torch.Generator().manual_seed(0))
    times = []
    with torch.inference_mode():
        model(input_ids=ids)  # warm-up
        for _ in range(repeats):
            t0 = time.perf_counter()
            model(input_ids=ids)
            times.append(time.perf_counter() - t0)
    times.sort()
    return rows * length / times[len(times) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=Path("/tmp/biaslens-full-run"))
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/biaslens-full-cache"))
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BIASLENS_THREADS", os.cpu_count() or 1)))
    ap.add_argument("--floor-only", action="store_true", help="count prefixes and time the forward pass; no run")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="stop the run after this many seconds (it resumes from --cache-dir next time)")
    ap.add_argument("--result", type=Path, default=HERE / "results" / "full_likelihood.json")
    args = ap.parse_args()
    os.environ["BIASLENS_THREADS"] = str(args.threads)

    import torch

    from biaslens.models import load_model

    torch.set_num_threads(args.threads)
    previous = json.loads(args.result.read_text()) if args.result.exists() else {}
    out: dict = {"machine": machine_facts(), "threads": args.threads, "load_average_before": os.getloadavg()}

    t0 = time.perf_counter()
    texts = full_texts()
    backend = load_model("smollm2-135m")
    tok = backend.tokenizer
    start = [tok.convert_tokens_to_ids(backend.info.start_token)] if backend.info.start_token else []
    unique = list(dict.fromkeys(texts))
    rows = (start + ids for ids in tok(unique, add_special_tokens=False)["input_ids"])
    prefixes, predicting = distinct_prefixes(rows)
    model = getattr(backend, "_eager_model", backend.model)
    # the body on every prefix; the output head (timed as the difference of the two rates) only
    # on the prefixes that predict a token, as the engine runs it
    body = forward_rate(model.get_decoder() if hasattr(model, "get_decoder") else model)
    whole = forward_rate(model)
    out["floor"] = {"sentences": len(texts), "unique_sentences": len(unique), "distinct_token_prefixes": prefixes,
                    "predicting_prefixes": predicting,
                    "body_positions_per_second": round(body, 1),
                    "forward_with_full_head_positions_per_second": round(whole, 1),
                    "body_only_floor_seconds": round(prefixes / body, 1),
                    "floor_seconds": round(prefixes / body + predicting * (1 / whole - 1 / body), 1),
                    "measure_seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(out["floor"]), flush=True)
    del backend

    if args.floor_only and "run" in previous:  # a new floor beside the run already measured
        out["run"] = {**previous["run"],
                      "ratio_to_floor": round(previous["run"]["wall_seconds_total"] / out["floor"]["floor_seconds"], 2)}
    if not args.floor_only:
        env = dict(os.environ, BIASLENS_CACHE_DIR=str(args.cache_dir), BIASLENS_THREADS=str(args.threads))
        cmd = [str(Path(sys.executable).with_name("biaslens")), "run", "--full", "--out", str(args.out_dir)]
        log_path = args.result.with_suffix(".log")
        resumed = args.cache_dir.exists()
        t1 = time.perf_counter()
        with open(log_path, "a", encoding="utf-8") as log:  # the run's own progress lines, kept for reading
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                code = proc.wait(timeout=args.time_limit)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = "stopped at --time-limit"
        wall = time.perf_counter() - t1
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        pieces = list(previous.get("run", {}).get("pieces", [])) if resumed else []
        pieces.append({"wall_seconds": round(wall, 1), "exit_code": code, "peak_rss_mb": round(peak_mb)})
        run = {"command": " ".join(["biaslens", *cmd[1:]]), "pieces": pieces,
               "wall_seconds_total": round(sum(p["wall_seconds"] for p in pieces), 1),
               "peak_rss_mb": max(p["peak_rss_mb"] for p in pieces)}
        run_json = args.out_dir / "run.json"
        if code == 0 and run_json.exists():
            record = json.loads(run_json.read_text())
            run["run_json_scoring"] = record.get("scoring")
            run["run_json_timings"] = record.get("timings")
        run["ratio_to_floor"] = round(run["wall_seconds_total"] / out["floor"]["floor_seconds"], 2)
        out["run"] = run
        out["load_average_after"] = os.getloadavg()
    args.result.parent.mkdir(parents=True, exist_ok=True)
    args.result.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
