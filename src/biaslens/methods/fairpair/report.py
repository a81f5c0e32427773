"""Report of the FairPair suite: the paper's Table 3 per model, Table 1 (kept perturbations),
the cross- vs within-set distributions (Figure 5 shape) and the n-gram chart (Figure 6 shape).
Model output appears only as escaped table text or inside PNG plots."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biaslens.report.glossary import human_name
from biaslens.report.html import Section, Table, figure_from_matplotlib, render_report, subplots


def _plain(s: str) -> str:
    # matplotlib reads $...$ as mathtext: keep labels literal
    return str(s).replace("$", r"\$")


def table3(t3: pd.DataFrame, source: str, target: str) -> pd.DataFrame:
    """The paper's Table 3, one row per model and dissimilarity (a column per dissimilarity and
    quantity ran past the page's right edge with three dissimilarities): V_A, V_B, B (x100) and
    F, with F's median over prompts and the prompts it rests on."""
    if t3.empty:  # no prompt kept continuations in both sets
        return pd.DataFrame()
    out = pd.DataFrame({"model": t3["model"], "dissimilarity": t3["dissimilarity"],
                        f"V_A ({source})": (100 * t3["V_A"]).round(1),
                        f"V_B ({target})": (100 * t3["V_B"]).round(1), "B": (100 * t3["B"]).round(1),
                        "F": t3["F"].round(3)})
    for col in ("F_median", "n_prompts", "n_undefined_F"):
        if col in t3.columns:
            out[col] = t3[col].round(3) if col == "F_median" else t3[col]
    return out


def distribution_figure(dist: dict, source: str, target: str):
    """Histograms of cross-set vs within-set dissimilarities per (model, dissimilarity)."""
    keys = list(dist)
    fig, axes = subplots(1, len(keys), figsize=(4.2 * len(keys), 3.2), squeeze=False)
    for ax, key in zip(axes[0], keys):
        cross, within = dist[key]
        both = np.concatenate([cross, within]) if len(cross) + len(within) else np.zeros(1)
        bins = np.linspace(float(np.nanmin(both)), float(np.nanmax(both)) + 1e-9, 31)
        if len(within):
            ax.hist(within, bins=bins, density=True, alpha=0.55, color="#4c78a8", label="within A and within B")
        if len(cross):
            ax.hist(cross, bins=bins, density=True, alpha=0.55, color="#f58518", label="cross A x B")
        ax.set_title(_plain(f"{key[1]} ({key[0]})"), fontsize=9)
        ax.set_xlabel("dissimilarity")
        if len(cross) or len(within):
            ax.legend(fontsize=7)
    fig.tight_layout()
    return figure_from_matplotlib(
        fig, "Cross-set vs within-set dissimilarities (paper Figure 5 shape)",
        f"Orange: d(A_i, B_j), the bias. Blue: d between two samples of the same set, the sampling variability. "
        f"A = continuations of the {source} prompt, perturbed to {target}; B = continuations of the {target} prompt. "
        "Overlapping distributions mean F close to 1.")


def ngram_figure(ngrams: pd.DataFrame, source: str, target: str):
    """Paired bars: the n-grams more frequent in A (left) and in B (right), paper Figure 6 shape."""
    a = ngrams[ngrams["side"] == "A"]
    b = ngrams[ngrams["side"] == "B"]
    n = max(len(a), len(b), 1)
    fig, axes = subplots(1, 2, figsize=(11, 0.32 * n + 1.4))
    for ax, part, title in ((axes[0], a, f"more frequent in A ({source} prompts)"),
                            (axes[1], b, f"more frequent in B ({target} prompts)")):
        y = np.arange(len(part))
        ax.barh(y - 0.2, part["freq_a"], 0.4, color="#4c78a8", label=f"A ({source})")
        ax.barh(y + 0.2, part["freq_b"], 0.4, color="#f58518", label=f"B ({target})")
        ax.set_yticks(y, [_plain(s) for s in part["ngram"]], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(_plain(title), fontsize=9)
        ax.set_xlabel("share of continuations containing it")
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return figure_from_matplotlib(
        fig, "n-grams that differ most between A and B (paper Figure 6 shape)",
        "1-4-grams (lowercase words; n-grams of stopwords only left out) ranked by the difference of the share of "
        "continuations that contain them. Both sets mention the same entity, so names and pronouns cancel out.")


def examples(rows: pd.DataFrame, n: int = 12) -> pd.DataFrame:
    """A few aligned samples: x's continuation, its perturbation (set A) and p(x)'s continuation (set B)."""
    a = rows[(rows["set"] == "A") & rows["kept"].astype(bool)]
    b = rows[rows["set"] == "B"]
    out = []
    for (model, pid), g in a.groupby(["model", "pair_id"], sort=False):
        gb = b[(b["model"] == model) & (b["pair_id"] == pid)]
        for i in range(min(2, len(g), len(gb))):
            out.append({"model": model, "prompt x": g["x"].iloc[i], "A: p(g(x))": g["text"].iloc[i],
                        "B: g(p(x))": gb["text"].iloc[i]})
        if len(out) >= n:
            break
    return pd.DataFrame(out)


def _columns(table: pd.DataFrame, *names: str) -> pd.DataFrame:
    """The model and dissimilarity, then the named columns the table has (older runs lack some)."""
    return table[[c for c in ("model", "dissimilarity", *names) if c in table.columns]]


def render(res: dict, *, rows: pd.DataFrame, metrics: dict[str, Any], run_record: dict[str, Any], names) -> str:
    """The whole report.html of a FairPair run."""
    source = "/".join(dict.fromkeys(n.source for n in names))
    target = "/".join(dict.fromkeys(n.target for n in names))
    t3 = res["table3"]
    sections = [
        Section(
            "Verdict",
            " ".join(metrics["verdicts"].values()) or "No prompt had continuations in both sets.",
            metrics={"models": ", ".join(metrics["models"]), "alpha": metrics["alpha"],
                     # lists in words ("jaccard, sentiment"), not as a Python repr
                     **{human_name(k): ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v
                        for k, v in metrics["settings"].items() if v is not None}},
        ),
        Section(
            "FairPair scores (paper Table 3 shape)",
            f"For each prompt x (about {source}) the model writes n continuations of x and of its perturbation p(x) "
            f"(about {target}). Set A: the continuations of x, perturbed to {target}; set B: the continuations of "
            f"p(x). Both now mention only {target}. B = mean dissimilarity between A and B (bias); V_A and V_B = mean "
            "dissimilarity between two samples of the same set (sampling variability); F = B^2 / (V_A V_B), close to "
            "1 when the sampling variability explains the difference, above 1 for a real difference in treatment. "
            "B and V are x100; all are means over prompts.",
            tables=[Table("Per model and dissimilarity (V and B x100)", table3(t3, source, target),
                          max_rows=len(t3) or 1)],
        ),
    ]
    tests = res["tests"]
    if len(tests):
        sections.append(Section(
            "Significance",
            "Welch t-test of all cross-set dissimilarities d(A_i, B_j) against all within-set ones (pooled over "
            "prompts, equally many samples of A and B per prompt), as the paper; p two-sided, p (one-sided) for "
            "cross > within, p (Holm) adjusted over the dissimilarities (the verdict uses it). Pairs share samples; "
            "measured by simulation the test is conservative under no difference (1.7% at 0.05 at 5 x 20 and "
            "60 x 100). status is 'cannot tell' (with the reason) when the test is undefined or could not have "
            "detected F = 1.1 (detectable F: the (B/V)^2 it detects with about 80% power). The prompt-level "
            "paired t-test of B(x) against (V_A(x)+V_B(x))/2 uses one value per prompt.",
            # three narrow tables instead of one 21-column table that would not fit the page
            tables=[Table("Tests", _columns(tests, "t", "p", "p_holm", "status", "reason", "detectable_F")),
                    Table("Test details (pooled Welch test)", _columns(
                        tests, "mean_cross", "mean_within", "df", "se", "p_greater", "n_cross", "n_within",
                        "n_prompts_both")),
                    Table("Prompt-level paired test", _columns(
                        tests, "prompt_level_t", "prompt_level_p_greater", "n_prompts"))],
            figures=[distribution_figure(res["distributions"], source, target)] if res["distributions"] else []))
    if len(res["kfold_table"]):
        sections.append(Section(
            "k-fold variant",
            "Each set split into k folds; a fold is represented by its mean score (sentiment), the union of its "
            "token sets (Jaccard) or its mean embedding; B, V and F computed between folds. The k-fold F depends "
            "strongly on k (the paper used 200 folds of 500 samples; biaslens defaults to 10): compare it only at "
            "the same k. The verdict does not use it.",
            tables=[Table("k-fold scores", res["kfold_table"])]))
    kept = res["kept"]
    if len(kept):
        sections.append(Section(
            "Perturbation filters (paper Table 1 shape)",
            ("Rule perturber: a continuation of either set that mentions another person and a gendered pronoun is "
             "left out of both sets (ambiguous_reference: the pronoun may be that person's; counts and shares per "
             "set below). " if metrics["settings"].get("perturber") == "rule" else
             "LLM perturber (it resolves coreference; no other-person check). ")
            + "A perturbed continuation is dropped when it does not begin with the expected perturbed prompt p(x), "
            f"still names {source}, or its token Jaccard dissimilarity to the original exceeds "
            f"{metrics['settings']['max_jaccard']} ({metrics['settings']['filter_jaccard']} comparison).",
            tables=[Table("Kept share per model", kept)]))
    ng = res["ngrams"]
    if len(ng):
        sections.append(Section("What differs", figures=[ngram_figure(ng[ng["model"] == m], source, target)
                                                        for m in ng["model"].unique()],
                                tables=[Table("n-grams", ng)]))
    pp = res["per_prompt"]
    if len(pp):
        sections.append(Section("Per prompt", "Highest F first.",
                                tables=[Table("Per prompt and dissimilarity",
                                              pp.sort_values("F", ascending=False, na_position="last")
                                              .drop(columns=["x", "px"], errors="ignore"))]))
    ex = examples(rows)
    if len(ex):
        sections.append(Section("Examples", "Model output, shown as plain text.", tables=[Table("Samples", ex)]))
    if metrics.get("scorer_cards"):
        from biaslens.report.scorer_card import scorer_card_section

        sections.insert(1, scorer_card_section(metrics["scorer_cards"]))
    from biaslens import __version__

    model = run_record.get("model") or {}
    run = {"suite": "fairpair", "model": ", ".join(metrics["models"]) or model.get("name"), "status": "complete",
           "started": None, "elapsed_seconds": None, "biaslens_version": __version__,
           "details": {k: v for k, v in model.items() if k in ("backend", "kind", "dtype", "weights_hash",
                                                                "generations_file")}}
    from biaslens.scorers.card import card_warnings

    return render_report(title=f"FairPair: {run['model']}", run=run, sections=sections,
                         warnings=card_warnings(metrics.get("scorer_cards") or []))
