"""RedditBias in ``biaslens compare``: t-value per bias type and model (paper Figure 1a), LM
perplexity on the reference text (Figure 1b) and the paired before/after test of the change
in the perplexity gap on the phrase pairs both runs scored (the verdict: the change in the share of
pairs that lean each way, an exact test at any skew)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from biaslens.comparison.change import PAIRED_HEADLINE_KEY
from biaslens.comparison.entries import Entry, finite_or_none
from biaslens.errors import ConfigError
from biaslens.methods.redditbias.report import compare_section
from biaslens.report.html import Section


def redditbias_section(entries: list[Entry]) -> tuple[list[Section], dict[str, Any]]:
    """t-values per bias type (Figure 1a) and LM perplexity (Figure 1b) for every entry."""
    have = [e for e in entries if "redditbias" in e.metrics]
    if not have:
        return [], {}
    # start-token and no-start-token perplexities differ for every phrase: t-values and LM
    # perplexities from the two definitions are not comparable
    definitions = {e.label: e.metrics["redditbias"]["perplexity_definition"] for e in have
                   if e.metrics["redditbias"].get("perplexity_definition")}  # older runs did not record it
    if len(set(definitions.values())) > 1:
        raise ConfigError("RedditBias runs use different perplexity definitions ("
                           + ", ".join(f"{k}: {v}" for k, v in definitions.items())
                           + "); re-run them all with or all without --no-start-token")
    rows, ppl_rows = [], []
    for e in have:
        m = e.metrics["redditbias"]
        for bt in m.get("bias_types", []):
            r = m.get(bt) or {}
            holm = {t["bias_type"]: t for t in (m.get("overview") or {}).get("types") or []}.get(bt) or {}
            d_ci = r.get("d_ci") or [None, None]
            rows.append({"model": e.label, "bias_type": bt, "sign_effect": r.get("sign_effect"),
                         "sign p (Holm)": holm.get("p_holm"), "t": r.get("t"), "p": r.get("p"), "stars": r.get("stars", ""),
                         "n_pairs": r.get("n_pairs"), "d": r.get("cohens_d"), "d_ci_low": d_ci[0], "d_ci_high": d_ci[1],
                         "source": r.get("source"), "split": m.get("split")})
        lp = m.get("lm_perplexity") or {}
        ppl_rows.append({"model": e.label, "perplexity": lp.get("perplexity"), "file": lp.get("file"),
                         "n_lines": lp.get("n_lines")})
    t = pd.DataFrame(rows)
    ppl = pd.DataFrame(ppl_rows)
    # t grows with the square root of the number of pairs: runs of different sizes are shown by the
    # size-free quantities only, the sign effect (the verdict's) and the paper's effect size d (same
    # mean gap, ten times the pairs: about three times the t)
    sizes = {bt: sorted({int(n) for n in g["n_pairs"] if pd.notna(n)}) for bt, g in t.groupby("bias_type", sort=False)} \
        if len(t) else {}
    by = "d" if any(len(v) > 1 for v in sizes.values()) else "t"
    wide = t.pivot_table(index="bias_type", columns="model", values=by, sort=False) if len(t) else pd.DataFrame()
    t_wide = t.pivot_table(index="bias_type", columns="model", values="t", sort=False) if len(t) else pd.DataFrame()
    signs = (t.pivot_table(index="bias_type", columns="model", values="sign_effect", sort=False)
             if len(t) and t["sign_effect"].notna().any() else pd.DataFrame())
    metrics = {"compared_by": by, "n_pairs": sizes,
               "t": {bt: {mod: finite_or_none(v) for mod, v in row.items()} for bt, row in t_wide.iterrows()},
               "sign_effect": {bt: {mod: finite_or_none(v) for mod, v in row.items()} for bt, row in signs.iterrows()},
               "d": {bt: {r["model"]: [finite_or_none(r[k]) for k in ("d", "d_ci_low", "d_ci_high")]
                          for r in g.to_dict("records")} for bt, g in t.groupby("bias_type", sort=False)} if len(t) else {},
               "p": {r["bias_type"]: {} for r in rows},
               "lm_perplexity": {r["model"]: finite_or_none(r["perplexity"]) for r in ppl_rows}}
    for r in rows:
        metrics["p"][r["bias_type"]][r["model"]] = finite_or_none(r["p"])
    change_rows, metrics["change"] = redditbias_changes(have)
    heads = redditbias_headline_changes(have)
    if heads:
        metrics[PAIRED_HEADLINE_KEY] = heads
    return [compare_section(t, ppl, wide, pd.DataFrame(change_rows), by=by, sizes=sizes)], metrics


def redditbias_changes(entries: list[Entry]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each model against the first on the phrase pairs both scored, per bias type and view:
    the paired before/after test of the change in the perplexity gap (:func:`lmb_change`).
    A run folder without ``pairs.parquet`` gets "cannot tell" with the reason."""
    from biaslens.methods.redditbias.metrics import lmb_change

    if len(entries) < 2:
        return [], {}
    base = _pairs(entries[0])
    rows, out = [], {}
    for e in entries[1:]:
        other = _pairs(e)
        for bt in entries[0].metrics["redditbias"].get("bias_types", []):
            for view in ("target", "attribute"):
                if base is None or other is None:
                    ch = {"verdict": "cannot tell", "reason": "pairs.parquet missing in a run folder"}
                else:
                    sel = [df[(df["bias_type"] == bt) & (df["view"] == view)] for df in (base, other)]
                    if sel[0].empty and sel[1].empty:
                        continue
                    ch = lmb_change(*sel)
                out.setdefault(bt, {}).setdefault(e.label, {})[view] = ch
                rows.append({"model": e.label, "against": entries[0].label, "bias_type": bt, "view": view,
                             "pairs": ch.get("n_pairs"), "sign effect before": ch.get("sign_effect_before"),
                             "sign effect after": ch.get("sign_effect_after"),
                             # each change to the precision of its interval, as every other table
                             **_with_ci("sign effect change", "sign effect change 95% CI", ch.get("sign_effect_change"),
                                        ch.get("sign_effect_change_ci")),
                             "pairs that changed side": ch.get("n_changed_side"),
                             "sign test p": ch.get("sign_effect_change_p"),
                             "mean gap before": ch.get("mean_gap_before"),
                             "mean gap after": ch.get("mean_gap_after"),
                             **_with_ci("mean change", "95% CI", ch.get("mean_change"), ch.get("mean_change_ci")),
                             "t": ch.get("t"), "p": ch.get("p"),
                             **_with_ci("median change", "median 95% CI", ch.get("median_change"),
                                        ch.get("median_change_ci")),
                             "median sign test p": ch.get("sign_test_p"),
                             **_with_ci("log-ratio change", "log-ratio 95% CI", ch.get("log_ratio_change"),
                                        ch.get("log_ratio_change_ci")),
                             "log-ratio p": ch.get("log_ratio_p"),
                             "verdict": (f"{ch['verdict']}: {ch['reason']}" if "reason" in ch
                                         else f"{ch['verdict']} (by the {ch['verdict_basis']})")})
    return rows, out


def _pairs(e: Entry) -> pd.DataFrame | None:
    """A run's scored phrase pairs (``pairs.parquet``), None where the folder has none."""
    path = e.runs.get("redditbias")
    path = path / "pairs.parquet" if path is not None else None
    return pd.read_parquet(path) if path is not None and path.is_file() else None


def redditbias_headline_changes(entries: list[Entry]) -> dict[str, dict[str, Any]]:
    """The headline (the largest |sign effect| over the bias types) of each model against the first,
    paired over the phrase pairs both runs scored, where both runs' headline is the same bias type on
    the same side: the exact test of the pairs that changed side (:func:`lmb_change`) at the
    headline's simultaneous level (alpha / number of types, as its interval), its change mapped to
    the change in |sign effect|. Where another type holds the headline after, or the headline
    changed side, no paired verdict is made (the two simultaneous intervals decide)."""
    from biaslens.methods.redditbias.metrics import lmb_change

    if len(entries) < 2:
        return {}
    first = entries[0].metrics["redditbias"].get("overview") or {}
    head_b = first.get("largest")
    base = _pairs(entries[0])
    out: dict[str, dict[str, Any]] = {}
    for e in entries[1:]:
        over = e.metrics["redditbias"].get("overview") or {}
        head_a = over.get("largest")
        other = _pairs(e)
        if (not head_b or not head_a or base is None or other is None or head_b["bias_type"] != head_a["bias_type"]
                or first.get("view") != over.get("view") or head_b["effect"] * head_a["effect"] < 0):
            continue
        bt, view, m = head_b["bias_type"], first["view"], int(first["n_types"])
        alpha = float(first["alpha"]) / max(m, 1)
        sel = [df[(df["bias_type"].astype(str) == bt) & (df["view"] == view)] for df in (base, other)]
        ch = lmb_change(*sel, alpha=alpha, level=1 - alpha)
        if ch["verdict"] not in ("away from 0", "towards 0", "no detectable change"):
            continue
        side = 1.0 if (head_b["effect"] or head_a["effect"]) >= 0 else -1.0
        lo, hi = sorted(side * x + 0.0 for x in ch["sign_effect_change_ci"])  # + 0.0: no -0.0
        verdict = {"away from 0": "went up", "towards 0": "went down"}.get(ch["verdict"], "no detectable change")
        out[e.label] = {"verdict": verdict, "change": float(head_a["value"] - head_b["value"]), "ci": [lo, hi],
                        "ci_low": lo, "ci_high": hi, "level": 1 - alpha, "bias_type": bt, "n_pairs": ch["n_pairs"],
                        "n_changed_side": ch["n_changed_side"], "p": ch["sign_effect_change_p"],
                        "reason": f"paired over the {ch['n_pairs']} {bt} phrase pairs both runs scored (both "
                                  f"headlines are {bt}): {ch['n_changed_side']} changed side, exact test at "
                                  f"{alpha:.3g} (0.05 over {m} bias types, as the headline's interval)"}
    return out


def _with_ci(name: str, ci_name: str, value: Any, ci: Any) -> dict[str, str]:
    from biaslens.rounding import value_and_interval

    return dict(zip((name, ci_name), value_and_interval(value, *(ci or [None, None]), signed=True)))


def redditbias_lines(metrics: dict[str, Any]) -> list[str]:
    """The terminal lines of ``biaslens compare``: the sign effect (the verdict's) per bias type and
    model beside the paper's t, or beside the paper's d with its interval when the runs scored
    different numbers of pairs (t is not comparable then); LM perplexity."""
    from biaslens.rounding import estimate, number

    lines = []
    by_d = metrics.get("compared_by") == "d"
    if by_d:
        sizes = "; ".join(f"{bt} {'/'.join(map(str, n))}" for bt, n in (metrics.get("n_pairs") or {}).items())
        lines.append(f"RedditBias: the runs scored different numbers of pairs ({sizes}); t grows with the number of "
                     "pairs, so they are compared by the size-free sign effect and effect size d (95% CI)")
    for bias_type in dict.fromkeys([*(metrics.get("t") or {}), *(metrics.get("d") or {})]):
        if by_d:
            paper = ", ".join(f"{m}: {estimate(*v, signed=True, label='')}"
                              for m, v in ((metrics.get("d") or {}).get(bias_type) or {}).items())
            paper = f"d = {paper}"
        else:
            paper = ", ".join(f"{m}: {number(t, signed=True)}" for m, t in ((metrics.get("t") or {}).get(bias_type) or {}).items())
            paper = f"t = {paper}"
        signs = (metrics.get("sign_effect") or {}).get(bias_type) or {}
        effect = ", ".join(f"{m}: {number(v, signed=True)}" for m, v in signs.items())
        lines.append(f"{bias_type}: sign effect = {effect}; paper's {paper}" if effect else f"{bias_type}: {paper}")
    for model, ppl in (metrics.get("lm_perplexity") or {}).items():
        if ppl is not None:
            lines.append(f"LM perplexity {model}: {number(ppl)}")
    return lines
