"""One resumable fine-tuning loop for causal LMs, on Hugging Face's Trainer.

Methods plug in through two things only:
- the examples: ``TrainExample(text, prompt_chars=..., extras=...)``; tokens of the
  first ``prompt_chars`` characters are context only (no LM loss), ``extras`` carry
  per-example tensors a custom loss needs (e.g. positions of target terms);
- ``extra_loss(model, batch, outputs) -> tensor | None``: added as
  ``lm_weight * LM loss + extra_weight * extra_loss`` (RedditBias LMD/ADD/HD); a batch where it
  returns None (no term occurs) trains on the plain LM loss. Evaluation reports the plain LM
  loss and, separately, the mean extra loss (``eval_extra_loss`` in the log), once per
  evaluation point: the final result reuses the Trainer's evaluation of the saved step.

``TrainingConfig.start_token`` puts a start token before every text (context, no label), so the
text's first token is predicted as well.

Checkpoints go to ``<out>/checkpoints``; re-running the same command resumes from the
last one. The finished model (and tokenizer) is saved to ``<out>`` with
``biaslens-training.json`` describing how it was made.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from biaslens.fileio import write_atomic
from biaslens.options import TRAINING_FIELDS

log = logging.getLogger(__name__)


@dataclass
class TrainExample:
    """One training text.

    Attributes:
        text: the text.
        prompt_chars: tokens of the first ``prompt_chars`` characters get no LM loss.
        extras: per-example values passed through to ``extra_loss`` as batch lists.
        spans: character spans ``(start, end, label)`` per key, turned into token spans
            ``(first_token, end_token, label)`` with the same tokenization the model sees
            (spans cut off by truncation are dropped); passed to ``extra_loss`` like extras.
    """

    text: str
    prompt_chars: int = 0
    extras: dict[str, Any] = field(default_factory=dict)
    spans: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)


def _command_default(name: str) -> Any:
    """A Trainer setting's default as the training commands declare it (:data:`TRAINING_FIELDS`)."""
    return TRAINING_FIELDS[name][0]


@dataclass
class TrainingConfig:
    """The Trainer settings of one fine-tuning run (debias, finetune community, tune style-equality)."""

    # the defaults every training command shows in its --help, declared once there
    epochs: float = _command_default("epochs")
    learning_rate: float = _command_default("learning_rate")
    batch_size: int = _command_default("batch_size")
    grad_accum: int = _command_default("grad_accum")
    max_length: int = 128
    weight_decay: float = 0.0
    warmup_ratio: float = 0.0
    lm_weight: float = 1.0
    extra_weight: float = 1.0
    save_steps: int = _command_default("save_steps")
    eval_steps: int | None = None
    early_stopping_patience: int | None = None
    seed: int = _command_default("seed")
    device: str = _command_default("device")
    max_steps: int = _command_default("max_steps")
    #: token prepended to every text as context (no LM loss on it), so the text's first token
    #: is predicted too (LM loss, RedditBias LMD); None: texts start at their first token
    start_token: str | None = None


@dataclass
class TrainingResult:
    out: Path
    steps: int
    train_loss: float | None
    eval_loss: float | None
    eval_perplexity: float | None  # exp(plain LM loss on the evaluation texts)
    resumed_from: str | None
    history: list[dict] = field(default_factory=list)
    eval_extra_loss: float | None = None  # mean extra (debiasing) loss over evaluation batches with one
    #: token spans per ``TrainExample.spans`` key in the training set after tokenization and
    #: truncation: the occurrences ``extra_loss`` receives
    span_counts: dict[str, int] = field(default_factory=dict)

    def summary(self, evaluation: str = "eval perplexity", digits: int = 1) -> str:
        """One line: "trained N steps, train loss L, <evaluation> P (resumed from C)"."""
        loss = f"{self.train_loss:.3f}" if self.train_loss is not None else "n/a"
        return (f"trained {self.steps} steps, train loss {loss}"
                + (f", {evaluation} {self.eval_perplexity:.{digits}f}" if self.eval_perplexity else "")
                + (f" (resumed from {self.resumed_from})" if self.resumed_from else ""))


class _Examples:
    """Tokenized examples; labels are -100 on context tokens so only the rest is learned."""

    def __init__(self, tokenizer, examples: Sequence[TrainExample], max_length: int, start_id: int | None = None):
        self.items = []
        self.span_keys: set[str] = set()
        lead = [] if start_id is None else [start_id]
        for ex in examples:
            enc = tokenizer(ex.text, add_special_tokens=False, truncation=True, max_length=max_length - len(lead),
                            return_offsets_mapping=True)
            ids = lead + enc["input_ids"]
            # the start token covers no character: no span maps to it, and it is never a label
            offsets = [(0, 0)] * len(lead) + [tuple(o) for o in enc["offset_mapping"]]
            labels = [-100] * len(lead) + [(-100 if end <= ex.prompt_chars else tok)
                                           for tok, (_, end) in zip(enc["input_ids"], enc["offset_mapping"])]
            if not any(label != -100 for label in labels):
                continue  # nothing to learn (context filled the whole window)
            item = {"input_ids": ids, "labels": labels}
            item.update(ex.extras)
            for key, spans in ex.spans.items():
                item[key] = _token_spans(offsets[len(lead):], spans, shift=len(lead))
                self.span_keys.add(key)
            self.items.append(item)

    def span_counts(self) -> dict[str, int]:
        """Token spans per key: the occurrences a loss on these examples receives."""
        return {k: sum(len(it.get(k, [])) for it in self.items) for k in sorted(self.span_keys)}

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        return self.items[i]


def _token_spans(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int, int]],
                 shift: int = 0) -> list[tuple[int, int, int]]:
    """Character spans -> token spans ``(first, end, label)``: tokens overlapping the span, plus
    ``shift`` (tokens before the text). A span cut by truncation (its last character beyond the
    last token kept) is dropped: the loss would see a partial term."""
    out = []
    kept_end = offsets[-1][1] if offsets else 0
    for start, end, label in spans:
        if end > kept_end:
            continue
        toks = [i for i, (a, b) in enumerate(offsets) if a < end and b > start]
        if toks:
            out.append((toks[0] + shift, toks[-1] + 1 + shift, label))
    return out


def _collate(pad_id: int):
    import torch

    def collate(batch: list[dict]) -> dict:
        width = max(len(b["input_ids"]) for b in batch)
        out = {
            "input_ids": torch.full((len(batch), width), pad_id, dtype=torch.long),
            "attention_mask": torch.zeros((len(batch), width), dtype=torch.long),
            "labels": torch.full((len(batch), width), -100, dtype=torch.long),
        }
        for i, b in enumerate(batch):
            n = len(b["input_ids"])
            out["input_ids"][i, :n] = torch.tensor(b["input_ids"])
            out["attention_mask"][i, :n] = 1
            out["labels"][i, :n] = torch.tensor(b["labels"])
        extra_keys = [k for k in batch[0] if k not in ("input_ids", "labels")]
        for k in extra_keys:  # passed through to extra_loss as lists
            out[k] = [b[k] for b in batch]
        return out

    return collate


def train_causal_lm(
    model_path: str | Path,
    train: Sequence[TrainExample],
    out: str | Path,
    *,
    config: TrainingConfig | None = None,
    eval_examples: Sequence[TrainExample] | None = None,
    extra_loss: Callable | None = None,
    add_special_tokens: Sequence[str] = (),
    description: dict[str, Any] | None = None,
    keep_checkpoints: bool = False,
) -> TrainingResult:
    """Fine-tune a causal LM and save it as a model folder.

    Args:
        model_path: a local model folder (``biaslens.models.embedded.embedded_model_dir()``
            for the embedded model) or Hub id.
        train: training examples.
        out: output folder; checkpoints under ``out/checkpoints`` make the run resumable.
        config: hyperparameters.
        eval_examples: validation examples (eval loss/perplexity; early stopping when
            ``config.early_stopping_patience`` is set).
        extra_loss: ``f(model, batch, outputs) -> scalar tensor | None`` added to the LM loss.
        add_special_tokens: tokens to add to the tokenizer (e.g. a separator); the
            embedding matrix is resized and both are saved with the model.
        description: recorded in ``biaslens-training.json`` (method, data, counts).
        keep_checkpoints: keep ``out/checkpoints`` after success (they hold optimizer
            state, several times the model's size).
    """
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        EarlyStoppingCallback,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    cfg = config or TrainingConfig()
    if os.environ.get("BIASLENS_THREADS"):
        # as for scoring; fp32 sums depend on the thread count, so a resumed run matches an
        # uninterrupted one bit for bit only with the same count
        torch.set_num_threads(max(1, int(os.environ["BIASLENS_THREADS"])))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    # seeded before anything draws random numbers: the rows resize_token_embeddings adds are
    # random, and the process's RNG state must not decide them (same seed, same model)
    set_seed(cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    if add_special_tokens:
        new = [t for t in add_special_tokens if t not in tokenizer.get_vocab()]
        if new:
            tokenizer.add_special_tokens({"additional_special_tokens": list(new)})
            model.resize_token_embeddings(len(tokenizer))
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    start_id = start_token_id(tokenizer, cfg.start_token)
    train_ds = _Examples(tokenizer, train, cfg.max_length, start_id)
    if len(train_ds) == 0:
        raise ValueError("no training examples left after tokenization")
    eval_ds = _Examples(tokenizer, eval_examples, cfg.max_length, start_id) if eval_examples else None
    ckpt_dir = out / "checkpoints"
    has_eval = eval_ds is not None and len(eval_ds) > 0
    eval_steps = cfg.eval_steps or cfg.save_steps
    args = TrainingArguments(
        output_dir=str(ckpt_dir),
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        warmup_steps=cfg.warmup_ratio,  # a float < 1 is a fraction of the total steps
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=2,
        eval_strategy="steps" if has_eval else "no",
        eval_steps=eval_steps if has_eval else None,
        load_best_model_at_end=bool(has_eval and cfg.early_stopping_patience),
        metric_for_best_model="eval_loss" if has_eval else None,
        greater_is_better=False if has_eval else None,
        # every checkpoint falls on a logging step, so the log restored on resume is complete
        logging_steps=math.gcd(max(1, cfg.save_steps), 10),
        report_to=[],
        seed=cfg.seed,
        data_seed=cfg.seed,
        use_cpu=cfg.device == "cpu",
        dataloader_num_workers=0,
        remove_unused_columns=False,
    )
    lm_w, ex_w = cfg.lm_weight, cfg.extra_weight

    eval_extra: list[float] = []

    class _Trainer(Trainer):
        def evaluation_loop(self, *args, **kwargs):
            # the mean debiasing loss joins the evaluation's metrics, so it is logged (and kept in
            # checkpoints) with the eval loss of the same evaluation point
            eval_extra.clear()
            output = super().evaluation_loop(*args, **kwargs)
            if eval_extra:
                prefix = kwargs.get("metric_key_prefix", args[4] if len(args) > 4 else "eval")
                output.metrics[f"{prefix}_extra_loss"] = sum(eval_extra) / len(eval_extra)
            return output

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            extras = {k: inputs.pop(k) for k in list(inputs) if k not in ("input_ids", "attention_mask", "labels")}
            outputs = model(**inputs, output_hidden_states=extra_loss is not None)
            loss = outputs.loss
            if extra_loss is not None:
                extra = extra_loss(model, {**inputs, **extras}, outputs)
                if not model.training:
                    # evaluation reports the plain LM loss (its exp is a perplexity); the
                    # debiasing term is recorded on its own
                    if extra is not None:
                        eval_extra.append(float(extra.detach()))
                elif extra is not None:
                    loss = lm_w * loss + ex_w * extra
                # a batch without any occurrence trains on the plain LM loss (paper section 4)
            return (loss, outputs) if return_outputs else loss

    callbacks = []
    if has_eval and cfg.early_stopping_patience:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=cfg.early_stopping_patience))
    trainer = _Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds if has_eval else None,
                       data_collator=_collate(pad_id), processing_class=tokenizer, callbacks=callbacks)
    last = _last_checkpoint(ckpt_dir)
    if last:
        log.info("resuming training from %s", last)
    with trainer_progress(trainer, total=max(cfg.max_steps, 0)):
        train_out = trainer.train(resume_from_checkpoint=str(last) if last else None)
    eval_loss = eval_extra_loss = None
    if has_eval:
        # the Trainer already evaluated the final step (or the best checkpoint it reloaded):
        # reuse that evaluation instead of a second pass over the validation set
        metrics = _evaluation_at(trainer.state, _final_model_step(trainer.state, args.load_best_model_at_end))
        if metrics is None:
            metrics = trainer.evaluate()
        eval_loss = float(metrics["eval_loss"])
        eval_extra_loss = metrics.get("eval_extra_loss")
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    train_loss = float(train_out.training_loss)
    if last:
        # after a resume, transformers reports the mean loss of this session's steps only; add the
        # steps before the checkpoint (from its restored log) to get the whole run's mean
        start, steps = int(last.name.split("-")[1]), int(train_out.global_step)
        if steps > 0:  # (steps == start: resumed from the final checkpoint, no step in this session)
            before = _logged_loss_sum(trainer.state.log_history, upto=start)
            train_loss = (train_loss * (steps - start) + before) / steps
    result = TrainingResult(out=out, steps=int(train_out.global_step), train_loss=train_loss,
                            eval_loss=eval_loss, eval_perplexity=math.exp(eval_loss) if eval_loss is not None else None,
                            eval_extra_loss=eval_extra_loss,
                            resumed_from=str(last) if last else None, history=list(trainer.state.log_history),
                            span_counts=train_ds.span_counts())
    record = {"base_model": str(model_path), "training": asdict(cfg), "description": description or {},
              "n_train_examples": len(train_ds), "n_eval_examples": len(eval_ds) if eval_ds else 0,
              "steps": result.steps, "train_loss": result.train_loss, "eval_loss": eval_loss,
              "eval_perplexity": result.eval_perplexity, "eval_extra_loss": eval_extra_loss, "resumed_from": result.resumed_from,
              "added_tokens": list(add_special_tokens), "span_counts": result.span_counts}
    write_atomic(out / "biaslens-training.json", json.dumps(record, indent=2))
    for junk in ("training_args.bin",):  # a pickle; nothing of ours loads it
        (out / junk).unlink(missing_ok=True)
    if not keep_checkpoints:
        import shutil

        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return result


@contextlib.contextmanager
def trainer_progress(trainer, description: str = "training steps", total: int = 0) -> Iterator[None]:
    """While a Hugging Face Trainer trains: its steps as a bar with a time estimate (a projected
    finish for long runs, a line every 15 s without a terminal) and its loss lines, all on
    standard error. The Trainer's own printer writes the loss lines to standard output, which
    holds a command's results; it is removed."""
    from transformers import PrinterCallback, ProgressCallback

    from biaslens.engine.progress import progress_reporter
    from biaslens.environment import default_console

    console = default_console()
    callback = _progress_callback(console)
    for own in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(own)
    trainer.add_callback(callback)
    with progress_reporter(console, description, total=total) as report:
        callback.report = report
        yield


def _progress_callback(console):
    """A TrainerCallback: each step to ``report`` (the bar and its time estimate, a projected
    finish for long runs), each logged loss as one line on ``console`` (standard error)."""
    from transformers import TrainerCallback

    class _Progress(TrainerCallback):
        report = None

        def on_step_end(self, args, state, control, **kwargs):
            if self.report is not None:
                self.report(state.global_step, state.max_steps)

        def on_log(self, args, state, control, logs=None, **kwargs):
            shown = {k: v for k, v in (logs or {}).items() if k in ("loss", "eval_loss", "eval_extra_loss", "epoch")}
            if "loss" in shown or "eval_loss" in shown:
                console.print(f"training step {state.global_step}/{state.max_steps}: "
                              + ", ".join(f"{k.replace('_', ' ')} {v:.3g}" for k, v in shown.items()),
                              markup=False, highlight=False)

    return _Progress()


def start_token_id(tokenizer, token: str | None) -> int | None:
    """The id of the start token ``token`` (None: no start token); an unknown token is an error."""
    if token is None:
        return None
    if token not in tokenizer.get_vocab():
        raise ValueError(f"start token {token!r} is not a token of this tokenizer")
    return int(tokenizer.convert_tokens_to_ids(token))


def _final_model_step(state, reloaded_best: bool) -> int:
    """The step whose weights are saved: the best checkpoint's when the Trainer reloaded it."""
    import re

    best = getattr(state, "best_model_checkpoint", None) if reloaded_best else None
    m = re.search(r"checkpoint-(\d+)$", str(best or ""))
    return int(m.group(1)) if m else int(state.global_step)


def _evaluation_at(state, step: int) -> dict | None:
    """The logged evaluation metrics of ``step``, if the Trainer evaluated there."""
    found = [e for e in state.log_history if "eval_loss" in e and int(e.get("step", -1)) == step]
    return found[-1] if found else None


def _logged_loss_sum(history: list[dict], upto: int) -> float:
    """Summed training loss of steps 1..``upto`` from the Trainer's log (each entry is the mean
    loss since the previous one)."""
    total, prev = 0.0, 0
    for entry in history:
        if "loss" in entry and "step" in entry and entry["step"] <= upto:
            total += float(entry["loss"]) * (int(entry["step"]) - prev)
            prev = int(entry["step"])
    return total


def _last_checkpoint(ckpt_dir: Path) -> Path | None:
    """The newest *complete* checkpoint. transformers' ``get_last_checkpoint`` takes the highest
    number even when a kill interrupted its save (then resuming crashes); the Trainer writes
    ``trainer_state.json`` last, so a checkpoint whose state file parses is whole."""
    import re

    if not ckpt_dir.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in ckpt_dir.iterdir()
             if p.is_dir() and (m := re.fullmatch(r"checkpoint-(\d+)", p.name))]
    for step, path in sorted(found, reverse=True):
        try:
            state = json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("ignoring incomplete checkpoint %s (interrupted while saving)", path)
            continue
        if isinstance(state, dict) and state.get("global_step") == step:
            return path
    return None


def resolve_model_path(model: str) -> str:
    """A model name as ``train_causal_lm`` wants it: the embedded model's folder for
    ``smollm2-135m``, otherwise unchanged (a folder or Hub id)."""
    from biaslens.models import model_folder

    if model in ("fake", "fake-unbiased"):
        from biaslens.errors import ConfigError

        raise ConfigError("the fake backend cannot be fine-tuned; pass a Hugging Face causal LM folder or id")
    return model_folder(model)

