"""Report sections of the generation-bias suite (paper Tables 8-11, Figures 3 and 5 shapes).

Responses are model output: they reach the HTML only inside report Tables (autoescaped)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biaslens import __version__
from biaslens.report.html import (
    Section,
    Table,
    figure_from_matplotlib,
    render_report,
    size_detail,
    subplots,
)
from biaslens.report.scorer_card import scorer_card_section
from biaslens.rounding import estimate, interval, value_and_interval
from biaslens.scorers.card import card_note, card_warnings, skill_caveat
from biaslens.text import decoding_in_words, plural


def noise_floor_figure(permuted: np.ndarray, observed: float):
    fig, ax = subplots(figsize=(6.5, 3.0))
    ax.hist(permuted, bins=30, color="#bbbbbb", label="descriptor labels permuted\nwithin their strata")
    ax.axvline(observed, color="#d62728", lw=2, label="observed")
    ax.set_xlabel("Full Gen Bias x1000")
    ax.set_ylabel("permutations")
    # beside the plot, never over the tallest bars
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return figure_from_matplotlib(fig, "Noise floor",
                                  "FGB a model would get at these cell sizes if responses did not depend on the "
                                  "descriptor. Observed far right of the grey mass = bias beyond sampling noise.")


def frequency_figure(desc: pd.DataFrame, clusters: list[str], annotate: int = 3):
    """Per descriptor mean cluster probability vs word frequency (one-word descriptors, like the paper)."""
    d = desc[desc["one_word"].fillna(False).astype(bool) & (desc["frequency"] > 0)]
    if d.empty or not clusters:
        return None
    n = len(clusters)
    cols = min(3, n)
    rows = int(np.ceil(n / cols))
    fig, axs = subplots(rows, cols, figsize=(3.4 * cols, 2.6 * rows), squeeze=False)
    for k, c in enumerate(clusters):
        ax = axs[k // cols][k % cols]
        ax.scatter(d["frequency"], d[c], s=12, alpha=0.7, color="#4c78a8")
        ax.set_xscale("log")
        ax.set_title(c, fontsize=10)
        ax.set_xlabel("word frequency (wordfreq, en)", fontsize=8)
        ax.set_ylabel("mean cluster probability", fontsize=8)
        top = float(d[c].max()) if len(d) else 1.0
        ax.set_ylim(0, top * 1.25 if top > 0 else 1.0)  # headroom so labels stay inside the panel
        # the highest points sit close together: stagger their labels downwards, with a leader line
        # and labels of points in the right half of the panel go to their left, so they stay inside it
        lo, hi = np.log10(d["frequency"].min()), np.log10(d["frequency"].max())
        for i, (_, r) in enumerate(d.nlargest(annotate, c).iterrows()):
            right = hi > lo and np.log10(r["frequency"]) > (lo + hi) / 2
            ax.annotate(str(r["descriptor"]), (r["frequency"], r[c]), fontsize=7, textcoords="offset points",
                        xytext=(-6 if right else 6, 4 - 10 * i), ha="right" if right else "left",
                        arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "#888"})
    for k in range(n, rows * cols):
        axs[k // cols][k % cols].axis("off")
    fig.tight_layout()
    return figure_from_matplotlib(fig, "Cluster probability vs descriptor frequency (Figures 3 and 5 shape)",
                                  "One point per one-word descriptor: its responses' mean cluster probability, "
                                  "averaged over templates. Frequency: wordfreq's general English estimate, "
                                  "not the model's training data as in the paper.")


#: a response is shown as an example of a cluster only at or above this cluster probability: below it the
#: classifier does not call the response that cluster's (a "Hate" example at 0.01 is a harmless reply)
EXAMPLE_MIN_PROBABILITY = 0.5


def sample_responses(responses: pd.DataFrame, clusters: list[str], per_cluster: int = 5,
                     min_probability: float = EXAMPLE_MIN_PROBABILITY) -> pd.DataFrame:
    """The responses most typical of each cluster (highest summed cluster probability), only those
    with at least ``min_probability``; a cluster with none gets one row saying so."""
    parts = []
    for c in clusters:
        top = responses[responses[f"cluster_{c}"] >= min_probability].nlargest(per_cluster, f"cluster_{c}")
        if top.empty:
            parts.append(pd.DataFrame({"cluster": [c], "probability": [float(responses[f"cluster_{c}"].max())
                                                                        if len(responses) else float("nan")],
                                       "prompt": ["–"], "response": [f"(no response reaches probability "
                                                                     f"{min_probability:g}; the highest is shown)"]}))
            continue
        parts.append(pd.DataFrame({"cluster": c, "probability": top[f"cluster_{c}"].to_numpy(),
                                   "prompt": top["text"].to_numpy(), "response": top["response"].to_numpy()}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def render(*, analysis: dict[str, Any], metrics: dict[str, Any], run_record: dict[str, Any]) -> str:
    clusters = list(analysis["clusters"])
    nf = metrics.get("noise_floor") or {}
    ci = metrics.get("full_gen_bias_ci_x1000")
    how = metrics.get("full_gen_bias_ci_method") or {}
    desc = analysis["descriptor_clusters"]
    strata = " x ".join(nf.get("strata") or ["template"])
    verdict = metrics.get("verdict")
    headline = Section(
        "Verdict",
        ((f"{verdict[0].upper()}{verdict[1:]}." if verdict else
          f"Full Gen Bias x1000 {estimate(metrics['full_gen_bias_x1000'], *(ci or [None, None]))}.")
         + (" The interval in the sentence is the one the verdict tests: the permutation test inverted (its low end "
            "is above the noise floor exactly when p <= alpha), for these descriptors." if nf else "")
         + (f" For the population of descriptors the run's were drawn from: {estimate(metrics['full_gen_bias_x1000'], *ci)}"
            f" ({how.get('method')} over the run's {metrics['n_descriptors']} descriptors at its nouns; coverage 0.85-0.89 "
            "with heavy-tailed descriptor effects and at the smallest design)."
            if ci else f" No descriptor-population interval: {metrics['full_gen_bias_ci_missing']}."
            if metrics.get("full_gen_bias_ci_missing") else "")
         + (f" Noise floor: descriptor labels shuffled within {strata} ({nf.get('n_strata')} strata, "
            f"{nf.get('n_permutations')} permutations)." if nf else "")
         + "".join(f" Warning: {w}." for w in metrics.get("warnings") or [])
         + "".join(f" {w}" for w in [skill_caveat(metrics.get("scorer_cards") or [], ("style",))] if w)))
    # the section opens with the caveat of the judge its headline rests on (the style classifier);
    # the offensiveness judge's goes with the offensive share it gives, at the end
    caveat = skill_caveat(metrics.get("scorer_cards") or [], ("style",))
    offensive = skill_caveat(metrics.get("scorer_cards") or [], ("offensiveness",))
    overview = Section(
        "Generation bias",
        (caveat + " " if caveat else "") + "Each response gets a probability vector over styles. Full Gen Bias (FGB) is the variance across "
        "descriptors of the mean style vector, summed over styles and averaged over templates (x1000; 0 is ideal). "
        "Partial Gen Bias (PGB) restricts the sum to one cluster's styles; Summed-Cluster Gen Bias (SCGB) is "
        "the variance of the cluster's summed probability. The noise floor is FGB after shuffling the "
        f"descriptor labels within each {strata} stratum, so noun and variant effects stay out of it: the "
        "ratio says how many times above sampling noise the observed FGB is, and the permutation p-value "
        "how often noise alone reached it. The interval is for the FGB of the population of descriptors the "
        "run's were drawn from, at the run's nouns and templates: a delete-one-descriptor jackknife (each "
        "descriptor with all its responses, all axes pooled) of log FGB with a t quantile. It holds for these "
        "nouns only (the noun moves the style strongly); other nouns can give another FGB."
        + (f" The share of offensive responses below rests on the offensiveness judge: {offensive}" if offensive else ""),
        metrics={"Full Gen Bias x1000": metrics["full_gen_bias_x1000"],
                 "FGB permutation interval (the verdict's)": (lambda iv: interval(iv[0], iv[1]) if iv else "–")(
                     nf.get("interval_x1000")),
                 "detectable FGB (80% power)": nf.get("detectable_x1000"),
                 "FGB weighted by axis size": metrics.get("full_gen_bias_axis_weighted_x1000"),
                 "FGB 95% descriptor-population interval": interval(ci[0], ci[1]) if ci else
                 (metrics.get("full_gen_bias_ci_missing") or "–"),
                 "interval method": how.get("method", "–"),
                 "interval over": how.get("unit", "–"),
                 "noise-floor strata": strata,
                 "FGB with permuted labels (mean)": nf.get("fgb_permuted_mean"),
                 "FGB / permuted FGB": nf.get("ratio"),
                 "permutation p-value": nf.get("p_value"),
                 "responses offensive (p >= 0.5), %": metrics.get("percent_offensive"),
                 "responses": metrics["n_responses"], "descriptors": metrics["n_descriptors"],
                 "templates": metrics["n_templates"], "style classifier": metrics.get("style_classifier"),
                 "offensiveness classifier": metrics.get("offensiveness_classifier"),
                 **_validity(metrics)},
        tables=[Table("Per style cluster (Tables 8 and 9 shape)", analysis["cluster_bias"],
                      "top-1 share: fraction of responses whose most probable style is in the cluster. "
                      "classifier precision / recall: the style classifier's measured precision and "
                      "recall for the cluster on the labelled real-output test replies (scorer card); a PGB or SCGB from a "
                      "cluster the classifier rarely recognises says little."),
                Table("FGB per axis (Table 10 shape)", analysis["fgb_by_axis"],
                      "FGB over the responses to descriptors of one axis only; rows on fewer than "
                      "3 descriptors are flagged in 'note'.")],
    )
    if analysis.get("permuted") is not None:
        overview.figures.append(noise_floor_figure(analysis["permuted"], metrics["full_gen_bias_x1000"]))
    sections = [headline, overview]
    fig = frequency_figure(desc, clusters)
    top_desc = []
    for c in clusters:
        top = desc.nlargest(8, c)[["descriptor", "axis", c, "frequency"]].rename(columns={c: "mean_probability"})
        top_desc.append(top.assign(cluster=c))
    sections.append(Section(
        "Descriptors",
        "Per descriptor, the mean probability of each cluster over its responses (averaged over templates).",
        figures=[fig] if fig is not None else [],
        tables=[Table("Highest mean cluster probability per cluster",
                      pd.concat(top_desc, ignore_index=True) if top_desc else pd.DataFrame(), max_rows=80)]))
    sections.append(Section(
        "Responses",
        "The responses most typical of each cluster (only those the classifier gives the cluster a probability of at "
        f"least {EXAMPLE_MIN_PROBABILITY:g}), and the styles the classifier assigns most. "
        "Responses are classified after replacing the descriptor with \"left-handed\" (paper A.6).",
        tables=[Table("Sample responses per cluster", sample_responses(analysis["responses"], clusters), max_rows=60),
                Table("Most probable styles overall", analysis["mean_style"].head(20))]))
    run = {"suite": "holistic-generation", "model": metrics.get("model"), "status": "complete", "started": None,
           "elapsed_seconds": None, "biaslens_version": __version__,
           "details": {**{k: v for k, v in (run_record.get("model") or {}).items()
                          if k in ("backend", "kind", "dtype", "weights_hash")},
                       **_generation_details(run_record.get("generation") or {}), **size_detail(run_record)}}
    cards = metrics.get("scorer_cards") or []
    if cards:
        sections.insert(1, scorer_card_section(cards))
    return render_report(title=f"HolisticBias generation bias: {metrics.get('model')}", run=run, sections=sections,
                         warnings=card_warnings(cards))


def _validity(metrics: dict[str, Any]) -> dict[str, Any]:
    """Overview rows: each classifier's measured accuracy and identity gap, the other offensiveness figure."""
    out: dict[str, Any] = {}
    for c in metrics.get("scorer_cards") or []:
        out[f"{c['role']} classifier validity"] = card_note(c)
    for k in ("percent_offensive_unmasked", "percent_offensive_masked"):
        if metrics.get(k) is not None:
            out[f"responses offensive, {k.rsplit('_', 1)[1]} (beside the headline), %"] = metrics[k]
    return out


def _generation_details(gen: dict) -> dict[str, str]:
    """Decoding settings in words, not as Python reprs ({'max_new_tokens': 32, ...} / [])."""
    out: dict[str, str] = {}
    if gen.get("params"):
        out["decoding"] = decoding_in_words(gen["params"])
    if "persona" in gen:
        out["persona"] = " / ".join(gen["persona"]) if gen["persona"] else "none"
    if gen.get("source"):
        out["responses"] = f"read from {gen['source']}"
    variants = gen.get("variants")
    if isinstance(variants, dict):
        out["prompt variants"] = (f"applied (seed {variants.get('seed')}): {', '.join(variants.get('flags') or [])}"
                                  if variants.get("applied") else "off")
    return out


def compare_section(data: dict[str, Any]) -> Section:
    """The holistic-generation comparison (``comparison.holistic_generation.compare_data``): generation
    bias per run, the change against the first run with its verdict, the Table 15 variance
    changes, then per cluster, per axis and key-phrase tables with one column per run."""
    tables = [Table("Generation bias per model (each run as measured)", pd.DataFrame(data["overall"]))]
    if data["changes"]:
        tables.append(Table("Change against the first run", pd.DataFrame([
            {"model": k, "verdict": v.get("verdict"), "fgb_before": v.get("before"), "fgb_after": v.get("after"),
             **dict(zip(("change", "change 95% CI"),
                        value_and_interval(v.get("change"), *(v.get("ci") or [None, None]), signed=True))),
             "parroting_before_%": 100 * v["parroting"]["before"] if v.get("parroting") else None,
             "parroting_after_%": 100 * v["parroting"]["after"] if v.get("parroting") else None,
             "prompts": v.get("prompts") or v.get("reason")}
            for k, v in data["changes"].items()]),
            "FGB recomputed on the prompts both runs measured; 95% paired delete-one-descriptor jackknife t "
            "interval (all descriptors both runs share, pooled across axes; nouns and templates as measured). "
            "'went down' only when the interval lies below 0, 'went up' above 0, else 'no detectable change'. "
            "Parroting: responses that repeat the prompt (paper C.2.1)."))
    for v in data["variance"]:
        counts = v["counts"]
        tables.append(Table(f"Per-style variance change, {v['before']} -> {v['after']} (paper Table 15 shape)",
                            v["styles"], f"{plural(counts['decrease'], 'style')} see a variance decrease, {counts['increase']} "
                            "an increase; variance = FGB's per-style term (x1000), mean = mean over descriptors."))
    for name, key, index, value in (("PGB / SCGB per cluster", "clusters", "cluster", ["pgb_x1000", "scgb_x1000"]),
                                    ("FGB per axis (Table 10 shape)", "axes", "axis", ["fgb_x1000"]),
                                    ("Key phrases, % of responses (Table 14 shape)", "phrases", "phrase", ["percent"]),
                                    ("Responses with a Sympathy / Confusion key phrase per axis, %", "phrase_axes",
                                     "axis", data["key_phrases"])):
        if data[key]:
            wide = pd.DataFrame(data[key]).pivot_table(index=index, columns="model", values=value, sort=False)
            wide.columns = [f"{v} {m}" if len(value) > 1 else str(m) for v, m in wide.columns] \
                if isinstance(wide.columns, pd.MultiIndex) else [str(c) for c in wide.columns]
            tables.append(Table(name, wide.reset_index(), max_rows=80))
    intro = ("Full Gen Bias and its parts per model (x1000; lower is less variation of response style with the "
             "descriptor), each as its run measured it. The before/after verdict is recomputed on the prompts both "
             "runs measured, from the stored per-response style probabilities, with a paired jackknife interval.")
    if data["lines"]:
        intro += " Against the first run (" + data["first"] + "): " + "; ".join(data["lines"]) + "."
    return Section("HolisticBias: generation bias", intro, tables=tables)
