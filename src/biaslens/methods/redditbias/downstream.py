"""Keeping the model useful (RedditBias paper 3.2): two dialog tasks, run on the user's data.

- Dialog state tracking (DST) on MultiWOZ 2.0 ``data.json`` files: for every user turn and
  candidate (domain, slot, value), predict whether it is in the belief state. Input = previous
  system utterance + user utterance + "domain slot value"; a linear classifier on the LM's
  last-token state (transformers' sequence-classification head), trained with binary
  cross-entropy together with the LM by ``transformers.Trainer``; F1 of the positive class
  on the test file.
- Conversational response generation (DSTC-7 format): tab-separated lines whose last two
  columns are the context (turns joined by `` EOS ``) and the response; lines sharing a
  context in the test file are its multiple references. The LM is fine-tuned on the
  responses (context tokens get no loss), then answers each test context greedily; BLEU-4,
  NIST-2 and METEOR (NLTK; METEOR needs the WordNet data and is skipped with the reason
  when it is missing), Entropy-4 and Dist-2.

Each task writes a run folder with ``metrics.json`` (``suite: downstream``, ``task``,
``scores``) that ``biaslens compare`` reads.
"""

from __future__ import annotations

import json
import math
import random
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biaslens.environment import applies_environment_policy
from biaslens.errors import ConfigError
from biaslens.fileio import write_atomic, write_json
from biaslens.mitigation.training import trainer_progress


class DownstreamDataError(ConfigError):
    """A downstream data file is missing or not in the expected format."""


# --------------------------------------------------------------------------- DST


@dataclass
class DSTExample:
    text: str
    label: int


def _belief(metadata: dict) -> set[tuple[str, str, str]]:
    out = set()
    for domain, parts in (metadata or {}).items():
        for part in ("semi", "book"):
            for slot, value in ((parts or {}).get(part) or {}).items():
                if isinstance(value, str) and value.strip() and value.strip().lower() not in ("not mentioned", "none", ""):
                    out.add((domain, slot, value.strip().lower()))
    return out


def read_multiwoz(path: str | Path, *, negatives_per_turn: int = 3, seed: int = 0) -> list[DSTExample]:
    """Binary slot-value examples from a MultiWOZ 2.0 ``data.json``-style file.

    User turns are the even entries of each dialogue's ``log``; the belief state after a user
    turn is the ``metadata`` of the next (system) entry. Positives: every triple of that state;
    negatives: ``negatives_per_turn`` seeded triples of the file's ontology not in the state.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DownstreamDataError(f"{path}: cannot read MultiWOZ JSON: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(d, dict) and isinstance(d.get("log"), list) for d in data.values()):
        raise DownstreamDataError(f"{path}: expected MultiWOZ 2.0 format: {{dialogue_id: {{'log': [turns]}}}}")
    turns = []
    for dialogue in data.values():
        log = dialogue["log"]
        for i in range(0, len(log) - 1, 2):
            prev_system = log[i - 1].get("text", "") if i > 0 else ""
            turns.append((prev_system, log[i].get("text", ""), _belief(log[i + 1].get("metadata", {}))))
    ontology = sorted({t for _, _, state in turns for t in state})
    if not ontology:
        raise DownstreamDataError(f"{path}: no belief-state values in any system turn's metadata")
    rng = random.Random(seed)
    out = []
    for system, user, state in turns:
        others = [t for t in ontology if t not in state]
        for triple in sorted(state):
            out.append(DSTExample(_dst_text(system, user, triple), 1))
        for triple in rng.sample(others, min(negatives_per_turn, len(others))):
            out.append(DSTExample(_dst_text(system, user, triple), 0))
    return out


def _dst_text(system: str, user: str, triple: tuple[str, str, str]) -> str:
    return f"{system} {user} {' '.join(triple)}".strip()


def f1_score(gold: list[int], pred: list[int]) -> dict[str, float]:
    """Precision, recall and F1 of the positive class."""
    tp = sum(g == 1 and p == 1 for g, p in zip(gold, pred))
    fp = sum(g == 0 and p == 1 for g, p in zip(gold, pred))
    fn = sum(g == 1 and p == 0 for g, p in zip(gold, pred))
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": prec, "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}


@applies_environment_policy
def run_dst(model_path: str | Path, train_file: str | Path, test_file: str | Path, out: str | Path, *,
            epochs: float = 1.0, batch_size: int = 8, lr: float = 5e-5, max_steps: int = -1, max_length: int = 128,
            seed: int = 0) -> dict[str, Any]:
    """Train the binary slot-value classifier on ``train_file`` and report F1 on ``test_file``.

    The classifier is transformers' sequence-classification head on the LM (a linear layer on the
    last real token's state), one logit trained with binary cross-entropy together with the LM,
    by the same ``Trainer`` the mitigation fine-tunes use."""
    import numpy as np
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    set_seed(seed)
    train = read_multiwoz(train_file, seed=seed)
    test = read_multiwoz(test_file, seed=seed + 1)
    tok = AutoTokenizer.from_pretrained(model_path)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    # one logit with BCE ("multi-label" with one label); the head finds the last real token by the pad id
    model = AutoModelForSequenceClassification.from_pretrained(
        model_path, num_labels=1, problem_type="multi_label_classification", dtype=torch.float32,
        pad_token_id=tok.pad_token_id)

    def encode(examples: list[DSTExample]) -> list[dict[str, Any]]:
        return [{**tok(e.text, add_special_tokens=False, truncation=True, max_length=max_length),
                 "labels": [float(e.label)]} for e in examples]

    with tempfile.TemporaryDirectory(prefix="biaslens-dst-") as work:
        args = TrainingArguments(output_dir=work, num_train_epochs=epochs, max_steps=max_steps,
                                 per_device_train_batch_size=batch_size, per_device_eval_batch_size=batch_size,
                                 learning_rate=lr, save_strategy="no", report_to=[], seed=seed, data_seed=seed,
                                 use_cpu=not torch.cuda.is_available(), dataloader_num_workers=0, logging_steps=10)
        trainer = Trainer(model=model, args=args, train_dataset=encode(train), data_collator=DataCollatorWithPadding(tok))
        with trainer_progress(trainer, "training the state tracker", total=max(max_steps, 0)):
            steps = trainer.train().global_step
        logits = trainer.predict(encode(test)).predictions
    preds = (np.asarray(logits).reshape(-1) > 0).astype(int).tolist()
    scores = f1_score([e.label for e in test], preds)
    return _write(out, "dst", model_path, scores, {"train_file": str(train_file), "test_file": str(test_file),
                                                   "n_train": len(train), "n_test": len(test), "steps": int(steps)})


# --------------------------------------------------------------------------- response generation


def read_dstc7(path: str | Path) -> list[tuple[str, str]]:
    """(context, response) pairs from a DSTC-7 tab-separated file (last two columns)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DownstreamDataError(f"{path}: cannot read: {e}") from None
    pairs = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) < 2 or not cols[-2].strip():
            raise DownstreamDataError(f"{path}: line {n}: expected tab-separated columns ending in context and response")
        pairs.append((" ".join(t.strip() for t in cols[-2].split(" EOS ")), cols[-1].strip()))
    if not pairs:
        raise DownstreamDataError(f"{path}: no lines")
    return pairs


def _ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def entropy(hyps: list[list[str]], n: int = 4) -> float:
    """Entropy (nats) of the n-gram distribution over all responses (DialoGPT's Entropy-n)."""
    counts = Counter(g for h in hyps for g in _ngrams(h, n))
    total = sum(counts.values())
    return -sum(c / total * math.log(c / total) for c in counts.values()) if total else 0.0


def distinct(hyps: list[list[str]], n: int = 2) -> float:
    """Distinct-n: unique n-grams / all n-grams over all responses."""
    grams = [g for h in hyps for g in _ngrams(h, n)]
    return len(set(grams)) / len(grams) if grams else 0.0


def generation_metrics(hyps: list[str], refs: list[list[str]]) -> tuple[dict[str, float | None], dict[str, str]]:
    """BLEU-4, NIST-2, METEOR, Entropy-4, Dist-2 of responses against multiple references.

    Returns:
        Scores, and the reason for each score that could not be computed.
    """
    h = [x.lower().split() for x in hyps]
    r = [[y.lower().split() for y in rs] for rs in refs]
    scores: dict[str, float | None] = {"entropy_4": entropy(h, 4), "dist_2": distinct(h, 2)}
    skipped: dict[str, str] = {}
    try:
        from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu
        from nltk.translate.nist_score import corpus_nist
    except ImportError:
        skipped.update({k: "nltk is not installed (pip install nltk)" for k in ("bleu_4", "nist_2", "meteor")})
        scores.update({"bleu_4": None, "nist_2": None, "meteor": None})
        return scores, skipped
    scores["bleu_4"] = float(corpus_bleu(r, h, smoothing_function=SmoothingFunction().method1))
    try:
        scores["nist_2"] = float(corpus_nist(r, h, n=2))
    except ZeroDivisionError:
        scores["nist_2"] = 0.0
    try:
        from nltk.translate.meteor_score import meteor_score

        scores["meteor"] = sum(meteor_score(rs, hy) for rs, hy in zip(r, h)) / len(h) if h else 0.0
    except LookupError:
        scores["meteor"] = None
        skipped["meteor"] = "NLTK's WordNet data is not installed (offline); python -m nltk.downloader wordnet"
    return scores, skipped


@applies_environment_policy
def run_generation(model_path: str | Path, train_file: str | Path, test_file: str | Path, out: str | Path, *,
                   epochs: float = 1.0, batch_size: int = 8, lr: float = 5e-5, max_steps: int = -1,
                   max_new_tokens: int = 30, seed: int = 0) -> dict[str, Any]:
    """Fine-tune on the DSTC-7 train responses, answer each test context greedily, score the answers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from biaslens.mitigation.training import TrainExample, TrainingConfig, train_causal_lm

    train = read_dstc7(train_file)
    test = read_dstc7(test_file)
    refs: dict[str, list[str]] = {}
    for ctx, resp in test:
        refs.setdefault(ctx, []).append(resp)
    tok0 = AutoTokenizer.from_pretrained(model_path)
    sep = tok0.eos_token or "\n"
    examples = [TrainExample(f"{c}{sep}{r}{sep}", prompt_chars=len(c) + len(sep)) for c, r in train]
    out = Path(out)
    model_dir = out / "model"
    cfg = TrainingConfig(epochs=epochs, batch_size=batch_size, learning_rate=lr, max_steps=max_steps, seed=seed)
    result = train_causal_lm(model_path, examples, model_dir, config=cfg, description={"task": "dstc7 response generation"})
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    hyps = []
    with torch.no_grad():
        for ctx in refs:
            ids = tok(f"{ctx}{sep}", return_tensors="pt", add_special_tokens=False)
            gen = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad)
            hyps.append(tok.decode(gen[0, ids["input_ids"].shape[1]:], skip_special_tokens=True).strip())
    scores, skipped = generation_metrics(hyps, list(refs.values()))
    (out / "responses.jsonl").parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "responses.jsonl", "".join(json.dumps({"context": ctx, "response": hyp, "references": rs}) + "\n"
                                                  for (ctx, rs), hyp in zip(refs.items(), hyps)))
    return _write(out, "generation", model_path, scores, {"train_file": str(train_file), "test_file": str(test_file),
                                                          "n_train": len(train), "n_test_contexts": len(refs),
                                                          "steps": result.steps, "skipped": skipped})


def _write(out: str | Path, task: str, model_path, scores: dict, details: dict) -> dict[str, Any]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    metrics = {"suite": "downstream", "task": task, "model": str(model_path), "scores": scores, **details}
    write_json(out / "metrics.json", metrics)
    return metrics
