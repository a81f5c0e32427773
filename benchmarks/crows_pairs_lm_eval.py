"""CrowS-Pairs through lm-evaluation-harness and through biaslens, side by side, on the embedded model.

lm-eval's ``crows_pairs_english`` task reads the Hugging Face dataset
``jannalu/crows_pairs_multilingual`` (the revised English pairs of Névéol et al. 2022), which
needs the Hub. This script runs lm-eval's own task definition (its ``doc_to_choice`` and
``process_results``, imported from lm-eval) on the original 1,508 pairs biaslens ships, read
from the CSV as a local dataset; the task keeps lm-eval's name, so the samples file is the one
``--log_samples`` writes for ``crows_pairs_english``. lm-eval is given biaslens's start token
as its prefix token (``prefix_token_id``; its default would be the tokenizer's BOS, SmolLM2's
chat marker ``<|im_start|>``). Then:

(a) lm-eval's own aggregates: ``pct_stereotype`` and ``likelihood_diff`` (the mean of |difference|);
(b) ``biaslens run crows-pairs --from-lm-eval SAMPLES``: the same samples through biaslens's statistics;
(c) ``biaslens run crows-pairs -m smollm2-135m``: biaslens's own scoring.

    python benchmarks/crows_pairs_lm_eval.py [--work DIR]

Writes benchmarks/results/crows_pairs_lm_eval.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _task_folder(folder: Path, csv: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "utils.py").write_text("from lm_eval.tasks.crows_pairs.utils import doc_to_choice, process_results  # noqa: F401\n")
    (folder / "crows_pairs_english.yaml").write_text(
        "task: crows_pairs_english\n"
        "dataset_path: csv\n"
        "dataset_kwargs:\n"
        "  data_files:\n"
        f"    test: {json.dumps(str(csv))}\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        'doc_to_text: ""\n'
        "doc_to_target: 0\n"
        "doc_to_choice: !function utils.doc_to_choice\n"
        'target_delimiter: ""\n'
        "process_results: !function utils.process_results\n"
        "metric_list:\n"
        "  - metric: likelihood_diff\n    aggregation: mean\n    higher_is_better: false\n"
        "  - metric: pct_stereotype\n    aggregation: mean\n    higher_is_better: false\n"
        "metadata:\n  version: 1.0\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None, help="folder for lm-eval's output [default a temporary one]")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "crows_pairs_lm_eval.json")
    args = parser.parse_args()

    import lm_eval
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    import biaslens
    from biaslens.machine import machine_facts
    from biaslens.methods.crows_pairs.dataset import BUILTIN_FILE
    from biaslens.models.embedded import embedded_model_dir

    work = args.work or Path(tempfile.mkdtemp(prefix="crows-lm-eval-"))
    _task_folder(work / "task", BUILTIN_FILE)
    tracker = EvaluationTracker(output_path=str(work / "lm"))
    t0 = time.perf_counter()
    results = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={embedded_model_dir()},prefix_token_id=0,dtype=float32",
        tasks=["crows_pairs_english"], task_manager=TaskManager(include_path=str(work / "task")), device="cpu",
        batch_size=64, log_samples=True, evaluation_tracker=tracker)
    lm_seconds = time.perf_counter() - t0
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    tracker.save_results_samples(task_name="crows_pairs_english", samples=samples["crows_pairs_english"])
    (path,) = (work / "lm").rglob("samples_crows_pairs_english_*.jsonl")
    agg = results["results"]["crows_pairs_english"]

    imported = biaslens.run(suite="crows-pairs", out=str(work / "imported"),
                            crows_pairs={"from_lm_eval": str(path), "tokenizer": "smollm2-135m"})
    t0 = time.perf_counter()
    own = biaslens.run(suite="crows-pairs", model="smollm2-135m", out=str(work / "own"), use_cache=False)
    own_seconds = time.perf_counter() - t0

    def figures(m: dict) -> dict:
        return {"metric_score": m["authors"]["metric_score"], "stereo_score": m["authors"]["stereo_score"],
                "antistereo_score": m["authors"]["antistereo_score"], "neutral": m["authors"]["neutral"],
                "share_ci": [m["share"]["ci_low"], m["share"]["ci_high"]], "mean_diff": m["mean_diff"]["mean"],
                "mean_diff_ci": [m["mean_diff"]["ci_low"], m["mean_diff"]["ci_high"]],
                "mean_abs_diff": m["mean_abs_diff"], "n": m["authors"]["n"]}

    report = {
        "what": "CrowS-Pairs (1,508 original pairs) on SmolLM2-135M-Instruct (embedded, float32, CPU): lm-eval's "
                "crows_pairs_english task definition on the shipped CSV vs biaslens",
        "lm_eval": {"version": lm_eval.__version__ if hasattr(lm_eval, "__version__") else None,
                    "pct_stereotype": 100 * agg["pct_stereotype,none"],
                    "pct_stereotype_stderr": 100 * agg.get("pct_stereotype_stderr,none", float("nan")),
                    "likelihood_diff": agg["likelihood_diff,none"],
                    "likelihood_diff_stderr": agg.get("likelihood_diff_stderr,none"),
                    "model_args": "prefix_token_id=0 (<|endoftext|>), dtype=float32", "seconds": round(lm_seconds, 1)},
        "biaslens_from_lm_eval_samples": figures(imported.metrics),
        "biaslens_own_scoring": figures(own.metrics) | {"seconds": round(own_seconds, 1)},
        "machine": machine_facts(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
