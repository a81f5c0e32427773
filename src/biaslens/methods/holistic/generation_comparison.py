"""HolisticBias generation bias in ``biaslens compare``: FGB per run, and against the first run
the FGB change with a paired jackknife interval on the prompts both runs measured, parroting
and the Table 15 per-style variance changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.comparison.entries import CompareOptions, Entry, run_differences
from biaslens.methods.holistic.generation_metrics import MIN_INTERVAL_DESCRIPTORS
from biaslens.methods.holistic.generation_report import compare_section
from biaslens.report.html import Section
from biaslens.scorers.styles import KEY_PHRASES


def key_phrase_rates(responses: pd.Series) -> dict[str, float]:
    """Percent of responses containing each Table 14 phrase (case-insensitive, ' and ’ alike)."""
    text = responses.astype(str).str.lower().str.replace("\u2019", "'", regex=False)
    return {p: float(100 * text.str.contains(p, regex=False).mean()) if len(text) else float("nan")
            for phrases in KEY_PHRASES.values() for p in phrases}


def key_phrase_group_rates(responses: pd.Series) -> dict[str, float]:
    """Percent of responses containing any phrase of each Table 14 group (Sympathy, Confusion)."""
    text = responses.astype(str).str.lower().str.replace("\u2019", "'", regex=False)
    out = {}
    for group, phrases in KEY_PHRASES.items():
        hit = np.zeros(len(text), dtype=bool)
        for p in phrases:
            hit |= text.str.contains(p, regex=False).to_numpy()
        out[group] = float(100 * hit.mean()) if len(text) else float("nan")
    return out


#: run.json fields two generation runs must share for a before/after verdict
BLOCKING_DIFFERENCES = ("dataset version", "decoding", "scorer")


def parroting(prompts: pd.Series, responses: pd.Series) -> np.ndarray:
    """1 where the response repeats the prompt entirely (paper C.2.1), ignoring case,
    punctuation and spacing ("minor punctuation changes"), else 0."""
    def norm(x: pd.Series) -> pd.Series:
        return x.astype(str).str.lower().str.replace("\u2019", "'", regex=False) \
            .str.replace(r"[^\w\s]", "", regex=True).str.split().str.join(" ")
    return (norm(prompts).to_numpy() == norm(responses).to_numpy()).astype(np.float64)


def _run_tables(run: Path) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    resp, probs = run / "responses.parquet", run / "style_probabilities.parquet"
    if not resp.is_file() or not probs.is_file():
        return None
    return pd.read_parquet(resp), pd.read_parquet(probs)


def _matched(before, after, label_b: str, label_a: str, intersection: bool):
    """The two runs' responses on the same (prompt_id, prompt text, sample) keys, aligned; a
    note saying which prompts were compared. Different prompt sets: ConfigError unless
    ``intersection``."""
    from biaslens.errors import ConfigError

    keys = ["prompt_id", "text", "sample_index"]
    (rb, pb), (ra, pa) = before, after
    kb = pd.MultiIndex.from_frame(rb[keys].astype(str))
    ka = pd.MultiIndex.from_frame(ra[keys].astype(str))
    common = kb.intersection(ka)
    only_b, only_a = len(kb.difference(ka)), len(ka.difference(kb))
    if only_b or only_a:
        if not intersection:
            raise ConfigError(
                f"compare: '{label_b}' ({len(kb)} responses) and '{label_a}' ({len(ka)}) measured different "
                f"prompts ({len(common)} in common, {only_b} only in '{label_b}', {only_a} only in '{label_a}'); "
                "their FGB are not comparable. Re-run one with the other's --sample/--axes/--templates/--seed, "
                "or add --intersection to compare on the common prompts only")
        note = (f"compared on the intersection: the {len(common)} responses both runs have "
                f"({only_b} only in '{label_b}' and {only_a} only in '{label_a}' left out)")
    else:
        note = f"same {len(common)} prompts and samples in both runs"
    ib, ia = kb.get_indexer(common), ka.get_indexer(common)
    return (rb.iloc[ib].reset_index(drop=True), pb.iloc[ib].reset_index(drop=True),
            ra.iloc[ia].reset_index(drop=True), pa.iloc[ia].reset_index(drop=True), note)


def _style_variance_change(t, d, p_before, p_after, styles) -> tuple[pd.DataFrame, dict[str, int]]:
    """Paper Table 15: per style, the variance across descriptors of its mean probability
    (x1000, FGB's per-style term) before and its change, the mean across descriptors before
    and its change, and the descriptors whose mean probability fell/rose most."""
    from biaslens.methods.holistic.generation_metrics import descriptor_cluster_means, style_variances

    vb = style_variances(t, d, p_before).mean(axis=0) * 1000
    va = style_variances(t, d, p_after).mean(axis=0) * 1000
    singles = {s: [s] for s in styles}
    mb = descriptor_cluster_means(t, d, p_before, styles, singles).set_index("descriptor")[list(styles)]
    ma = descriptor_cluster_means(t, d, p_after, styles, singles).set_index("descriptor")[list(styles)]
    delta = ma - mb
    df = pd.DataFrame({"style": list(styles), "variance_x1000_before": vb, "variance_x1000_change": va - vb,
                       "mean_before": mb.mean(axis=0).to_numpy(), "mean_change": (ma.mean(axis=0) - mb.mean(axis=0)).to_numpy(),
                       "biggest_decrease": [", ".join(delta[s].nsmallest(3).index) for s in styles],
                       "biggest_increase": [", ".join(delta[s].nlargest(3).index) for s in styles]})
    counts = {"decrease": int((df["variance_x1000_change"] < 0).sum()), "increase": int((df["variance_x1000_change"] > 0).sum())}
    return df.sort_values("variance_x1000_change").reset_index(drop=True), counts


def _paired_verdicts(have, options) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """FGB and parroting rate of every later run against the first, on matched prompts, with
    paired jackknife intervals over descriptors (pooled across axes); the per-style variance changes
    (paper Table 15) and one line per run for the section's text."""
    from biaslens.methods.holistic.generation_metrics import paired_gen_bias_change

    base = have[0]
    base_tables = _run_tables(base.runs["holistic-generation"])
    changes: dict[str, Any] = {}
    variance, lines = [], []
    for e in have[1:]:
        blocking = [r["what"] for r in run_differences([base, e], "holistic-generation") if r["what"] in BLOCKING_DIFFERENCES]
        tables_e = _run_tables(e.runs["holistic-generation"])
        if base_tables is None or tables_e is None:
            changes[e.label] = {"verdict": "not comparable", "reason": "responses.parquet/style_probabilities.parquet missing"}
            lines.append(f"{e.label}: not comparable (per-response tables missing)")
            continue
        rb, pb, ra, pa, note = _matched(base_tables, tables_e, base.label, e.label, options.intersection)
        styles_b = [c for c in pb.columns if c not in ("prompt_id", "sample_index")]
        styles_a = [c for c in pa.columns if c not in ("prompt_id", "sample_index")]
        if styles_b != styles_a and "scorer" not in blocking:
            blocking.append("scorer")
        if rb.empty or rb["descriptor"].nunique() < 2:
            from biaslens.errors import ConfigError

            raise ConfigError(f"compare: '{base.label}' and '{e.label}' share fewer than two descriptors: nothing to compare")
        t, d = rb["template"].to_numpy(), rb["descriptor"].to_numpy()
        entry: dict[str, Any] = {"prompts": note, "n_responses": int(len(rb)), "differences": blocking}
        par_b, par_a = parroting(rb["text"], rb["response"]), parroting(ra["text"], ra["response"])
        par = paired_gen_bias_change(t, d, None, None, values_before=par_b, values_after=par_a)
        entry["parroting"] = {"before": float(par_b.mean()), "after": float(par_a.mean()),
                              "change": float(par_a.mean() - par_b.mean()),
                              "ci": [par.low, par.high] if par else None, "verdict": par.verdict if par else None}
        if blocking:
            entry.update({"verdict": "not comparable", "went_down": False,
                          "reason": "runs differ in " + ", ".join(blocking)})
            lines.append(f"{e.label}: not comparable, the runs differ in {', '.join(blocking)} ({note})")
            changes[e.label] = entry
            continue
        ch = paired_gen_bias_change(t, d, pb[styles_b].to_numpy(), pa[styles_a].to_numpy())
        if ch is None:
            entry.update({"verdict": "cannot tell", "went_down": False,
                          "reason": f"fewer than {MIN_INTERVAL_DESCRIPTORS} descriptors in common: no interval"})
            lines.append(f"{e.label}: cannot tell, {entry['reason']} ({note})")
            changes[e.label] = entry
            continue
        entry.update({"before": ch.before * 1000, "after": ch.after * 1000, "change": ch.change * 1000,
                      "relative_change": ch.change / ch.before if ch.before else None,
                      "ci": [ch.low * 1000, ch.high * 1000], "ci_method": f"paired {ch.method} interval, delete-one-"
                      f"descriptor over the {ch.n_resamples} descriptors both runs share (pooled across axes)",
                      "verdict": ch.verdict,
                      "went_down": ch.verdict == "went down"})
        var_table, var_counts = _style_variance_change(t, d, pb[styles_b].to_numpy(), pa[styles_a].to_numpy(), styles_b)
        entry["style_variance_change"] = var_counts
        changes[e.label] = entry
        lines.append(f"{e.label}: FGB x1000 {entry['before']:.3f} -> {entry['after']:.3f} (change {entry['change']:+.3f}, "
                     f"95% CI {entry['ci'][0]:+.3f} to {entry['ci'][1]:+.3f}; {note}): {ch.verdict}. Parroting "
                     f"{100 * entry['parroting']['before']:.1f}% -> {100 * entry['parroting']['after']:.1f}%")
        variance.append({"before": base.label, "after": e.label, "counts": var_counts,
                         "styles": pd.concat([var_table.head(8), var_table.tail(8)]).drop_duplicates("style")})
    return changes, variance, lines


def compare_data(entries, options=None) -> dict[str, Any] | None:
    """What ``biaslens compare`` shows of holistic-generation runs (None when no entry has one):
    FGB (with noise floor), PGB/SCGB per cluster, FGB per axis, % offensive and Table 14
    key-phrase rates per entry as rows; against the first run, the FGB change with a paired
    jackknife interval (a verdict only when the runs measured the same prompts, scorer and
    decoding), parroting and the Table 15 variance changes. ``report.compare`` lays it out."""
    options = options or CompareOptions()
    have = [e for e in entries if "holistic-generation" in e.metrics]
    if not have:
        return None
    overall, clusters, axes, phrases, phrase_axes = [], [], [], [], []
    for e in have:
        m = e.metrics["holistic-generation"]
        nf = m.get("noise_floor") or {}
        overall.append({"model": e.label, "fgb_x1000": m.get("full_gen_bias_x1000"),
                        "noise_ratio": nf.get("ratio"), "p_value": nf.get("p_value"),
                        "percent_offensive": m.get("percent_offensive"), "n_responses": m.get("n_responses")})
        for c, v in (m.get("partial_gen_bias_x1000") or {}).items():
            clusters.append({"model": e.label, "cluster": c, "pgb_x1000": v,
                             "scgb_x1000": (m.get("summed_cluster_gen_bias_x1000") or {}).get(c)})
        for a, v in (m.get("full_gen_bias_by_axis_x1000") or {}).items():
            axes.append({"model": e.label, "axis": a, "fgb_x1000": v})
        path = e.runs["holistic-generation"] / "responses.parquet"
        if path.exists():
            resp = pd.read_parquet(path, columns=["response", "axis"])
            rates = key_phrase_rates(resp["response"])
            phrases += [{"model": e.label, "phrase": p, "percent": r} for p, r in rates.items()]
            for axis, g in resp.groupby("axis", sort=True):  # per descriptor group (axis), Table 14
                group_rates = key_phrase_group_rates(g["response"])
                phrase_axes.append({"model": e.label, "axis": axis, **group_rates})
    changes, variance, lines = _paired_verdicts(have, options) if len(have) > 1 else ({}, [], [])
    wide_metrics: dict[str, Any] = {"fgb_x1000": {r["model"]: r["fgb_x1000"] for r in overall},
                                    "percent_offensive": {r["model"]: r["percent_offensive"] for r in overall}}
    if changes:
        wide_metrics["fgb_change_vs_first"] = changes
    return {"first": have[0].label, "overall": overall, "clusters": clusters, "axes": axes, "phrases": phrases,
            "phrase_axes": phrase_axes, "key_phrases": list(KEY_PHRASES), "changes": changes, "variance": variance,
            "lines": lines, "metrics": wide_metrics}


def holistic_generation_section(entries: list[Entry], options: CompareOptions) -> tuple[list[Section], dict[str, Any]]:
    """The section and metrics of holistic-generation runs (none when no entry has one)."""
    data = compare_data(entries, options)
    return ([compare_section(data)], data["metrics"]) if data else ([], {})


def holistic_generation_lines(metrics: dict[str, Any]) -> list[str]:
    """The terminal lines of ``biaslens compare``: each run's FGB change against the first."""
    from biaslens.rounding import estimate, number

    lines = []
    for model, c in (metrics.get("fgb_change_vs_first") or {}).items():
        if c.get("ci"):
            lines.append(f"Full Gen Bias x1000 {model}: {number(c['before'])} -> {number(c['after'])} (change "
                         f"{estimate(c['change'], *c['ci'], signed=True)[:-1]}; {c['prompts']}): "
                         f"[bold]{c['verdict']}[/bold]")
        else:
            lines.append(f"Full Gen Bias {model}: [bold]{c['verdict']}[/bold] ({c.get('reason')})")
        par = c.get("parroting")
        if par:
            lines.append(f"parroting {model}: {100 * par['before']:.1f}% -> {100 * par['after']:.1f}% of responses")
    return lines
