"""RedditBias debiasing (Barikeri et al., 2021, section 4) on any Hugging Face causal LM.

Four methods, all trained by :func:`biaslens.mitigation.training.train_causal_lm`:

- ``cda``: counterfactual data augmentation, plain LM loss on the training phrases plus
  their target-swapped (CTDA) or attribute-swapped (CADA) copies.
- ``lmd``: language-model debiasing loss. At every occurrence of a target term ``t``, the
  hidden state that predicts it scores each pair ``(t1, t2)`` that ``t`` belongs to;
  a softmax over those two logits only gives ``|log p_t1 / p_t2|``, averaged over the pairs.
- ``add``: attribute distance. At every occurrence of an A1 attribute,
  ``sum_pairs |cos(h_a, e_t1) - cos(h_a, e_t2)|``.
- ``hd``: hard debiasing. ``sum_j |<h_a, b_j>|`` with ``b_j`` the bias subspace of the
  target pairs' output embeddings.

Total loss = ``lm_weight * LM + debias_weight * debias`` (the debias term is the mean over
the occurrences in the batch); a batch with no occurrence trains on the plain LM loss, as in
the paper.

Terms: ``h`` is the last hidden state (the input of the LM head); ``e_t`` is a term's
output embedding (``model.get_output_embeddings()``), the mean over its subword tokens;
a term is tokenized with a leading space (its form inside a sentence) and without (at the
start of a text); LMD uses the form of each occurrence, ADD and HD the in-sentence form.
Occurrences come from the shared term matcher (:mod:`biaslens.methods.redditbias.dataset.terms`):
whole words and their plural/possessive forms, any case (wildcard attributes such as
``greed*`` included), mapped to the very tokens the model trains on. Every method trains with
a start token before each phrase (the tokenizer's document-start token), so a target opening
a phrase is predicted by the start token's state and carries the LMD loss like any other.

The loss functions (:func:`lmd_loss`, :func:`add_loss`, :func:`bias_subspace`,
:func:`hd_loss`) are pure tensor functions; the rest is plumbing.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from biaslens.environment import applies_environment_policy
from biaslens.fileio import write_atomic
from biaslens.methods.redditbias.dataset import (
    BiasSpec,
    RedditBiasError,
    attribute_swap,
    augment,
    find_files,
    read_lines,
    template_pairs,
)
from biaslens.methods.redditbias.dataset.terms import compound_affixes, inflect, matcher
from biaslens.mitigation.training import TrainExample, TrainingConfig, TrainingResult, train_causal_lm
from biaslens.models.tokenized import pick_start_token

log = logging.getLogger(__name__)

METHODS = ("cda", "lmd", "add", "hd")
CDA_MODES = ("targets", "attributes")

#: the authors' grid (paper section 5 / spec section 4); 2 epochs, lr 5e-5, AdamW
REFERENCE_GRID: dict[str, list] = {
    "batch_size": [4, 8, 16],
    "grad_accum": [1, 5, 8],
    "lm_weight": [0.001, 0.01],
    "debias_weight": [10, 50, 100],
}
GRID_KEYS = ("batch_size", "grad_accum", "lm_weight", "debias_weight", "epochs", "learning_rate")


# --------------------------------------------------------------------------- pure losses


def lmd_loss(logits_t1, logits_t2, mask):
    """LMD (paper eq. 1) from the logits of the paired terms at each occurrence.

    Args:
        logits_t1: ``[N, P]`` logit of the pair's first term at each of N occurrences.
        logits_t2: ``[N, P]`` logit of the pair's second term.
        mask: ``[N, P]`` bool, True where the occurring term belongs to pair p (P_t).

    Returns:
        Mean over occurrences of ``mean_{p in P_t} |log softmax(l1, l2)[0] - log softmax(l1, l2)[1]|``;
        a zero (still in the graph) when N is 0.
    """
    import torch

    if logits_t1.shape[0] == 0:
        return logits_t1.sum() * 0.0
    logp = torch.log_softmax(torch.stack([logits_t1, logits_t2], dim=-1), dim=-1)  # reduced vocabulary
    ratio = (logp[..., 0] - logp[..., 1]).abs()
    m = mask.to(ratio.dtype)
    per_occurrence = (ratio * m).sum(-1) / m.sum(-1).clamp(min=1.0)
    return per_occurrence.mean()


def add_loss(attr_states, e_t1, e_t2):
    """ADD (paper eq. 3): mean over attribute occurrences of ``sum_p |cos(a, t1_p) - cos(a, t2_p)|``.

    Args:
        attr_states: ``[N, D]`` contextual states of N attribute occurrences.
        e_t1, e_t2: ``[P, D]`` output embeddings of the pairs' terms.
    """
    import torch.nn.functional as F

    if attr_states.shape[0] == 0:
        return attr_states.sum() * 0.0 + e_t1.sum() * 0.0
    a = F.normalize(attr_states, dim=-1)
    c1 = a @ F.normalize(e_t1, dim=-1).T
    c2 = a @ F.normalize(e_t2, dim=-1).T
    return (c1 - c2).abs().sum(-1).mean()


def bias_subspace(e_t1, e_t2, explained: float = 0.5):
    """Bias subspace (paper 4.3 step 1): top-k right singular vectors of ``C = (e_t1 - e_t2) / 2``.

    Args:
        e_t1, e_t2: ``[P, D]`` output embeddings of the pairs' terms.
        explained: k is the smallest number of singular values whose squares reach this
            share of ``||C||_F^2``.

    Returns:
        ``[k, D]`` orthonormal rows ``b_j``.
    """
    import torch

    c = (e_t1 - e_t2) / 2
    _, s, vh = torch.linalg.svd(c, full_matrices=False)
    share = torch.cumsum(s**2, 0) / (s**2).sum().clamp(min=1e-12)
    k = int(torch.searchsorted(share, torch.tensor(explained, dtype=share.dtype) - 1e-9).item()) + 1
    return vh[: min(k, vh.shape[0])]


def hd_loss(attr_states, subspace):
    """HD (paper eq. 4): mean over attribute occurrences of ``sum_j |<a, b_j>|``.

    Args:
        attr_states: ``[N, D]`` contextual states of N attribute occurrences.
        subspace: ``[k, D]`` bias directions from :func:`bias_subspace`.
    """
    if attr_states.shape[0] == 0:
        return attr_states.sum() * 0.0
    return (attr_states @ subspace.T).abs().sum(-1).mean()


# --------------------------------------------------------------------------- terms


@dataclass
class TermSet:
    """Target pairs and attributes of a specification, resolved through a tokenizer.

    Attributes:
        targets: unique target words (lowercase, stripped) in base and plural form and their
            compounds ("muslim", "muslims", "girlfriend"): LMD compares the pair in the form
            that occurs.
        pairs: ``(i, j)`` indices into ``targets`` for each target pair in each of those forms.
        target_ids: per target, ``(ids with a leading space, ids without)``.
        attributes: A1 attributes (wildcards kept, e.g. ``greed*``).
        base_pairs: the specification's pairs in base form (ADD and HD: one direction per pair).
        terms: the specification's target terms as the shared matcher sees them.
    """

    targets: list[str]
    pairs: list[tuple[int, int]]
    target_ids: list[tuple[list[int], list[int]]]
    attributes: list[str]
    base_pairs: list[tuple[int, int]] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"target_pairs": [[self.targets[i], self.targets[j]] for i, j in self.pairs],
                "target_token_ids": {t: {"with_space": a, "without_space": b}
                                     for t, (a, b) in zip(self.targets, self.target_ids)},
                "attributes": self.attributes}


def term_token_ids(tokenizer, term: str) -> tuple[list[int], list[int]]:
    """Token ids of ``term`` with a leading space and without one.

    A lone whitespace token some tokenizers emit for the leading space (SentencePiece) is
    dropped, so both forms name the word itself.
    """
    forms = []
    for text in (" " + term, term):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        while len(ids) > 1 and not tokenizer.decode(ids[:1]).strip():
            ids = ids[1:]
        if not ids:
            raise RedditBiasError(f"term {term!r} has no tokens in this tokenizer")
        forms.append(list(ids))
    return forms[0], forms[1]


#: LMD compares the pair in the form that occurs; a possessive's next token is the word itself
_LMD_FORM = {"base": "base", "possessive": "base", "plural": "plural", "plural_possessive": "plural"}


def resolve_terms(spec: BiasSpec, tokenizer) -> TermSet:
    """The specification's target pairs (base and plural forms) and A1 attributes for the losses."""
    targets: list[str] = []
    pairs: list[tuple[int, int]] = []
    base_pairs: list[tuple[int, int]] = []

    def index(t: str) -> int:
        if t not in targets:
            targets.append(t)
        return targets.index(t)

    for prefix, suffix in compound_affixes():
        for form in ("base", "plural"):
            for a, b in spec.target_pairs:
                ij = (index(inflect(prefix + a.strip().lower() + suffix, form)),
                      index(inflect(prefix + b.strip().lower() + suffix, form)))
                if ij[0] != ij[1] and ij not in pairs:
                    pairs.append(ij)
                    if form == "base" and not prefix + suffix:
                        base_pairs.append(ij)
    if not pairs:
        raise RedditBiasError(f"specification {spec.name!r}: no target pair with two different terms")
    ids = [term_token_ids(tokenizer, t) for t in targets]
    attributes = list(dict.fromkeys(a.strip().lower() for a in spec.A1))
    terms = list(dict.fromkeys(t.strip().lower() for p in spec.target_pairs for t in p))
    return TermSet(targets, pairs, ids, attributes, base_pairs, terms)


def find_spans(text: str, terms: Sequence[str], *, inflections: bool = True) -> list[tuple[int, int, int]]:
    """Occurrences ``(start, end, term index)`` of ``terms`` by the shared matcher
    (:mod:`biaslens.methods.redditbias.dataset.terms`): whole words and their inflected forms, any
    case, longest match first; ``*`` is a wildcard word ending."""
    return [(m.start, m.end, m.term) for m in matcher(tuple(terms), inflections).find(text)]


def target_spans(text: str, terms: TermSet) -> list[tuple[int, int, int]]:
    """Target occurrences labelled ``2 * target index + (1 if preceded by a space)``, the target
    being the matched term in the occurring form (base or plural)."""
    out = []
    for m in matcher(tuple(terms.terms)).find(text):
        word = inflect(m.prefix + terms.terms[m.term] + m.suffix, _LMD_FORM[m.form])
        if word not in terms.targets:  # a term of no pair (cannot happen for built-in specs)
            continue
        spaced = m.start > 0 and text[m.start - 1].isspace()
        out.append((m.start, m.end, 2 * terms.targets.index(word) + int(spaced)))
    return out


# --------------------------------------------------------------------------- extra losses on a batch


def _term_vectors(model, ids: Sequence[Sequence[int]]):
    """``[T, D]`` mean output embedding and ``[T]`` mean output bias (0 without a bias) per term."""
    import torch

    head = model.get_output_embeddings()
    w = head.weight
    # one gather for all terms: each separate index op would back-propagate a dense
    # vocabulary-sized gradient (with ~100 inflected and compound targets, 10x slower steps)
    flat = torch.tensor([t for i in ids for t in i], device=w.device)
    seg = torch.tensor([k for k, i in enumerate(ids) for _ in i], device=w.device)
    count = torch.bincount(seg, minlength=len(ids)).to(w.dtype)
    vec = w.new_zeros((len(ids), w.shape[1])).index_add(0, seg, w[flat]) / count[:, None]
    b = getattr(head, "bias", None)
    bias = (b.new_zeros(len(ids)).index_add(0, seg, b[flat]) / count) if b is not None else torch.zeros(len(ids), dtype=w.dtype)
    return vec, bias


def _last_hidden(outputs):
    hs = getattr(outputs, "hidden_states", None)
    if not hs:
        raise RuntimeError("the model returned no hidden states; it needs output_hidden_states support")
    return hs[-1]


def _attribute_states(hidden, spans_per_example):
    """``[N, D]``: the hidden states of each attribute occurrence, averaged over its subword tokens."""
    import torch

    rows = [hidden[b, s:e].mean(0) for b, spans in enumerate(spans_per_example) for s, e, _ in spans]
    return torch.stack(rows) if rows else hidden.new_zeros((0, hidden.shape[-1]))


def lmd_positions(target_spans_per_example) -> list[tuple[int, int, int]]:
    """``(example, position, label)`` of the hidden state that predicts each target occurrence:
    the token before its first token. Training prepends a start token, so a target at the
    start of a text is predicted by the start token's state; a span at token 0 means the
    start token is missing, and is an error rather than an occurrence silently skipped."""
    out = []
    for b, spans in enumerate(target_spans_per_example):
        for s, _, label in spans:
            if s < 1:
                raise RedditBiasError("a target occurrence at token 0 has no predicting state: "
                                      "LMD training needs a start token (TrainingConfig.start_token)")
            out.append((b, s - 1, label))
    return out


def make_lmd_loss(terms: TermSet):
    """``extra_loss`` for :func:`train_causal_lm`: LMD at every target occurrence."""
    import torch

    def loss(model, batch, outputs):
        hidden = _last_hidden(outputs)
        n = len(terms.target_ids)
        vec, bias = _term_vectors(model, [a for a, _ in terms.target_ids] + [b for _, b in terms.target_ids])
        (with_space, without), (bias_sp, bias_no) = vec.split(n), bias.split(n)
        bias_sp, bias_no = bias_sp.to(hidden.device), bias_no.to(hidden.device)
        i1 = torch.tensor([i for i, _ in terms.pairs])
        i2 = torch.tensor([j for _, j in terms.pairs])
        states, forms, masks = [], [], []
        for b, pos, label in lmd_positions(batch["target_spans"]):
            term, spaced = divmod(label, 2)
            states.append(hidden[b, pos])
            forms.append(spaced)
            masks.append([term in p for p in terms.pairs])
        if not states:
            return None  # no target in this batch: plain LM loss
        h = torch.stack(states)
        spaced = torch.tensor(forms, dtype=torch.bool, device=h.device).unsqueeze(-1)
        l1 = torch.where(spaced, h @ with_space[i1].T + bias_sp[i1], h @ without[i1].T + bias_no[i1])
        l2 = torch.where(spaced, h @ with_space[i2].T + bias_sp[i2], h @ without[i2].T + bias_no[i2])
        return lmd_loss(l1, l2, torch.tensor(masks, device=h.device))

    return loss


def make_add_loss(terms: TermSet):
    """``extra_loss``: ADD at every A1 attribute occurrence."""
    import torch

    def loss(model, batch, outputs):
        hidden = _last_hidden(outputs)
        vec, _ = _term_vectors(model, [a for a, _ in terms.target_ids])
        i1 = torch.tensor([i for i, _ in terms.base_pairs])
        i2 = torch.tensor([j for _, j in terms.base_pairs])
        states = _attribute_states(hidden, batch["attribute_spans"])
        return add_loss(states, vec[i1], vec[i2]) if states.shape[0] else None

    return loss


def make_hd_loss(terms: TermSet, model_path: str | Path):
    """``extra_loss``: HD at every A1 attribute occurrence.

    The bias subspace is computed once from the original model's output embeddings (as in
    hard debiasing, the directions to neutralize are fixed before training).
    """
    import torch
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    with torch.no_grad():
        vec, _ = _term_vectors(base, [a for a, _ in terms.target_ids])
        i1 = [i for i, _ in terms.base_pairs]
        i2 = [j for _, j in terms.base_pairs]
        subspace = bias_subspace(vec[i1], vec[i2]).detach().clone()
    del base

    def loss(model, batch, outputs):
        hidden = _last_hidden(outputs)
        states = _attribute_states(hidden, batch["attribute_spans"])
        return hd_loss(states, subspace.to(hidden.device, hidden.dtype)) if states.shape[0] else None

    loss.subspace = subspace  # type: ignore[attr-defined]
    return loss


# --------------------------------------------------------------------------- data


@dataclass
class DebiasData:
    """Training and validation texts for one bias type, and where they came from."""

    train: list[str]
    valid: list[str]
    source: str  # "text_files" | "templates"
    files: list[str] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)


def load_debias_data(spec: BiasSpec, data_dir: str | Path | None, *, max_template_pairs: int = 400,
                     seed: int = 0) -> DebiasData:
    """The bias type's ``text_files/<type>/<type>_bias_manual_{train,valid}.txt``, or, without a
    data folder, template phrases built from the specification (90% train, 10% valid)."""
    if data_dir is None:
        phrases = template_pairs(spec, max_pairs=max_template_pairs, seed=seed)["phrase"].tolist()
        n_valid = max(1, len(phrases) // 10)
        return DebiasData(phrases[n_valid:], phrases[:n_valid], "templates",
                          notes={"n_template_phrases": len(phrases)})
    files = find_files(data_dir, spec, "valid").text_files
    train_key, valid_key = f"{spec.name}_bias_manual_train", f"{spec.name}_bias_manual_valid"
    if train_key not in files:
        raise RedditBiasError(f"--data-dir {data_dir}: no text_files/{spec.name}/{train_key}.txt "
                              f"(found: {', '.join(sorted(files)) or 'nothing'}); omit --data-dir to train on "
                              "phrases built from the specification")
    train = _strip_bos(read_lines(files[train_key]))
    valid = _strip_bos(read_lines(files[valid_key])) if valid_key in files else []
    used = [str(files[train_key])] + ([str(files[valid_key])] if valid_key in files else [])
    return DebiasData(train, valid, "text_files", files=used)


def _strip_bos(lines: list[str]) -> list[str]:
    """Drop the literal "<bos> " some authors' files start lines with (orientation): it is a
    marker of their data pipeline, not text the model should learn or the losses should see."""
    return [re.sub(r"^<bos>\s*", "", t) for t in lines]


def cda_texts(texts: Sequence[str], spec: BiasSpec, mode: str = "targets",
              counterfactual_mode: str = "default", sides: str = "one-sided") -> tuple[list[str], dict[str, int]]:
    """Phrases plus their swapped copies: target swap minoritized -> dominant (the paper's
    one-sided CTDA; ``sides="two-sided"`` adds dominant -> minoritized copies) or attribute swap
    (CADA). Phrases a swap does not change are not duplicated."""
    texts = list(texts)
    if mode == "targets":
        swaps = list(augment(texts, spec, counterfactual_mode, sides).values())
    elif mode == "attributes":
        swaps = [attribute_swap(texts, spec, counterfactual_mode)]
    else:
        raise RedditBiasError(f"CDA mode must be one of {', '.join(CDA_MODES)}, got {mode!r}")
    added = [t for s in swaps for t, changed in zip(s.texts, s.changed) if changed]
    return texts + added, {"n_original": len(texts), "n_swapped_copies": len(added)}


def shipped_cda_file(spec: BiasSpec, data_dir: str | Path | None, mode: str) -> Path | None:
    """The data folder's ``<type>_bias_manual_swapped_{targets,attr}_train.txt`` (phrases plus
    swapped copies, as the authors trained CDA), if present."""
    if data_dir is None:
        return None
    key = f"{spec.name}_bias_manual_swapped_{'targets' if mode == 'targets' else 'attr'}_train"
    return find_files(data_dir, spec, "valid").text_files.get(key)


def build_examples(texts: Sequence[str], method: str, terms: TermSet | None) -> tuple[list[TrainExample], dict[str, int]]:
    """Training examples with the spans the method's loss needs, and occurrence counts."""
    out, n_t, n_a = [], 0, 0
    for t in texts:
        spans = {}
        if method == "lmd":
            spans["target_spans"] = target_spans(t, terms)
            n_t += len(spans["target_spans"])
        elif method in ("add", "hd"):
            spans["attribute_spans"] = find_spans(t, terms.attributes)
            n_a += len(spans["attribute_spans"])
        out.append(TrainExample(t, spans=spans))
    return out, {"target_occurrences": n_t, "attribute_occurrences": n_a}


# --------------------------------------------------------------------------- training


@dataclass
class DebiasOptions:
    """What to train: a method on one bias type, with the training hyperparameters."""

    method: str
    spec: BiasSpec
    data_dir: Path | None = None
    cda_mode: str = "targets"
    counterfactual_mode: str = "default"
    cda_sides: str = "one-sided"
    max_template_pairs: int = 400
    training: TrainingConfig = field(default_factory=TrainingConfig)
    #: phrase perplexity in grid validation: True = start token, False = the authors' exp(loss)
    score_first_token: bool = True


@applies_environment_policy
def debias(model_path: str | Path, out: str | Path, opts: DebiasOptions, *,
           keep_checkpoints: bool = False) -> tuple[TrainingResult, dict[str, Any]]:
    """Debias a causal LM with one method and write the model folder ``out`` plus ``debias.json``.

    Returns:
        The training result and the record written to ``out/debias.json``.
    """
    from transformers import AutoTokenizer

    if opts.method not in METHODS:
        raise RedditBiasError(f"unknown debiasing method {opts.method!r}; choose from {', '.join(METHODS)}")
    data = load_debias_data(opts.spec, opts.data_dir, max_template_pairs=opts.max_template_pairs,
                            seed=opts.training.seed)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    terms = resolve_terms(opts.spec, tokenizer) if opts.method != "cda" else None
    texts, notes = data.train, dict(data.notes)
    if opts.method == "cda":
        shipped = shipped_cda_file(opts.spec, opts.data_dir, opts.cda_mode)
        if shipped is not None:  # the authors' own augmented set: phrases plus swapped copies
            texts = _strip_bos(read_lines(shipped))
            notes.update({"cda_file": str(shipped), "n_original": len(data.train),
                          "n_swapped_copies": len(texts) - len(data.train)})
        else:
            texts, counts = cda_texts(texts, opts.spec, opts.cda_mode, opts.counterfactual_mode, opts.cda_sides)
            notes.update(counts)
    examples, occ = build_examples(texts, opts.method, terms)
    valid, _ = build_examples(data.valid, opts.method, terms)
    needed = {"lmd": "target_occurrences", "add": "attribute_occurrences", "hd": "attribute_occurrences"}.get(opts.method)
    if needed and occ[needed] == 0:
        raise RedditBiasError(f"{opts.method}: no {needed.split('_')[0]} term of {opts.spec.name!r} occurs in the "
                              f"{len(texts)} training texts, so the debiasing loss would be 0")
    extra = {"lmd": lambda: make_lmd_loss(terms), "add": lambda: make_add_loss(terms),
             "hd": lambda: make_hd_loss(terms, model_path)}.get(opts.method)
    extra_loss = extra() if extra else None
    cfg = opts.training
    if cfg.start_token is None:
        # every method: a start token before each phrase, so its first word is predicted (LMD's
        # occurrence at token 0, CDA's swapped target opening "muslims are ...") and an attribute
        # there has a context; pretraining documents start after it too
        start = pick_start_token(tokenizer)
        if start is None:
            raise RedditBiasError(f"{model_path}: the tokenizer has no document-start, BOS or EOS token to put "
                                  "before each phrase; without one, targets opening a phrase get no loss")
        cfg = replace(cfg, start_token=start)
    if extra_loss is None:  # CDA: plain LM loss at full weight
        cfg = replace(cfg, lm_weight=1.0, extra_weight=0.0)
    record: dict[str, Any] = {
        "method": opts.method, "bias_type": opts.spec.name, "data_source": data.source, "data_files": data.files,
        "n_train_texts": len(texts), "n_valid_texts": len(data.valid), **notes, **occ,
        "lm_weight": cfg.lm_weight, "debias_weight": cfg.extra_weight if extra_loss else None,
    }
    if opts.method == "cda":
        record.update({"cda_mode": opts.cda_mode, "counterfactual_mode": opts.counterfactual_mode,
                       "cda_sides": opts.cda_sides})
    if terms is not None:
        record["terms"] = terms.record()
    if opts.method == "hd":
        record["bias_subspace_dim"] = int(extra_loss.subspace.shape[0])
    result = train_causal_lm(model_path, examples, out, config=cfg, eval_examples=valid or None,
                             extra_loss=extra_loss, description=record, keep_checkpoints=keep_checkpoints)
    # the occurrences the loss received: found in the text, kept by tokenization and truncation
    for key, name in (("target_spans", "target_occurrences"), ("attribute_spans", "attribute_occurrences")):
        if key in result.span_counts:
            record[f"{name}_in_text"] = record[name]
            record[name] = result.span_counts[key]
            record[f"{name}_cut_by_truncation"] = record[f"{name}_in_text"] - record[name]
    record["start_token"] = cfg.start_token
    record["training"] = {"steps": result.steps, "train_loss": result.train_loss, "eval_loss": result.eval_loss,
                          "eval_perplexity": result.eval_perplexity, "eval_perplexity_definition":
                          f"exp(mean LM cross-entropy on the validation texts), start token {cfg.start_token!r} "
                          "prepended and every text token scored, debias term excluded",
                          "eval_debias_loss": result.eval_extra_loss, "resumed_from": result.resumed_from,
                          "config": asdict(cfg)}
    record["base_model"] = str(model_path)
    _write_json(Path(out) / "debias.json", record)
    return result, record


# --------------------------------------------------------------------------- grid


def load_grid(path: str | Path | None, method: str) -> list[dict[str, Any]]:
    """Grid points: the reference grid, or a YAML/JSON mapping of key -> list of values.

    CDA has no debiasing loss: its grid drops ``lm_weight`` and ``debias_weight``.
    """
    import yaml

    if path is None:
        grid = dict(REFERENCE_GRID)
    else:
        path = Path(path)
        try:
            grid = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise RedditBiasError(f"{path}: cannot read the grid: {e}") from None
        if not isinstance(grid, dict) or not grid:
            raise RedditBiasError(f"{path}: a grid is a mapping of hyperparameter -> list of values, "
                                  f"keys from {', '.join(GRID_KEYS)}")
        for k, v in grid.items():
            if k not in GRID_KEYS:
                raise RedditBiasError(f"{path}: unknown grid key {k!r}; use {', '.join(GRID_KEYS)}")
            if not isinstance(v, list):
                grid[k] = [v]
            if not grid[k] or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0
                                      for x in grid[k]):
                raise RedditBiasError(f"{path}: grid key {k!r}: expected a list of positive numbers, got {v!r}")
    if method == "cda":
        grid = {k: v for k, v in grid.items() if k not in ("lm_weight", "debias_weight")}
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def point_name(point: dict[str, Any]) -> str:
    short = {"batch_size": "bs", "grad_accum": "ga", "lm_weight": "lm", "debias_weight": "db", "epochs": "ep",
             "learning_rate": "lr"}
    return "-".join(f"{short[k]}{v:g}" for k, v in point.items())


def apply_point(cfg: TrainingConfig, point: dict[str, Any]) -> TrainingConfig:
    values = asdict(cfg)
    for k, v in point.items():
        values["extra_weight" if k == "debias_weight" else k] = int(v) if k in ("batch_size", "grad_accum") else v
    return TrainingConfig(**values)


def validation_lmb(model_dir: str | Path, spec: BiasSpec, data_dir: str | Path | None, *,
                   max_template_pairs: int = 400, seed: int = 0, batch_size: int | None = None,
                   score_first_token: bool = True) -> dict[str, Any]:
    """LMB of a model on the bias type's validation split (target view), via the redditbias suite's
    own functions; without a data folder, on template phrases."""
    import pandas as pd

    from biaslens.config import RunConfig
    from biaslens.engine.scoring import score_texts
    from biaslens.methods.redditbias.dataset.views import build_views
    from biaslens.methods.redditbias.metrics import lmb_by_view
    from biaslens.models import load_model
    from biaslens.models.base import perplexity_definition

    config = RunConfig.validated({"suite": "redditbias", "use_cache": False,
                                  "model": {"name": str(model_dir), "score_first_token": score_first_token},
                                  "seed": seed, "redditbias": {
                                      "data_dir": str(data_dir) if data_dir else None, "split": "valid",
                                      "bias_types": [spec.name], "max_template_pairs": max_template_pairs}})
    views = [v for v in build_views({spec.name: spec}, config.redditbias, seed=config.seed) if v.view == "target"]
    backend = load_model(str(model_dir), score_first_token=score_first_token)
    for v in views:
        if not v.scored:
            texts = v.pairs["phrase"].tolist() + v.pairs["counterfactual"].tolist()
            ppl = [s.perplexity() for s in score_texts(backend, texts, batch_size=batch_size or 16)]
            n = len(v.pairs)
            v.pairs["ppl_minoritized"], v.pairs["ppl_dominant"] = ppl[:n], ppl[n:]
    pairs = pd.concat([v.pairs.assign(bias_type=v.bias_type, view=v.view, source=v.source) for v in views],
                      ignore_index=True)
    _, metrics = lmb_by_view(pairs, seed=seed, outlier_removal={(v.bias_type, v.view): v.outlier_removal for v in views})
    m = metrics[spec.name]
    return {"t": m["t"], "p": m["p"], "n_pairs": m["n_pairs"], "source": m.get("source"),
            "split": "valid" if data_dir else "templates", "perplexity_definition": perplexity_definition(backend)}


@applies_environment_policy
def run_grid(model_path: str | Path, out: str | Path, opts: DebiasOptions, points: list[dict[str, Any]], *,
             progress=None) -> dict[str, Any]:
    """Train every grid point, measure validation LMB, keep the model with the highest p-value.

    ``out/grid.json`` records every point (resumable: finished points are skipped); the best
    model is copied to ``out`` itself, so ``out`` is a model folder like a single run's. Other
    points' weights are deleted (their records stay).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    grid_file = out / "grid.json"
    state = json.loads(grid_file.read_text()) if grid_file.exists() else {}
    # names in grid.json become folders under out/points (whose weights get deleted): an edited
    # file must not point elsewhere, so only plain folder names are kept
    done = {p["name"]: p for p in state.get("points", []) if isinstance(p, dict) and _plain_name(p.get("name"))}
    if state.get("best") is not None and (not isinstance(state["best"], dict) or state["best"].get("name") not in done):
        raise RedditBiasError(f"{grid_file}: 'best' is not one of the recorded points; delete the file to start over")
    state.update({"method": opts.method, "bias_type": opts.spec.name, "selection": "highest validation p-value",
                  "n_points": len(points)})
    best = state.get("best")
    for k, point in enumerate(points, 1):
        name = point_name(point)
        if name in done:
            continue
        if progress:
            progress(f"grid point {k}/{len(points)}: {name}")
        point_dir = out / "points" / name
        cfg = apply_point(opts.training, point)
        result, record = debias(model_path, point_dir, DebiasOptions(**{**opts.__dict__, "training": cfg}))
        lmb = validation_lmb(point_dir, opts.spec, opts.data_dir, max_template_pairs=opts.max_template_pairs,
                             seed=cfg.seed, batch_size=cfg.batch_size, score_first_token=opts.score_first_token)
        entry = {"name": name, **point, "steps": result.steps, "train_loss": result.train_loss,
                 "eval_loss": result.eval_loss, "valid_t": lmb["t"], "valid_p": lmb["p"],
                 "valid_n_pairs": lmb["n_pairs"], "valid_split": lmb["split"],
                 "valid_perplexity_definition": lmb["perplexity_definition"]}
        done[name] = entry
        p = lmb["p"]
        if best is None or (p == p and (best["valid_p"] != best["valid_p"] or p > best["valid_p"])):
            if best is not None:
                _drop_weights(out / "points" / best["name"])
            best = entry
            _copy_model(point_dir, out)
        else:
            _drop_weights(point_dir)
        state.update({"points": list(done.values()), "best": best})
        _write_json(grid_file, state)
    return state


def _copy_model(src: Path, dst: Path) -> None:
    for f in src.iterdir():
        if f.is_file():
            shutil.copy2(f, dst / f.name)


def _plain_name(name: Any) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name and "\\" not in name


def _drop_weights(folder: Path) -> None:
    for f in folder.glob("*.safetensors"):
        f.unlink(missing_ok=True)
    for f in folder.glob("*.bin"):
        f.unlink(missing_ok=True)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=2, default=str))
