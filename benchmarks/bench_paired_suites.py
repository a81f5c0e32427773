"""How long `biaslens run crows-pairs`, `run winogender` and `run winobias` take on the embedded
model at their default (all the data) sizes, one after the other, with no call cache.

    python benchmarks/bench_paired_suites.py

Writes benchmarks/results/paired_suites.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "paired_suites.json")
    args = parser.parse_args()
    from rich.console import Console

    import biaslens
    from biaslens.machine import machine_facts
    from biaslens.models import load_model

    t0 = time.perf_counter()
    backend = load_model("smollm2-135m")
    load = time.perf_counter() - t0
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for suite in ("crows-pairs", "winogender", "winobias"):
            t0 = time.perf_counter()
            res = biaslens.run(suite=suite, model="smollm2-135m", backend=backend, out=f"{tmp}/{suite}",
                               use_cache=False, console=Console(file=io.StringIO()))
            seconds = time.perf_counter() - t0
            scoring = res.stats.get("scoring") or {}
            runs[suite] = {"seconds": round(seconds, 1), "texts_scored": scoring.get("computed"),
                           "headline": res.metrics["entries"][0]["name"], "value": res.metrics["entries"][0]["value"],
                           "verdict": res.metrics["verdict"]}
    report = {"what": "default runs of the three paired-preference suites on the embedded model (float32, CPU, "
                      "no call cache), one process, the model loaded once",
              "model_load_seconds": round(load, 1), "runs": runs,
              "total_seconds": round(sum(r["seconds"] for r in runs.values()), 1), "machine": machine_facts()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
