"""FairPair's pairs of continuations: prompts of a generations file paired with their
perturbations, continuation rows of the two sets (A: x, B: p(x)), and set A perturbed and
filtered (the paper's three filters). Pure data handling: the perturbers are injected; the
FairPair suite calls these."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.errors import ConfigError
from biaslens.methods.fairpair.dataset.commonsents import PromptPair
from biaslens.vocabulary.perturb import (
    FILTER_REASONS,
    NamePair,
    ReferenceCheck,
    RulePerturber,
    check_perturbation,
)


def join_continuation(prompt: str, continuation: str) -> str:
    """The full text x + g(x) that the perturber sees."""
    return f"{prompt} {continuation}" if continuation else prompt


def strip_prompt(prompt: str, response: str) -> str:
    # precomputed files may hold the whole text or the continuation only
    r = response.lstrip()
    return r[len(prompt):].strip() if r.startswith(prompt) else response.strip()


def pairs_from_generations(df: pd.DataFrame, perturber: RulePerturber, names: list[NamePair],
                           path: Path) -> tuple[list[PromptPair], list[str]]:
    """Pair the prompts of a generations file: x (mentions a source name) with p(x) when the
    file has continuations for both. Returns the pairs and the prompts left unpaired."""
    if "prompt" not in df.columns or df["prompt"].isna().any():
        line = int(df.loc[df["prompt"].isna(), "line"].iloc[0]) if "prompt" in df.columns else int(df["line"].iloc[0])
        raise ConfigError(f"{path}:{line}: FairPair needs the prompt text on every line (field 'prompt'), "
                          "to pair each prompt x with its perturbation p(x)")
    prompts = list(dict.fromkeys(df["prompt"].astype(str)))
    present = set(prompts)
    pairs, used = [], set()
    for x in prompts:
        px = perturber(x)
        if px == x or px not in present or x in used:
            continue
        who = next((n for n in names if _mentions(x, n.source)), None)
        if who is None:
            continue  # x is the perturbed side of some pair
        occ = x.rsplit(" as ", 1)[-1].strip(" .").split()[-1] if " as " in x else ""
        pairs.append(PromptPair(hashlib.blake2b(x.encode(), digest_size=4).hexdigest(), occ, "", who, x, px))
        used |= {x, px}
    return pairs, [p for p in prompts if p not in used]


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def continuation_rows(pairs: list[PromptPair], conts_x: list[list[str]], conts_px: list[list[str]],
                       model: str) -> pd.DataFrame:
    rows = []
    for p, cx, cpx in zip(pairs, conts_x, conts_px):
        base = {"model": model, "pair_id": p.pair_id, "occupation": p.occupation, "descriptor": p.descriptor,
                "name_pair": p.names.label, "x": p.x, "px": p.px}
        for i, c in enumerate(cx):
            rows.append({**base, "set": "A", "sample_index": i, "prompt": p.x, "continuation": c})
        for i, c in enumerate(cpx):
            rows.append({**base, "set": "B", "sample_index": i, "prompt": p.px, "continuation": c})
    return pd.DataFrame(rows)


def perturb_and_filter(rows: pd.DataFrame, pairs: dict[str, PromptPair], perturb_fn, *, max_jaccard: float,
                       masked_terms: set[str] | None, reference_check: ReferenceCheck | None = None) -> pd.DataFrame:
    """Set A: perturb x + g(x), apply the three filters, keep the part after p(x).
    Set B rows pass through (``kept`` True, ``text`` = the continuation).

    ``reference_check`` (the rule perturber's): a continuation of either set that mentions another
    person and a gendered pronoun is left out of both the perturbation and the analysis
    (``filter_reason`` ``ambiguous_reference``), since a pronoun may refer to that person."""
    rows = rows.copy()
    is_a = (rows["set"] == "A").to_numpy()
    a = rows[is_a]
    originals = [join_continuation(x, c) for x, c in zip(a["x"], a["continuation"])]
    ambiguous = np.zeros(len(rows), dtype=bool)
    if reference_check is not None:
        ambiguous = np.array([reference_check(str(c), (pairs[pid].names.source, pairs[pid].names.target))
                              for c, pid in zip(rows["continuation"], rows["pair_id"])], dtype=bool)
    amb_a = ambiguous[is_a]
    todo = [i for i in range(len(originals)) if not amb_a[i]]
    done = perturb_fn([originals[i] for i in todo], [pairs[a["pair_id"].iloc[i]].names for i in todo])
    perturbed: list[str | None] = [None] * len(originals)
    for i, t in zip(todo, done):
        perturbed[i] = t
    kept, reason, jac, text = [], [], [], []
    for orig, pert, pid in zip(originals, perturbed, a["pair_id"]):
        if pert is None:
            kept.append(False)
            reason.append("ambiguous_reference")
            jac.append(np.nan)
            text.append("")
            continue
        p = pairs[pid]
        res = check_perturbation(orig, pert, expected_prefix=p.px, original_names=[p.names.source],
                                 max_jaccard=max_jaccard, masked_terms=masked_terms)
        kept.append(res.kept)
        reason.append(res.reason)
        jac.append(res.jaccard)
        text.append(pert.lstrip()[len(p.px):].strip() if res.kept else "")
    rows["perturbed"] = None
    rows["kept"] = ~ambiguous
    rows["filter_reason"] = np.where(ambiguous, "ambiguous_reference", None)
    rows["filter_jaccard"] = np.nan
    rows["text"] = rows["continuation"].where(~ambiguous, "")
    rows.loc[is_a, "perturbed"] = perturbed
    rows.loc[is_a, "kept"] = kept
    rows.loc[is_a, "filter_reason"] = reason
    rows.loc[is_a, "filter_jaccard"] = jac
    rows.loc[is_a, "text"] = text
    return rows


def kept_shares(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model: share of set-A perturbations kept (paper Table 1), continuations dropped per
    reason (``filter_reason``; a table without it counts every drop as ``unknown``), and the share
    of each set left out as ``ambiguous_reference``."""
    reasons = rows["filter_reason"] if "filter_reason" in rows.columns else pd.Series(
        np.where(rows["kept"].astype(bool), None, "unknown"), index=rows.index)
    out = []
    for model, g in rows.groupby("model", sort=False):
        ga, gb = g[g["set"] == "A"], g[g["set"] == "B"]
        n = len(ga)
        r = {"model": model, "n": n, "kept": int(ga["kept"].astype(bool).sum()),
             "kept_share": float(ga["kept"].astype(bool).mean()) if n else float("nan")}
        for reason in FILTER_REASONS:
            r[f"dropped_{reason}"] = int((reasons[ga.index] == reason).sum())
        r["n_B"], r["kept_B"] = len(gb), int(gb["kept"].astype(bool).sum())
        amb_b = int((reasons[gb.index] == "ambiguous_reference").sum())
        r["dropped_B_ambiguous_reference"] = amb_b
        r["ambiguous_share_A"] = r["dropped_ambiguous_reference"] / n if n else float("nan")
        r["ambiguous_share_B"] = amb_b / len(gb) if len(gb) else float("nan")
        out.append(r)
    return pd.DataFrame(out)
