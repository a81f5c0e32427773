"""Benchmark: `biaslens run bbq` and `biaslens run bold` at their default sizes on the embedded model.

Each suite runs once with an empty call cache (BBQ: about 240 items of each of the 6 shipped
categories, 3 answer options scored per item; BOLD: about 500 prompts, one sampled continuation of
up to 32 tokens each, then VADER, the default toxicity judge and its scorer card). Records the
wall-clock time, the phases from run.json, the calls per second, the machine and the load average.

Usage: python benchmarks/bench_bbq_bold.py [--suites bbq,bold]
Results: benchmarks/results/bbq_bold.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from biaslens.machine import describe_machine, machine_facts

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suites", default="bbq,bold", help="comma-separated suites (default bbq,bold)")
    args = ap.parse_args(argv)

    from biaslens.api import run

    out = HERE / "results" / "bbq_bold.json"
    # a run of some suites keeps the others' earlier figures
    previous = json.loads(out.read_text()) if out.is_file() else {}
    results = {"machine": machine_facts(), "machine_line": describe_machine(), "runs": previous.get("runs", {})}
    with tempfile.TemporaryDirectory() as tmp:
        for suite in args.suites.split(","):
            load_before = os.getloadavg()[0]
            t0 = time.perf_counter()
            res = run(suite=suite, out=str(Path(tmp) / suite), cache_dir=str(Path(tmp) / f"cache-{suite}"))
            wall = time.perf_counter() - t0
            record = json.loads((Path(res.out) / "run.json").read_text())
            calls = record.get("scoring") or record.get("generation") or {}
            results["runs"][suite] = {
                "wall_seconds": round(wall, 1), "timings": record.get("timings"), "size": record.get("size"),
                "calls": {k: calls.get(k) for k in ("n_sentences", "n_unique", "n_generations", "computed",
                                                    "seconds", "sentences_per_second", "tokens_per_second")
                          if k in calls},
                "load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2),
                "verdict": res.metrics.get("verdict")}
            print(f"{suite}: {wall:.0f} s", flush=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
