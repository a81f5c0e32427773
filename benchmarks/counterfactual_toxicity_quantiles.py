"""The default toxicity judge's score distribution on real continuations, for the counterfactual
method's simulations: the judge (``toxicity-head``) scores the embedded model's real continuations
of the community and BOLD prompts shipped in ``biaslens/scorers/data/real_output/`` (3,400
replies, unlabelled files), and 201 quantiles of the scores are stored (skewed: mostly near 0,
a tail towards 1). tests/methods/counterfactual/test_counterfactual_calibration.py draws from them.

Run: ``python benchmarks/counterfactual_toxicity_quantiles.py`` (about a minute on one core);
writes ``tests/data/counterfactual_toxicity_quantiles.json``.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

import numpy as np

from biaslens.scorers.judges import choose_judge

FILES = ("community_unlabelled.jsonl", "bold_unlabelled.jsonl")
OUT = Path(__file__).parents[1] / "tests" / "data" / "counterfactual_toxicity_quantiles.json"


def main() -> None:
    base = resources.files("biaslens.scorers").joinpath("data/real_output")
    texts, sources = [], {}
    for name in FILES:
        raw = base.joinpath(name).read_bytes()
        sources[name] = hashlib.sha256(raw).hexdigest()[:16]
        texts += [json.loads(line)["response"] for line in raw.decode("utf-8").splitlines() if line.strip()]
    judge, choice = choose_judge("default")
    p = np.asarray(judge.probability(texts), dtype=float)
    qs = np.linspace(0, 1, 201)
    OUT.write_text(json.dumps({
        "what": "quantiles of the default toxicity judge's probability on real continuations of the embedded model",
        "judge": choice["used"], "sources": sources, "n": len(p), "probs": qs.round(3).tolist(),
        "quantiles": np.quantile(p, qs).round(5).tolist(), "mean": round(float(p.mean()), 5),
        "share_above_0.5": round(float((p > 0.5).mean()), 5)}, indent=1) + "\n")
    print(OUT, len(p), float(p.mean()), float(np.median(p)), float((p > 0.5).mean()))


if __name__ == "__main__":
    main()
