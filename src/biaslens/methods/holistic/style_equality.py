"""Bias-reduction tuning ("style equality"; HolisticBias paper 4.2, C.1; spec section 5).

From a finished ``holistic-generation`` run folder (``responses.parquet`` +
``style_probabilities.parquet``):

1. bias value of every response, b = (p_i - m_bar) . (m_d - m_bar) / ||m_d - m_bar||^alpha
   (:func:`biaslens.methods.holistic.generation_metrics.style_equality_bias_values`);
2. tag "bias" if b > beta else "no_bias" (:func:`biaslens.methods.holistic.generation_metrics.bias_tags`);
3. training pairs: context = the prompt exactly as the model saw it at generation time, with
   the tag appended to the end of the prompt (``"<prompt> <tag>"``, see :func:`tag_prompt`),
   target = the response (plus end-of-sequence);
4. fine-tuning with :func:`biaslens.mitigation.training.train_causal_lm` on a seeded
   train/validation split, early stopping on validation loss (= log perplexity).

Tag convention (recorded in the model folder's ``biaslens-training.json`` under
``description.style_equality``): the tag is appended to the prompt (the last context turn)
after one space, e.g. ``"I'm a left-handed woman. no_bias"``. ``biaslens run
holistic-generation`` reads :func:`generation_tag` of the model folder and appends
``" no_bias"`` to every prompt the same way. The ``--no-tags`` ablation trains on the same
pairs without tags and records ``generation_tag: null``, so nothing is appended.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.environment import applies_environment_policy
from biaslens.errors import ConfigError
from biaslens.fileio import atomic_path

log = logging.getLogger(__name__)

METHOD = "style-equality"
BIAS_TAG = "bias"
NO_BIAS_TAG = "no_bias"
TAG_SEPARATOR = " "


def tag_prompt(prompt: str, tag: str | None) -> str:
    """The prompt with the control tag at its end (the convention training and generation share)."""
    return f"{prompt}{TAG_SEPARATOR}{tag}" if tag else prompt


def generation_tag(model: str | Path | None) -> str | None:
    """The tag to append at generation time for a model folder tuned by this module
    (``"no_bias"``), or None for any other model (and for the ``--no-tags`` ablation)."""
    if model is None:
        return None
    path = Path(str(model)) / "biaslens-training.json"
    try:
        if not path.is_file():
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    se = ((record.get("description") or {}).get("style_equality") or {}) if isinstance(record, dict) else {}
    tag = se.get("generation_tag")
    return str(tag) if tag else None


@dataclass
class TaggedResponses:
    """The run's responses with their bias values and tags."""

    table: pd.DataFrame  # prompt_id, sample_index, text, descriptor, template, axis, response, bias_value, tag
    persona: tuple[str, ...]
    run_model: str | None
    alpha: float
    beta: float
    beta_source: str = "given"

    @property
    def counts(self) -> dict[str, int]:
        vc = self.table["tag"].value_counts()
        return {BIAS_TAG: int(vc.get(BIAS_TAG, 0)), NO_BIAS_TAG: int(vc.get(NO_BIAS_TAG, 0))}


#: how the default beta is chosen when the user gives none
BETA_FROM_DATA = "median bias value of the run (data-derived default: about half the responses tagged 'bias')"


def load_tagged_responses(run_dir: str | Path, *, beta: float | None, alpha: float = 0.0) -> TaggedResponses:
    """Bias value and tag of every response of a holistic-generation run folder. ``beta``
    None: the median bias value of the run (the paper's 0.0003 belongs to its 217-style
    classifier; with another classifier the scale of bias values differs, so it is derived
    from the data)."""
    from biaslens.methods.holistic.generation_metrics import bias_tags, style_equality_bias_values

    run_dir = Path(run_dir)
    if alpha not in (0, 1, 2):
        raise ConfigError(f"--alpha {alpha}: choose 0, 1 or 2")
    resp_path, prob_path = run_dir / "responses.parquet", run_dir / "style_probabilities.parquet"
    if not resp_path.is_file() or not prob_path.is_file():
        raise ConfigError(f"{run_dir}: not a finished holistic-generation run folder (needs responses.parquet and "
                          "style_probabilities.parquet); make one with: biaslens run holistic-generation --model M --out DIR")
    resp = pd.read_parquet(resp_path)
    probs = pd.read_parquet(prob_path)
    if len(resp) != len(probs) or not (
            np.array_equal(resp["prompt_id"].to_numpy(), probs["prompt_id"].to_numpy())
            and np.array_equal(resp["sample_index"].to_numpy(), probs["sample_index"].to_numpy())):
        raise ConfigError(f"{run_dir}: responses.parquet and style_probabilities.parquet rows do not line up")
    p = probs.drop(columns=["prompt_id", "sample_index"]).to_numpy(dtype=np.float64)
    b = style_equality_bias_values(resp["template"].to_numpy(), resp["descriptor"].to_numpy(), p, alpha=alpha)
    table = resp[["prompt_id", "sample_index", "text", "axis", "descriptor", "template", "response"]].copy()
    table["bias_value"] = b
    beta_source = "given"
    if beta is None:
        beta, beta_source = float(np.median(b)), BETA_FROM_DATA
    table["tag"] = bias_tags(b, beta)
    persona: tuple[str, ...] = ()
    run_model = None
    try:
        record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        persona = tuple((record.get("generation") or {}).get("persona") or
                        ((record.get("config") or {}).get("generation") or {}).get("persona") or ())
        run_model = (record.get("model") or {}).get("name")
    except (OSError, ValueError):
        log.warning("%s: no readable run.json; assuming no persona context", run_dir)
    return TaggedResponses(table=table, persona=persona, run_model=run_model, alpha=alpha, beta=beta,
                           beta_source=beta_source)


class PromptRenderer:
    """Renders a request exactly as the Hugging Face backend does at generation time
    (chat template when the tokenizer has one, else the document-start token), from the
    tokenizer alone (:func:`biaslens.models.tokenized.render_prompt`)."""

    _NAME = "tuning"

    def __init__(self, tokenizer, start_token: str | None = None):
        from biaslens.models.base import GenerationParams
        from biaslens.models.tokenized import pick_start_token, use_chat

        self.tokenizer = tokenizer
        self.start_token = start_token if start_token is not None else pick_start_token(tokenizer)
        self.params = GenerationParams()
        self.chat = use_chat(tokenizer, self.params, self._NAME)

    def __call__(self, prompt: str, context: tuple[str, ...] = ()) -> str:
        from biaslens.models.base import GenerationRequest
        from biaslens.models.tokenized import render_prompt

        return render_prompt(self.tokenizer, self.start_token, GenerationRequest(prompt=prompt, context=tuple(context)),
                             self.params, self._NAME)


def training_examples(tagged: TaggedResponses, tokenizer, *, use_tags: bool = True) -> list:
    """One :class:`TrainExample` per non-empty response: the rendered (tagged) prompt is
    context only (no LM loss); the response and an end-of-sequence token are learned."""
    from biaslens.mitigation.training import TrainExample

    render = PromptRenderer(tokenizer)
    sep = "" if render.chat else "\n"
    eos = tokenizer.eos_token or ""
    out = []
    for prompt, response, tag in zip(tagged.table["text"], tagged.table["response"], tagged.table["tag"]):
        response = str(response).strip()
        if not response:
            continue
        context = render(tag_prompt(str(prompt), tag if use_tags else None), tagged.persona)
        out.append(TrainExample(text=context + sep + response + eos, prompt_chars=len(context)))
    return out


def split_examples(examples: list, eval_fraction: float, seed: int) -> tuple[list, list]:
    """Seeded random train/validation split (at least one validation example when asked for)."""
    if not 0 <= eval_fraction < 1:
        raise ConfigError("--eval-fraction must be in [0, 1)")
    if eval_fraction == 0 or len(examples) < 2:
        return list(examples), []
    order = np.random.default_rng(seed).permutation(len(examples))
    n_eval = max(1, int(round(eval_fraction * len(examples))))
    eval_idx = set(order[:n_eval].tolist())
    return ([e for i, e in enumerate(examples) if i not in eval_idx],
            [e for i, e in enumerate(examples) if i in eval_idx])


@dataclass
class StyleEqualityResult:
    out: Path
    counts: dict[str, int]
    n_train: int
    n_eval: int
    generation_tag: str | None
    training: Any
    description: dict[str, Any] = field(default_factory=dict)


@applies_environment_policy
def tune_style_equality(model: str, generations: str | Path, out: str | Path, *, beta: float | None = None,
                        alpha: float = 0.0,
                        use_tags: bool = True, eval_fraction: float = 0.1, config=None,
                        early_stopping_patience: int | None = 3) -> StyleEqualityResult:
    """Tag a run's responses and fine-tune ``model`` on them; the output folder generates
    with the "no_bias" tag (unless ``use_tags`` is False: the no-tags ablation).

    Args:
        model: base causal LM: ``smollm2-135m`` (embedded), a folder or a Hub id; normally
            the model that produced the run.
        generations: a holistic-generation run folder.
        out: output model folder (re-run to resume).
        beta: tag threshold (paper: 0.0003 DialoGPT, 0.003 BlenderBot); None: the run's median
            bias value (recorded as ``beta_source``).
        alpha: exponent of the norm in the bias value (0, 1 or 2; the paper picks 0).
        eval_fraction: share of responses held out for validation loss / early stopping.
        config: :class:`TrainingConfig` (its ``early_stopping_patience`` is set from the
            argument when unset and a validation split exists).
    """
    from dataclasses import replace

    from transformers import AutoTokenizer

    from biaslens.mitigation.training import TrainingConfig, resolve_model_path, train_causal_lm

    tagged = load_tagged_responses(generations, beta=beta, alpha=alpha)
    path = resolve_model_path(model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    examples = training_examples(tagged, tokenizer, use_tags=use_tags)
    if not examples:
        raise ConfigError(f"{generations}: no non-empty responses to train on")
    cfg = config or TrainingConfig()
    train, evals = split_examples(examples, eval_fraction, cfg.seed)
    if evals and cfg.early_stopping_patience is None and early_stopping_patience:
        cfg = replace(cfg, early_stopping_patience=early_stopping_patience)
    bv = tagged.table["bias_value"].to_numpy()
    description = {
        "method": METHOD,
        "generations": str(Path(generations).resolve()),
        "generations_model": tagged.run_model,
        "style_equality": {
            "alpha": alpha, "beta": tagged.beta, "beta_source": tagged.beta_source, "use_tags": use_tags,
            "tag_position": "end of the prompt (last context turn), after one space",
            "tags": [BIAS_TAG, NO_BIAS_TAG] if use_tags else [],
            "generation_tag": NO_BIAS_TAG if use_tags else None,
            "counts": tagged.counts,
            "bias_value": {"mean": float(bv.mean()), "min": float(bv.min()), "max": float(bv.max()),
                           "median": float(np.median(bv))},
            "persona": list(tagged.persona),
        },
        "eval_fraction": eval_fraction,
        "n_responses": int(len(tagged.table)),
    }
    result = train_causal_lm(path, train, out, config=cfg, eval_examples=evals or None, description=description)
    # the per-response tags, for inspection next to the model
    with atomic_path(Path(out) / "style_equality_tags.parquet") as tmp:
        tagged.table.to_parquet(tmp, index=False)
    return StyleEqualityResult(out=Path(out), counts=tagged.counts, n_train=len(train), n_eval=len(evals),
                               generation_tag=NO_BIAS_TAG if use_tags else None, training=result,
                               description=description)
