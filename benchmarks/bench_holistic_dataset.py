"""Benchmark: generate the full HolisticBias v1.0 sentence table from the official files.

Each measurement runs in a fresh subprocess (imports included) and reports wall time and peak RSS
(``ru_maxrss`` of the child). Two entry points are measured: ``build_sentence_table`` (Arrow,
no pandas import) and ``build_sentences`` (pandas DataFrame). Results go to
``benchmarks/results/holistic_dataset.json``.

Usage: python benchmarks/bench_holistic_dataset.py [--repeats N] [--dataset-dir DIR]
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
DEFAULT_DIR = Path(os.environ.get("BIASLENS_REFERENCE_DIR", HERE.parents[1] / "shared" / "reference")) / "holistic_bias" / "v1.0"
TARGET_SECONDS, TARGET_MB = 1.2, 145.0
AUTHORS = {"seconds": 3.8, "peak_rss_mb": 440}

CHILD = """
import sys, time, json, resource
t0 = time.perf_counter()
from biaslens.methods.holistic.dataset import load_holistic_dataset, build_sentence_table, build_sentences
ds = load_holistic_dataset(sys.argv[2])
t1 = time.perf_counter()
out = build_sentence_table(ds) if sys.argv[1] == "arrow" else build_sentences(ds)
t2 = time.perf_counter()
print(json.dumps({"rows": len(out), "load_s": t1 - t0, "generate_s": t2 - t1, "total_in_process_s": t2 - t0,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def run_once(mode: str, dataset_dir: Path) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, str(dataset_dir)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    info["wall_s"] = wall  # whole subprocess: interpreter start + imports + load + generate
    info["peak_rss_mb"] = info.pop("maxrss_kb") / 1024
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dataset-dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args()
    if not args.dataset_dir.is_dir():
        sys.exit(f"official v1.0 files not found at {args.dataset_dir} (set BIASLENS_REFERENCE_DIR)")
    results = {}
    for mode in ("arrow", "pandas"):
        runs = [run_once(mode, args.dataset_dir) for _ in range(args.repeats)]
        best = min(runs, key=lambda r: r["wall_s"])
        results[mode] = {
            "rows": best["rows"],
            "wall_s_best": round(best["wall_s"], 3),
            "wall_s_all": [round(r["wall_s"], 3) for r in runs],
            "generate_s_best": round(min(r["generate_s"] for r in runs), 3),
            "peak_rss_mb_max": round(max(r["peak_rss_mb"] for r in runs), 1),
        }
        results[mode]["meets_target"] = (
            results[mode]["wall_s_best"] <= TARGET_SECONDS and results[mode]["peak_rss_mb_max"] <= TARGET_MB
        )
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    report = {
        "benchmark": "holistic_dataset",
        "dataset": str(args.dataset_dir),
        "target": {"seconds": TARGET_SECONDS, "peak_rss_mb": TARGET_MB},
        "authors_generator": AUTHORS,
        "results": results,
        "rusage_children_maxrss_mb": round(children, 1),
        "machine": machine_facts(),
    }
    out = HERE / "results" / "holistic_dataset.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
