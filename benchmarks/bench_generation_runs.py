"""End-to-end time of the default generation runs, this tree against an earlier one, side by
side in one run on this machine (issue #16's "3x faster end to end" target).

    python benchmarks/bench_generation_runs.py --before PATH [--runs holistic,community] [--repeat 1]

``--before``: the ``src`` folder of an earlier checkout (e.g. ``git worktree add /tmp/before
7b9529c`` for the code before #16, then ``--before /tmp/before/src``). Each run is a fresh
process of ``python -m biaslens.cli run ...`` with ``--no-cache`` (nothing is reused between
the two trees), the same Python and packages, one tree at a time on ``PYTHONPATH``. Reads
each run's ``run.json`` (its timings, generated tokens/s, peak RSS) and writes
``benchmarks/results/generation_runs.json`` with the CPU model and flags.
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

from biaslens.machine import machine_facts

HERE = Path(__file__).resolve().parent
TREE = HERE.parent / "src"

#: the runs the issue names, as a new user starts them
RUNS = {
    "holistic": ["holistic-generation", "--sample", "50"],
    "community": ["community", "--n", "5"],
}


def generation_seconds(timings: dict | None) -> float:
    """Seconds in generation (community times each model as ``generation:<name>``)."""
    return sum(v for k, v in (timings or {}).items() if k == "generation" or k.startswith("generation:"))


def one_run(src: Path, args: list[str], out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "biaslens.cli", "run", *args, "--no-cache", "--out", str(out)],
                          env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} with {src} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    record = json.loads((out / "run.json").read_text())
    # a load average above the benchmark's own process says something else was running
    return {"seconds_end_to_end": round(seconds, 1), "load_average_before": round(load, 2),
            "load_average_after": round(os.getloadavg()[0], 2), "timings": record.get("timings"),
            "peak_rss_mb": record.get("peak_rss_mb"), "generation": record.get("generation")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="src folder of the earlier checkout")
    ap.add_argument("--runs", default="holistic,community")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "generation_runs.json")
    args = ap.parse_args()
    before = args.before.resolve()
    commit = subprocess.run(["git", "-C", str(before), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in [r.strip() for r in args.runs.split(",") if r.strip()]:
            row = {}
            for label, src in (("before", before), ("now", TREE)):
                print(f"{name}: {label} ...", flush=True)
                row[label] = one_run(src, RUNS[name], Path(tmp) / f"{name}-{label}")
            row["speedup_end_to_end"] = round(row["before"]["seconds_end_to_end"] / row["now"]["seconds_end_to_end"], 2)
            gen_before, gen_now = (generation_seconds(row[k]["timings"]) for k in ("before", "now"))
            if gen_before and gen_now:
                row["speedup_generation"] = round(gen_before / gen_now, 2)
            results[name] = row
            print(f"{name}: {row['before']['seconds_end_to_end']} s -> {row['now']['seconds_end_to_end']} s "
                  f"({row['speedup_end_to_end']}x)", flush=True)
    doc = {"benchmark": "generation_runs", "commands": {k: ["biaslens", "run", *v, "--no-cache"] for k, v in RUNS.items()},
           "before_commit": commit, "results": results, "machine": machine_facts()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
