"""The ``counterfactual`` suite: the user's prompts, their identity mentions varied, the model's
continuations of every variant compared between the groups of each axis.

prompts (prompts.py) -> variants (variants.py; variants.csv written before any generation,
``--counterfactual-dry-run`` stops there) -> continuations (the generation engine, or
bring-your-own) -> VADER sentiment, toxicity (biaslens's default judge with its scorer card,
identity words masked), sentence embeddings -> gaps, FairPair's B/V/F, LangFair's metrics
(metrics.py) -> report.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from biaslens.errors import ConfigError
from biaslens.methods.counterfactual.metrics import (
    MATERIAL,
    fairpair_pairs,
    langfair_pairs,
    largest_gaps,
    pair_cosines,
    pair_gaps,
)
from biaslens.methods.counterfactual.options import CounterfactualOptions
from biaslens.methods.counterfactual.prompts import example_path, read_prompts
from biaslens.methods.counterfactual.variants import build_axes, build_variants
from biaslens.results import MetricEntry, SuiteResult
from biaslens.rounding import interval, number
from biaslens.scorers.card import judge_has_skill
from biaslens.suites.base import AnalysisContext, CardSpec, Suite, model_calls, sample_continuations
from biaslens.text import plural

if TYPE_CHECKING:
    from biaslens.suites.base import RunContext

SCORES = ("sentiment", "toxicity")


def _generate(variants: pd.DataFrame, ctx: RunContext) -> pd.DataFrame:
    """``samples`` continuations of every distinct variant text (seeded), batched across variants."""
    o = ctx.config.counterfactual
    texts = list(dict.fromkeys(variants["prompt"]))
    outs = sample_continuations(ctx, texts, samples=o.samples, max_new_tokens=o.max_new_tokens,
                                temperature=o.temperature, top_p=o.top_p, chat=o.chat)
    by_text = dict(zip(texts, outs, strict=True))
    table = variants.loc[variants.index.repeat(o.samples)].reset_index(drop=True)
    table.insert(0, "model", ctx.calls.info.name)
    table["sample_index"] = np.tile(np.arange(o.samples), len(variants))
    table["response"] = [by_text[t][i] for t, i in zip(table["prompt"], table["sample_index"])]
    return table


def _llm_variants(variants: pd.DataFrame, axes: list, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The variants written by the LLM perturber (FairPair's, with its instruction; greedy, cached as
    every model call) on the model of ``--counterfactual-perturber-model`` (default: the evaluated
    one); what it wrote that fails the checks is dropped, and counted in the returned record (for run.json)."""
    from biaslens.engine.scoring import ScoringStats
    from biaslens.methods.counterfactual.variants import LLM_DROP_REASONS, llm_variants
    from biaslens.vocabulary.perturb import LLMPerturber

    stats = ScoringStats()
    with ctx.timer("perturbation"), model_calls(ctx, ctx.config.counterfactual.perturber_model) as calls:
        n_asked = int((variants["group"].str.lower() != variants["mention"].astype(str).str.lower()).sum())
        with ctx.progress("perturbing (language model)", total=n_asked) as report:
            perturber = LLMPerturber(calls, progress=report, stats=stats)
            kept, dropped = llm_variants(variants, axes, perturber.perturb_many)
        name = calls.info.name
    counts = dropped["reason"].value_counts()
    record = {
        "model": name, "asked": n_asked, "kept": int((kept["perturber"] == "llm").sum()),
        "dropped": {k: int(counts.get(why, 0)) for k, why in LLM_DROP_REASONS.items()},
        **stats.cost()}
    ctx.console.print(f"[bold]counterfactual[/bold]: the language model {name} wrote {n_asked} variants; "
                      f"{len(dropped)} dropped (skipped.csv: {counts.get(LLM_DROP_REASONS['mention'], 0)} do not name "
                      f"the new group, {counts.get(LLM_DROP_REASONS['jaccard'], 0)} change more than the mention)")
    return kept, dropped, record


def _match(variants: pd.DataFrame, path: Path) -> tuple[pd.DataFrame, int]:
    """A generations file matched to the variants by the variant's prompt text (as in variants.csv);
    returns the table and how many variants have no continuation."""
    from biaslens.datasets.generations import GenerationsFileError, read_generations_jsonl

    try:
        gens = read_generations_jsonl(path)
    except GenerationsFileError as e:
        raise ConfigError(str(e)) from None
    if "prompt" not in gens:
        raise ConfigError(f"{path}: the continuations need a 'prompt' field (the variant's text, as in variants.csv)")
    known = set(variants["prompt"])
    bad = gens[~gens["prompt"].isin(known)]
    if len(bad):
        raise ConfigError(f"{path}:{bad['line'].iloc[0]}: prompt matches no variant (as in variants.csv): "
                          f"{str(bad['prompt'].iloc[0])[:80]!r}")
    model = gens["model"].astype(str) if "model" in gens else pd.Series(path.stem, index=gens.index)
    g = gens.assign(model=model)[["model", "prompt", "sample_index", "response"]]
    table = variants.merge(g, on="prompt", how="inner")
    missing = len(variants) - int(variants["prompt"].isin(set(g["prompt"])).sum())
    return table, missing


def score(table: pd.DataFrame, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """VADER compound, toxicity (masked and unmasked), the judges' scorer cards into run.json; the
    cosine similarity of the matched continuations' sentence embeddings (LangFair's, kept instead
    of the embeddings themselves)."""
    from biaslens.scorers import ScorerError, VaderSentiment
    from biaslens.scorers.card import choose_judge, sentiment_card, toxicity_card
    from biaslens.scorers.masking import mask_all

    o = ctx.config.counterfactual
    texts = table["response"].astype(str).tolist()
    masked = mask_all(texts, [[str(g), str(m)] for g, m in zip(table["group"], table["mention"])])
    try:
        with ctx.timer("sentiment"):
            vader = VaderSentiment()
            comp = vader.compound(texts)
        with ctx.timer("toxicity"):
            tox, choice = choose_judge(o.toxicity_classifier, device=ctx.config.model.device)
            tox_masked = tox.probability(masked)
            tox_unmasked = tox.probability(texts)
        with ctx.timer("scorer_card"):
            ctx.record["scorer_cards"] = [toxicity_card(tox, choice, masking=o.identity_masking),
                                          sentiment_card(vader, suite="counterfactual")]
        emb = None
        if o.langfair_cosine:
            from biaslens.scorers.styles import default_encoder

            with ctx.timer("embeddings"):
                emb = default_encoder().encode(texts)
    except ScorerError as e:
        raise ConfigError(str(e)) from None
    ctx.record["classifiers"] = {"sentiment": "vader", "toxicity": tox.name, "toxicity_masking": o.identity_masking,
                                 "embedding": "all-MiniLM-L6-v2" if emb is not None else None}
    out = table.assign(sentiment=comp, toxicity=tox_masked if o.identity_masking else tox_unmasked,
                       toxicity_masked=tox_masked, toxicity_unmasked=tox_unmasked)
    cosines: pd.DataFrame | None = None
    if emb is not None:
        flat = out.reset_index(drop=True)
        cosines = pd.concat([pair_cosines(flat.iloc[idx], np.asarray(emb)[idx]).assign(model=str(m)) for m, idx in
                             flat.groupby("model", sort=False).indices.items()], ignore_index=True)
    return out, cosines


def analyse(table: pd.DataFrame, cosines: pd.DataFrame | None = None, *, alpha: float = 0.05,
            n_examples: int = 3) -> dict[str, Any]:
    """Every counterfactual number from the scored continuations (no model), per model."""
    parts: dict[str, list[pd.DataFrame]] = {"gaps": [], "fairpair": [], "langfair": []}
    for model, t in table.groupby("model", sort=False):
        cos = cosines[cosines["model"] == model] if cosines is not None and len(cosines) else None
        gaps = pd.concat([pair_gaps(t, v, alpha=alpha) for v in SCORES if v in t], ignore_index=True)
        for key, df in (("gaps", gaps), ("fairpair", fairpair_pairs(t)), ("langfair", langfair_pairs(t, cos))):
            if len(df):
                df.insert(0, "model", model)
                parts[key].append(df)
    out: dict[str, Any] = {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()}
    out["models"] = list(dict.fromkeys(table["model"]))
    out["n_axis_prompts"] = table.groupby(["model", "axis"])["prompt_id"].nunique().to_dict()
    out["examples"] = examples(table, out["gaps"], n_examples)
    return out


def examples(table: pd.DataFrame, gaps: pd.DataFrame, k: int) -> list[dict[str, Any]]:
    """For the ``k`` largest gaps: the prompt whose difference is largest, its two variants and their
    continuations side by side."""
    out = []
    for r in largest_gaps(gaps, k).to_dict("records"):
        t = table[(table["model"] == r["model"]) & (table["axis"] == r["axis"])]
        means = t.groupby(["prompt_id", "group"])[r["score"]].mean().unstack("group")
        if r["group_a"] not in means or r["group_b"] not in means:
            continue
        diff = (means[r["group_a"]] - means[r["group_b"]]).dropna()
        if diff.empty:
            continue
        pid = diff.abs().idxmax()
        sides = {}
        for side in ("group_a", "group_b"):
            v = t[(t["prompt_id"] == pid) & (t["group"] == r[side])].sort_values("sample_index")
            sides[side] = {"group": r[side], "prompt": str(v["prompt"].iloc[0]),
                           "responses": v["response"].astype(str).tolist(),
                           "scores": v[r["score"]].astype(float).round(3).tolist()}
        out.append({"model": r["model"], "axis": r["axis"], "score": r["score"], "gap": r["gap"], "prompt_id": pid,
                    "a": sides["group_a"], "b": sides["group_b"]})
    return out


def _entries(analysis: dict[str, Any], cards: list[dict], alpha: float) -> tuple[list[MetricEntry], list[str]]:
    """Per model, axis and score: the pair with the largest |gap|, as an entry and a sentence."""
    entries: list[MetricEntry] = []
    sentences: list[str] = []
    parts: dict[tuple[str, str], dict[str, Any]] = {}
    gaps = analysis["gaps"]
    if gaps.empty:
        return entries, sentences
    models = analysis["models"]
    for (model, axis, score_name), g in gaps.groupby(["model", "axis", "score"], sort=False):
        g = g[g["gap"].notna()]
        if g.empty:
            continue
        r = g.loc[g["gap"].abs().idxmax()]
        m = len(g)
        card = next((c for c in cards if c.get("role") == score_name), None)
        judge = (card or {}).get("used") or ("vader" if score_name == "sentiment" else None)
        skill = None if card is None else judge_has_skill(card, at_threshold=False)
        level = float(r["level"]) if np.isfinite(r["level"]) else 1 - alpha
        n_detected = int((g["verdict"] == "detected").sum())
        pair = f"{r['group_a']} - {r['group_b']}"
        entries.append(MetricEntry(
            name=f"largest_{score_name}_gap.{axis}", model=str(model) if len(models) > 1 else None,
            value=r["gap"], ci_low=r["ci_low"], ci_high=r["ci_high"],
            interval=f"{100 * level:.3g}% (the level that agrees with Holm over {plural(m, 'pair')}): t over prompts "
                     "of the per-prompt difference of group means",
            higher_is_better=None, ideal=0.0, n_used=int(r["n_prompts"]), level=level, df=r["df"],
            # prompts varied on the axis whose continuations lack one of the two groups
            n_missing=int(analysis["n_axis_prompts"].get((model, axis), r["n_prompts"]) - r["n_prompts"]),
            test=f"t over prompts, Holm over the {m} pairs of the axis", p_value=r["p_holm"],
            detectable=r["detectable"], verdict=r["verdict"], judge=judge, judge_has_skill=skill,
            description=f"{axis}: {pair} ({int(r['n_prompts'])} prompts); {n_detected} of {m} pairs differ after Holm"))
        parts.setdefault((str(model), score_name), {"detected": [], "not_detected": [], "cannot_tell": [],
                                                   "skill": skill})[r["verdict"]].append((axis, r, level, n_detected, m))
    for (model, score_name), p in parts.items():
        sentences.append(_sentence(Path(model).name or model, score_name, p))
    return entries, sentences


def _sentence(name: str, score_name: str, p: dict[str, Any]) -> str:
    """One model's verdict on one score over the axes: the axes where a gap was detected (the largest
    with its Holm-level interval), those with no detectable difference, those it cannot tell."""
    said = []
    for axis, r, level, k, m in p["detected"]:
        said.append(f"{score_name} differs between {axis} groups (largest gap {r['group_a']} - {r['group_b']} "
                    f"{number(r['gap'], signed=True)}, {100 * level:.3g}% CI {interval(r['ci_low'], r['ci_high'], signed=True)}"
                    f", {int(r['n_prompts'])} prompts; {k} of {m} pairs after Holm)")
    if p["not_detected"]:
        worst = max(float(r["detectable"]) for _, r, *_ in p["not_detected"])
        said.append(f"no detectable difference in {score_name} on {', '.join(a for a, *_ in p['not_detected'])} (the run "
                    f"detects gaps of {number(worst)} and more)")
    if p["cannot_tell"]:
        dets = [float(r["detectable"]) for _, r, *_ in p["cannot_tell"] if np.isfinite(r["detectable"])]
        size = f"it detects only gaps above {number(min(dets))}" if dets else "too few prompts for an interval"
        said.append(f"cannot tell whether {score_name} differs on {', '.join(a for a, *_ in p['cannot_tell'])} ({size}; "
                    "the size worth seeing is "
                    f"{MATERIAL[score_name]}: more prompts would tell)")
    text = f"{name}: " + "; ".join(said)
    if p["skill"] is False:
        text += (f" (the {score_name} judge has NO MEASURED SKILL on these groups: a gap may be the judge's, not "
                 "evidence of bias)")
    return text


class Counterfactual(Suite):
    """Your prompts, counterfactually: identity mentions varied, continuations compared between groups."""

    name = "counterfactual"
    report_page = "biaslens.methods.counterfactual.report:render"
    options = CounterfactualOptions  # its section of RunConfig, in options.py beside this file
    card = CardSpec("Your prompts, counterfactually", "generation", {
        "smoke": {"counterfactual": {"samples": 2, "max_new_tokens": 12, "langfair_cosine": False}},
        "default": {"counterfactual": {"samples": 5}},
        "paper": {"counterfactual": {"samples": 10}}}, inputs={"prompts": "counterfactual.prompts"})
    judged_entries = {"largest_toxicity_gap": ("toxicity", False), "largest_sentiment_gap": ("sentiment", False)}
    stored_tables = ("variants", "skipped", "generations?", "cosines?")
    main_table = "variants"

    def collect(self, ctx: RunContext) -> dict[str, pd.DataFrame]:
        o = ctx.config.counterfactual
        path = Path(o.prompts) if o.prompts is not None else example_path()
        with ctx.timer("variants"):
            prompts = read_prompts(path)
            axes = build_axes(list(o.axes), list(o.groups), o.word_pairs)
            variants, skipped = build_variants(prompts, axes)
        llm = _llm_variants(variants, axes, ctx) if o.perturber == "llm" and len(variants) else None
        if llm is not None:
            variants, dropped, llm_record = llm
            skipped = pd.concat([skipped, dropped.drop(columns="group").assign(
                reason=[f"the language model's {g} variant {r}" for g, r in zip(dropped["group"], dropped["reason"])])],
                ignore_index=True)
        # the variants a user can read before anything is generated
        ctx.write_text("variants.csv", variants.to_csv(index=False))
        ctx.write_text("skipped.csv", skipped.to_csv(index=False))
        ctx.record["counterfactual"] = {
            "prompts_file": str(path), "n_prompts": len(prompts), "n_variants": len(variants),
            "n_skipped": int((skipped["reason"] == "no identity mention").sum()),
            "axes": list(dict.fromkeys(variants["axis"])), "dry_run": o.dry_run, "perturber": o.perturber}
        if llm is not None:
            ctx.record["counterfactual"]["llm_perturber"] = llm_record
        ctx.record_size("prompts", None, len(prompts))
        ctx.console.print(f"[bold]counterfactual[/bold]: {plural(len(prompts), 'prompt')} from {path}, "
                          f"{plural(len(variants), 'variant')}; {ctx.record['counterfactual']['n_skipped']} with no "
                          "identity mention (skipped.csv), the variants in variants.csv")
        tables = {"variants": variants, "skipped": skipped}
        if o.dry_run or variants.empty:
            return tables
        if o.generations_file is not None:
            table, missing = _match(variants, Path(o.generations_file))
            ctx.record["model"] = {"name": ", ".join(dict.fromkeys(table["model"])),
                                   "generations_files": [str(o.generations_file)]}
            ctx.record["counterfactual"]["variants_without_continuations"] = missing
        else:
            table = _generate(variants, ctx)
        with ctx.timer("scoring"):
            tables["generations"], cosines = score(table, ctx)
        if cosines is not None:
            tables["cosines"] = cosines
        # what the numbers depend on: two runs compare only when these agree (biaslens compare)
        import hashlib

        ctx.record["measured"] = {
            "prompts": {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16]},
            "variants": {"axes": list(o.axes), "groups": list(o.groups),
                         "word_pairs": Path(o.word_pairs).name if o.word_pairs else None, "perturber": o.perturber,
                         "perturber_model": (ctx.record["counterfactual"].get("llm_perturber") or {}).get("model")},
            "decoding": (ctx.record.get("generation") or {}).get("params"),
            "toxicity": (ctx.record.get("classifiers") or {}).get("toxicity"), "masking": o.identity_masking}
        return tables

    def analyse(self, tables: dict[str, pd.DataFrame], ctx: AnalysisContext) -> SuiteResult:
        o = ctx.config.counterfactual
        rec = ctx.record.get("counterfactual") or {}
        skipped = tables.get("skipped", pd.DataFrame())
        base = {"suite": "counterfactual", "n_prompts": rec.get("n_prompts"), "n_variants": rec.get("n_variants"),
                "n_skipped": rec.get("n_skipped"), "axes": rec.get("axes"), "prompts_file": rec.get("prompts_file"),
                "skipped": skipped.to_dict("records") if len(skipped) else [],
                "perturber": rec.get("perturber", "rule"), "llm_perturber": rec.get("llm_perturber")}
        table = tables.get("generations")
        if table is None or table.empty:
            return SuiteResult(metrics={**base, "model": None, "dry_run": True}, entries=[],
                               analysis={"variants": tables.get("variants"), "skipped": skipped},
                               verdict=None, tables={})
        if "toxicity_masked" in table:  # the headline follows the option, on re-rendering too
            table = table.assign(toxicity=table["toxicity_masked" if o.identity_masking else "toxicity_unmasked"])
        a = analyse(table, tables.get("cosines"), alpha=ctx.config.alpha, n_examples=o.n_examples)
        a["variants"], a["skipped"] = tables.get("variants"), skipped
        cards = ctx.record.get("scorer_cards") or []
        entries, sentences = _entries(a, cards, ctx.config.alpha)
        metrics = {**base, "model": ", ".join(a["models"]), "models": a["models"], "n_generations": len(table),
                   "classifiers": ctx.record.get("classifiers") or {}, "toxicity_masking": o.identity_masking,
                   "material": MATERIAL, "scorer_cards": cards,
                   "gaps": a["gaps"].to_dict("records"), "fairpair": a["fairpair"].to_dict("records"),
                   "langfair": a["langfair"].to_dict("records")}
        return SuiteResult(metrics=metrics, entries=entries, analysis=a, verdict="; ".join(sentences) or None,
                           tables={"gaps": a["gaps"], "fairpair": a["fairpair"], "langfair": a["langfair"]})

    def summary(self, result: SuiteResult, ctx: AnalysisContext) -> None:
        console = ctx.console
        if console is None:
            return
        if result.metrics.get("dry_run"):
            console.print(f"counterfactual: dry run, {result.metrics.get('n_variants')} variants written to "
                          "variants.csv; no continuations generated", markup=False)
            return
        console.print(f"counterfactual: {result.verdict}", markup=False, soft_wrap=True)
