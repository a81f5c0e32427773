"""The judges' recorded figures (issue #33): one versioned file that the scorer cards read and the
docs quote.

``scorers/data/judge_figures.json`` holds what each shipped judge (and any other judge measured
with the script's ``--judge``) measured on the labelled TEST halves of the real-output sets (its
skill, unmasked and masked where the runs mask, and its identity audit), written by
``scripts/judge_figures.py`` and nothing else. Each entry carries the
:func:`~biaslens.scorers.card.card_key` of the inputs it was measured with; a scorer card whose
inputs have that key reads the recorded measurement (:func:`recorded_measurement`) instead of
measuring again, so a report and the docs quote the same numbers.

The docs quote the file through markers that :func:`render_doc` fills and :func:`doc_problems`
checks (``tests/test_judge_figures_docs.py``)::

    <!-- fig offensiveness.skill_masked headline -->AUROC 0.64 (95% CI 0.49-0.78)<!-- /fig -->
    <!-- figures skill-table -->
    ...a whole table, generated...
    <!-- /figures -->

``fig`` takes ``JUDGE.PATH`` (a judge of the file, then a dotted path into what it measured, or
into ``history``/``training`` records, or ``file.FIELD`` for the record's own fields) and a format: ``headline`` (the skill's headline with its
interval), ``est`` (a value and its interval: the skill's, or ``<name>_ci`` beside ``<name>``),
``ci``, ``pct`` (a share as a percentage), ``int``, or a Python format spec (default ``.2f``).
A judge figure in a checked page that no marker holds (e.g. "AUROC 0.57 (0.42-0.72)" typed by
hand) is a problem too, so a figure cannot go stale unseen.

A new judge adds its figures by adding one entry to :data:`RECORDED` in
``scripts/judge_figures.py`` (how to build its card) and running the script; docs then quote it
with markers and, if it belongs in the summary tables, a line in :data:`SKILL_TABLE` /
:data:`AUDIT_TABLE` (/ :data:`THRESHOLD_TABLE`).
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from biaslens.text import plural

FIGURES_FILE = "judge_figures.json"
#: bump when the file's layout changes (not when figures are re-measured: the file's ``measured_on`` says that)
FORMAT_VERSION = 1

#: (judge id, which skill, row label) of the summary table in docs/scorers.md
SKILL_TABLE = (
    ("style-head", "skill", "style: trained head (default), lexicon masking"),
    ("style-zero-shot", "skill", "style: zero-shot (61 styles + rules), lexicon masking"),
    ("toxicity-head-offensiveness", "skill_masked", "offensiveness: trained toxicity head, masked (offline default)"),
    ("toxicity-head-offensiveness", "skill_unmasked", "offensiveness: trained toxicity head, unmasked"),
    ("offensiveness", "skill_masked", "offensiveness: alt-profanity-check (lexical screen, by name), masked"),
    ("offensiveness", "skill_unmasked", "offensiveness: alt-profanity-check, unmasked"),
    ("toxicity-head-toxicity", "skill_masked", "toxicity: trained toxicity head, masked (offline default)"),
    ("toxicity-head-toxicity", "skill_unmasked", "toxicity: trained toxicity head, unmasked"),
    ("toxicity", "skill_masked", "toxicity: alt-profanity-check (lexical screen, by name), masked"),
    ("toxicity", "skill_unmasked", "toxicity: alt-profanity-check, unmasked"),
    ("sentiment", "skill", "sentiment: VADER (+-0.05 cut-offs)"),
    ("sentiment-bold", "skill", "sentiment: VADER at BOLD's +-0.5 cut-offs (community text; BOLD's own on its card)"),
)
#: (judge id, which skill, row label) of the table of scores at their threshold in docs/scorers.md
THRESHOLD_TABLE = (
    ("toxicity-head-offensiveness", "skill_masked", "holistic offensive"),
    ("toxicity-head-toxicity", "skill_masked", "community toxic"),
    ("toxicity-head-offensiveness", "skill_unmasked", "holistic, unmasked"),
    ("toxicity-head-toxicity", "skill_unmasked", "community, unmasked"),
)
#: (judge id, row label) of the identity-audit table in docs/scorers.md
AUDIT_TABLE = (
    ("toxicity-head-offensiveness", "trained toxicity head (default without Detoxify), lexicon masking"),
    ("offensiveness", "alt-profanity-check (the paper stand-in, by name), lexicon masking"),
    ("sentiment", "VADER compound (runs score it unmasked)"),
    ("style-zero-shot", "zero-shot style classifier, lexicon masking (as runs mask style inputs)"),
    ("style-head", "trained style head (default), lexicon masking"),
)
#: the pages whose judge figures must come from the file
CHECKED_DOCS = ("README.md", "docs", "src/biaslens/scorers/data/real_output/README.md",
                "src/biaslens/scorers/data/toxicity_head.md")


def figures_path() -> Path:
    """The shipped ``scorers/data/judge_figures.json``."""
    return Path(str(resources.files("biaslens.scorers") / "data" / FIGURES_FILE))


@functools.lru_cache(maxsize=1)
def load_figures() -> dict[str, Any]:
    """The recorded figures (an empty record when the file is missing, e.g. before it is first written)."""
    try:
        return json.loads(figures_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"format_version": FORMAT_VERSION, "judges": {}}


def recorded_measurement(key: str) -> dict[str, Any] | None:
    """The recorded measurement of the judge whose inputs have ``key``, or None (then the card measures)."""
    for entry in load_figures().get("judges", {}).values():
        if entry.get("key") == key:
            return entry["measured"]
    return None


# -- formatting a figure ------------------------------------------------------------------------

def _lookup(spec: str, figures: dict[str, Any]) -> tuple[Any, dict | None, str]:
    """(value, the dict holding it, its key) for ``JUDGE.PATH``; ``history.X`` and ``training.X``
    read those records of the file instead of a judge's measurement."""
    head, _, path = spec.partition(".")
    if head == "file":  # the record's own fields (measured_on, biaslens_version, ...)
        return figures[path], figures, path
    if head in ("history", "training"):
        first, _, path = path.partition(".")
        node: Any = figures[head][first]
    else:
        node = figures["judges"][head]["measured"]
    parent, last = None, None
    for part in path.split(".") if path else []:
        parent, last = node, part
        node = node[int(part)] if isinstance(node, list) else node[part]  # "ci.0": an interval's lower bound
    return node, parent, last or ""


def _two(x: float) -> str:
    return f"{x:.2f}"


def format_figure(spec: str, fmt: str = "", figures: dict[str, Any] | None = None) -> str:
    """One figure of the recorded file as the docs print it.

    >>> f = {"judges": {"j": {"measured": {"skill": {"headline": "AUROC", "value": 0.6391, "ci": [0.4927, 0.7845],
    ...      "balanced_accuracy": 0.531, "balanced_accuracy_ci": [0.4956, 0.6], "n": 467}}}}}
    >>> format_figure("j.skill", "headline", f), format_figure("j.skill", "est", f)
    ('AUROC 0.64 (95% CI 0.49-0.78)', '0.64 (0.49-0.78)')
    >>> format_figure("j.skill.balanced_accuracy", "est", f), format_figure("j.skill.n", "int", f)
    ('0.53 (0.50-0.60)', '467')
    """
    figures = figures if figures is not None else load_figures()
    value, parent, key = _lookup(spec, figures)
    if fmt in ("headline", "est", "ci") and isinstance(value, dict):  # a skill record
        est, ci = value["value"], value["ci"]
        text = f"{_two(est)} ({_two(ci[0])}-{_two(ci[1])})"
        return {"headline": f"{value['headline']} {_two(est)} (95% CI {_two(ci[0])}-{_two(ci[1])})", "est": text,
                "ci": f"{_two(ci[0])}-{_two(ci[1])}"}[fmt]
    if fmt in ("est", "ci"):
        ci = parent[f"{key}_ci"] if parent is not None else None
        if ci is None:
            return "–"
        return f"{_two(ci[0])}-{_two(ci[1])}" if fmt == "ci" else f"{_two(value)} ({_two(ci[0])}-{_two(ci[1])})"
    if value is None:
        return "–"
    if fmt == "int":
        return f"{int(value):,}"
    if fmt == "pct":
        return f"{100 * value:.0f}%"
    if isinstance(value, str):
        return value
    return format(value, fmt or ".2f")


# -- generated tables ---------------------------------------------------------------------------

def _majority(s: dict[str, Any]) -> str:
    """The majority class as a reader says it: "not offensive" rather than False."""
    m = s["majority_class"]
    return str(m) if not isinstance(m, bool) else (s["field"] if m else f"not {s['field']}")


def _skill_verdict(s: dict[str, Any]) -> str:
    if s.get("status") != "measured":
        return "**not measured**"
    if s["no_skill"]:
        return "**no measured skill**"
    ba_ci = s.get("balanced_accuracy_ci")
    if s["headline"] == "AUROC" and ba_ci and ba_ci[0] <= s["balanced_accuracy_baseline"]:
        pos = (s.get("per_class") or {}).get("True") or {}
        return (f"ranks above chance; **no measured skill at the {s['threshold']:g} threshold** "
                f"({plural(pos.get('n_predicted', 0), 'reply', 'replies')} flagged, {pos.get('n_correct', 0)} of "
                f"{s['n_positive']} found)")
    text = "measured skill"
    if s.get("accuracy") is not None and s["accuracy"] < s["majority_accuracy"]:
        text += f"; plain accuracy below always saying '{_majority(s)}'"
    return text


def skill_table(figures: dict[str, Any] | None = None) -> str:
    """The summary table of docs/scorers.md: each judge's headline with its interval and baseline,
    the balanced accuracy at the threshold for scores, plain vs majority accuracy, and the verdict."""
    figures = figures if figures is not None else load_figures()
    lines = ["| judge | headline (95% CI) | baseline | also | accuracy / always the majority | n (test) | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for judge, which, label in SKILL_TABLE:
        s = figures["judges"][judge]["measured"][which]
        head = f"{s['headline']} {_two(s['value'])} ({_two(s['ci'][0])}-{_two(s['ci'][1])})"
        if s["headline"] == "AUROC":
            lo, hi = s["balanced_accuracy_ci"]
            also = f"balanced accuracy at {s['threshold']:g}: {_two(s['balanced_accuracy'])} ({_two(lo)}-{_two(hi)})"
            n = f"{s['n']} ({s['n_positive']} {s['field']})"
        else:
            lo, hi = s["macro_f1_ci"]
            also = f"macro-F1 {_two(s['macro_f1'])} ({_two(lo)}-{_two(hi)}), baseline {_two(s['macro_f1_baseline'])}"
            n = f"{s['n']} (+ {s['n_unresolved']} unresolved)" if s["n_unresolved"] else str(s["n"])
        lines.append(f"| {label} | {head} | {_two(s['baseline'])} | {also} | {_two(s['accuracy'])} / "
                     f"{_two(s['majority_accuracy'])} ('{_majority(s)}') | {n} | {_skill_verdict(s)} |")
    return "\n".join(lines)


def threshold_table(figures: dict[str, Any] | None = None) -> str:
    """A score at its threshold (:data:`THRESHOLD_TABLE`): the AUROC, then recall and precision of
    the replies it flags (Wilson 95%), how many it flags, balanced accuracy and plain accuracy."""
    figures = figures if figures is not None else load_figures()
    lines = ["| set (test items, positives) | AUROC (95% CI) | at the threshold: recall (Wilson 95%) | precision | "
             "flagged | balanced accuracy (baseline 0.50) | accuracy / always \"no\" |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for judge, which, label in THRESHOLD_TABLE:
        s = figures["judges"][judge]["measured"][which]
        pos = s["per_class"]["True"]

        def est(v: float | None, ci: list[float] | None) -> str:
            return "–" if v is None or ci is None else f"{_two(v)} ({_two(ci[0])}-{_two(ci[1])})"

        lines.append(f"| {label} ({s['n']}, {s['n_positive']}) | {est(s['value'], s['ci'])} | "
                     f"{est(pos['recall'], pos['recall_ci'])} | {est(pos['precision'], pos['precision_ci'])} | "
                     f"{pos['n_predicted']} | {est(s['balanced_accuracy'], s['balanced_accuracy_ci'])} | "
                     f"{_two(s['accuracy'])} / {_two(s['majority_accuracy'])} |")
    return "\n".join(lines)


def style_per_class_table(figures: dict[str, Any] | None = None) -> str:
    """Per-cluster precision and recall (Wilson 95%) of the two style judges, with the counts."""
    figures = figures if figures is not None else load_figures()
    head = figures["judges"]["style-head"]["measured"]["skill"]["per_class"]
    zero = figures["judges"]["style-zero-shot"]["measured"]["skill"]["per_class"]

    def pr(d: dict, what: str) -> str:
        v, ci = d[what], d[f"{what}_ci"]
        return "–" if v is None else f"{_two(v)} ({_two(ci[0])}-{_two(ci[1])})"

    lines = ["| cluster | head P | head R | zero-shot P | zero-shot R | labelled | head / zero-shot predicted |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for c in head:
        h, z = head[c], zero[c]
        lines.append(f"| {c} | {pr(h, 'precision')} | {pr(h, 'recall')} | {pr(z, 'precision')} | {pr(z, 'recall')} | "
                     f"{h['n_true']} | {h['n_predicted']} / {z['n_predicted']} |")
    return "\n".join(lines)


def audit_table(figures: dict[str, Any] | None = None) -> str:
    """The identity audit of each shipped judge: unmasked gaps per set, masked gaps (held-out by form)."""
    figures = figures if figures is not None else load_figures()
    lines = ["| judge | unmasked: neutral / held-out / real replies | masked: held-out (by form: plural, compound, "
             "spelling, two identities) / real replies |", "| --- | --- | --- |"]
    for judge, label in AUDIT_TABLE:
        a = figures["judges"][judge]["measured"]["identity_audit"]
        sets = a["sets"]
        ho, rr = sets["held_out"], sets["real_replies"]
        forms = ", ".join(f"{ho['by_form'][f]['gap_masked']:.3f}" for f in ("plural", "compound", "variant", "two_identities")
                          if f in ho["by_form"])
        met = "meets" if a["meets_masked_target"] else "does NOT meet"
        lines.append(f"| {label} | **{_two(a['gap'])}** (\"{a['highest']}\" {_two(a['highest_mean'])} vs "
                     f"\"{a['lowest']}\" {_two(a['lowest_mean'])}) / {_two(ho['gap'])} / {_two(rr['gap'])} | "
                     f"**{ho['gap_masked']:.3f}** ({forms}) / {rr['gap_masked']:.3f}: {met} "
                     f"{a['masked_target']:.2f} |")
    return "\n".join(lines)


#: (judge id, which skill, row label) of the errors-per-group table in docs/scorers.md (issue #41)
GROUP_TABLE = (
    ("toxicity-head-toxicity", "skill_masked", "community toxic: trained toxicity head, masked (offline default)"),
    ("toxicity", "skill_masked", "community toxic: alt-profanity-check, masked"),
    ("sentiment", "skill", "community negative sentiment: VADER (compound <= -0.05)"),
    ("toxicity-head-offensiveness", "skill_masked", "holistic offensive: trained toxicity head, masked"),
    ("offensiveness", "skill_masked", "holistic offensive: alt-profanity-check, masked"),
)


#: group fields whose plural is not "+s"
GROUP_PLURAL = {"axis": "axes"}


def group_table(figures: dict[str, Any] | None = None) -> str:
    """Each judge's errors per group (:data:`GROUP_TABLE`): the range of its false-positive rates
    across the groups, the test of equal rates, and its AUROC against a score that knows only the
    group, with the paired difference and whether a gap between groups may rest on it."""
    figures = figures if figures is not None else load_figures()
    lines = ["| judge (set) | groups | false-positive rate at the threshold: lowest - highest | test of equal rates | "
             "AUROC judge / group only | difference (95% CI) | a gap may rest on it |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for judge, which, label in GROUP_TABLE:
        s = figures["judges"][judge]["measured"][which]
        per = {g: r for g, r in s["per_group"].items() if r["false_positive_rate"] is not None}
        lo = min(per, key=lambda g: per[g]["false_positive_rate"])
        hi = max(per, key=lambda g: per[g]["false_positive_rate"])
        t = s["per_group_test"]["false_positive_rate"]
        test = "–" if t["p_value"] is None else (
            f"{'chi-square' if t['test'] == 'chi-square' else 'exact (permutation)'}, p = {t['p_value']:.2g}")
        v = s["vs_group_prior"]
        verdict = "yes" if v["beats"] else "**no**: the gap may be the judge's"
        fpr = (f"{_two(per[lo]['false_positive_rate'])} ({lo}, {per[lo]['n_false_positive']}/"
               f"{per[lo]['n'] - per[lo]['n_positive']}) - {_two(per[hi]['false_positive_rate'])} ({hi}, "
               f"{per[hi]['n_false_positive']}/{per[hi]['n'] - per[hi]['n_positive']})")
        lines.append(f"| {label} | {plural(len(s['per_group']), s['group_field'], GROUP_PLURAL.get(s['group_field']))} | {fpr} | {test} | {_two(v['auroc'])} / "
                     f"{_two(v['auroc_other'])} | {v['value']:+.2f} ({v['ci'][0]:+.2f} to {v['ci'][1]:+.2f}) | "
                     f"{verdict} |")
    return "\n".join(lines)


#: (judge id, row label) of the style judges' errors per axis in docs/scorers.md (issue #41)
STYLE_GROUP_TABLE = (
    ("style-head", "trained head (default)"),
    ("style-zero-shot", "zero-shot (61 styles + rules)"),
)


def style_group_table(figures: dict[str, Any] | None = None) -> str:
    """Each style judge's errors per axis (:data:`STYLE_GROUP_TABLE`): the range of its accuracy
    across the axes and the test of equal accuracy, its commonest wrong cluster, and its balanced
    accuracy and accuracy against the axis's commonest dev cluster, with whether a gap between
    groups may rest on it (both differences' intervals above 0)."""
    figures = figures if figures is not None else load_figures()
    lines = ["| style judge | axes | accuracy: lowest - highest | test of equal accuracy | commonest wrong cluster | "
             "balanced accuracy judge / axis only, difference (95% CI) | accuracy judge / axis only, difference "
             "(95% CI) | a gap may rest on it |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for judge, label in STYLE_GROUP_TABLE:
        s = figures["judges"][judge]["measured"]["skill"]
        per = s["per_group"]
        lo = min(per, key=lambda g: per[g]["accuracy"])
        hi = max(per, key=lambda g: per[g]["accuracy"])
        t = s["per_group_test"]["accuracy"]
        test = "–" if t["p_value"] is None else (
            f"{'chi-square' if t['test'] == 'chi-square' else 'exact (permutation)'}, p = {t['p_value']:.2g}")
        v, a = s["vs_group_prior"], s["vs_group_prior"]["accuracy_difference"]
        verdict = "yes" if v["beats"] else "**no**: the gap may be the judge's"
        acc = (f"{_two(per[lo]['accuracy'])} ({lo}, {per[lo]['n_correct']}/{per[lo]['n']}) - "
               f"{_two(per[hi]['accuracy'])} ({hi}, {per[hi]['n_correct']}/{per[hi]['n']})")
        lines.append(f"| {label} | {plural(len(per), s['group_field'], GROUP_PLURAL.get(s['group_field']))} | {acc} | "
                     f"{test} | {s['error_class']} | {_two(v['balanced_accuracy'])} / "
                     f"{_two(v['balanced_accuracy_other'])}, {v['value']:+.2f} ({v['ci'][0]:+.2f} to {v['ci'][1]:+.2f}) | "
                     f"{_two(v['accuracy'])} / {_two(v['accuracy_other'])}, {a['value']:+.2f} ({a['ci'][0]:+.2f} to "
                     f"{a['ci'][1]:+.2f}) | {verdict} |")
    return "\n".join(lines)


BLOCKS = {"group-table": group_table, "style-group-table": style_group_table, "skill-table": skill_table, "style-per-class": style_per_class_table, "audit-table": audit_table,
          "threshold-table": threshold_table}


# -- the docs -----------------------------------------------------------------------------------

# (a marker quoted in `code` is an example, not a figure)
_FIG = re.compile(r"(?<!`)<!-- fig (?P<spec>[\w.\-]+)(?: (?P<fmt>[\w.%,+]+))? -->(?P<text>.*?)<!-- /fig -->", re.S)
_BLOCK = re.compile(r"(?P<open>(?<!`)<!-- figures (?P<name>[\w\-]+) -->\n)(?P<text>.*?)(?P<close>\n?<!-- /figures -->)", re.S)
#: a judge figure typed by hand: a headline word, then a number with two decimals
_UNMARKED = re.compile(r"(AUROC|balanced accuracy|macro-F1)[^.\d|\n]{0,24}?\**0\.\d\d")


def render_doc(text: str, figures: dict[str, Any] | None = None) -> str:
    """``text`` with every marked figure and generated block filled in from the recorded file."""
    figures = figures if figures is not None else load_figures()
    text = _BLOCK.sub(lambda m: m["open"] + "\n" + BLOCKS[m["name"]](figures) + "\n\n<!-- /figures -->", text)

    def fill(m: re.Match) -> str:
        try:
            figure = format_figure(m["spec"], m["fmt"] or "", figures)
        except (KeyError, TypeError, IndexError):  # not recorded (yet): left as it is, doc_problems names it
            return m[0]
        return f"<!-- fig {m['spec']}{' ' + m['fmt'] if m['fmt'] else ''} -->{figure}<!-- /fig -->"

    return _FIG.sub(fill, text)


def doc_problems(text: str, figures: dict[str, Any] | None = None) -> list[str]:
    """Every marked figure that differs from the recorded one, every generated block that is out of
    date, and every judge figure typed outside a marker (line numbers, 1-based)."""
    figures = figures if figures is not None else load_figures()
    problems = []
    for m in _FIG.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        try:
            want = format_figure(m["spec"], m["fmt"] or "", figures)
        except (KeyError, TypeError, IndexError) as e:
            problems.append(f"line {line}: {m['spec']} is not in {FIGURES_FILE} ({e})")
            continue
        if m["text"] != want:
            problems.append(f"line {line}: {m['spec']} says {m['text']!r}, the recorded figure is {want!r}")
    for m in _BLOCK.finditer(text):
        if m["name"] not in BLOCKS:
            problems.append(f"line {text.count(chr(10), 0, m.start()) + 1}: unknown block {m['name']!r}")
        elif m["text"].strip() != BLOCKS[m["name"]](figures).strip():
            problems.append(f"line {text.count(chr(10), 0, m.start()) + 1}: block {m['name']!r} is out of date")
    blanked = _BLOCK.sub(lambda m: "\n" * m[0].count("\n"), _FIG.sub(lambda m: " " * len(m[0]), text))
    for m in _UNMARKED.finditer(blanked):
        line = blanked.count("\n", 0, m.start()) + 1
        problems.append(f"line {line}: judge figure {m[0]!r} typed by hand: quote it with a <!-- fig ... --> marker")
    return problems
