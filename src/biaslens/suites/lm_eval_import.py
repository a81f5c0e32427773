"""A suite's per-text scores from lm-evaluation-harness's logged samples: perplexity rebuilt from
lm-eval's rolling log-likelihoods and the named tokenizer's token counts, with no model calls
(``biaslens run SUITE --from-lm-eval SAMPLES --tokenizer MODEL``; each method names its task).

biaslens scores every token of a text after one document-start token (``pick_start_token``);
lm-eval's ``loglikelihood_rolling`` scores every token after one prefix token (``prefix_token_id``
from --model_args, else the tokenizer's BOS, else its EOS). The two agree when that prefix is
biaslens's start token; where it is not, the run records the token lm-eval used and warns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from biaslens.datasets.lm_eval import lm_eval_run_info, match_selection, read_lm_eval_samples
from biaslens.models.embedded import EMBEDDED_NAME, model_folder
from biaslens.models.tokenized import load_tokenizer, pick_start_token

if TYPE_CHECKING:
    from biaslens.runner import RunContext


def lm_eval_prefix(info: dict, tokenizer) -> tuple[str | None, str]:
    """The token lm-eval conditioned each sentence's first token on, and how that is known."""
    if info.get("prefix_token_id") is not None:
        return tokenizer.convert_ids_to_tokens(info["prefix_token_id"]), "prefix_token_id in lm-eval's model_args"
    if info:
        if info.get("bos"):
            return info["bos"][0], "lm-eval's default: the tokenizer's BOS (results file)"
        if info.get("eos"):
            return info["eos"][0], "lm-eval's default: the tokenizer's EOS (results file)"
    tok = tokenizer.bos_token or tokenizer.eos_token
    return tok, "assumed: lm-eval's HF default (BOS, else EOS) of --tokenizer; no results file beside the samples"


def scores_from_lm_eval(ctx: RunContext, rows: pd.DataFrame, selection: str, *, path, tokenizer_name: str | None,
                        task: str, columns: tuple[str, ...]):
    """``rows`` with lm-eval's ``sum_logprob``, the tokenizer's ``n_tokens`` and ``perplexity``,
    after every check of the samples; records the model and lm-eval facts in run.json.
    Returns (rows, tokenizer)."""
    tok_name = model_folder(tokenizer_name) if tokenizer_name == EMBEDDED_NAME else tokenizer_name
    if not tok_name:
        from biaslens.errors import ConfigError

        raise ConfigError("--from-lm-eval needs --tokenizer MODEL_OR_FOLDER (the model lm-eval ran, or its "
                          "tokenizer) to count each text's tokens")
    with ctx.timer("lm_eval_samples"):
        samples = read_lm_eval_samples(path, task=task, columns=columns)
        rows = match_selection(samples, rows, path=path, selection=selection)
        info = lm_eval_run_info(path)
    tokenizer = load_tokenizer(tok_name)
    texts = rows["text"].astype(str).tolist()
    with ctx.timer("token_counts"):
        # biaslens's count: the text's own tokens (no special tokens), every one of them scored
        n_tokens = np.asarray([len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]])
    ll = rows["loglikelihood"].to_numpy(dtype=np.float64)
    rows = rows.drop(columns=["loglikelihood"]).assign(
        perplexity=np.exp(-ll / n_tokens), n_tokens=n_tokens.astype(np.int32), sum_logprob=ll)

    prefix, how = lm_eval_prefix(info, tokenizer)
    ours = pick_start_token(tokenizer)
    warnings = []
    if prefix != ours:
        ours_id = tokenizer.convert_tokens_to_ids(ours) if ours else None
        warnings.append(
            f"lm-eval conditioned each text's first token on {prefix!r} ({how}); biaslens's start token for "
            f"this tokenizer is {ours!r}, so these perplexities differ from a biaslens run of the same model "
            f"(for SmolLM2's chat marker by about 4 nats per sentence); to match, run lm_eval with "
            f"--model_args ...,prefix_token_id={ours_id}")
    # a tokenizer that adds BOS by default makes lm-eval score that BOS as part of each text
    if info.get("add_bos_token") not in ("False", "false") and texts:
        with_special = tokenizer(texts[:1])["input_ids"][0]
        if len(with_special) != int(n_tokens[0]):
            warnings.append(
                f"this tokenizer adds {len(with_special) - int(n_tokens[0])} special token(s) to each text by default, "
                "and lm-eval (without add_bos_token=False) scored them as part of the text: the log-likelihoods "
                "include them while the token counts do not; run lm_eval with --model_args ...,add_bos_token=False")
    name = info.get("pretrained") or tokenizer_name
    ctx.record["model"] = {"backend": "lm-eval", "name": name, "kind": "causal", "weights_hash": None,
                           "dtype": info.get("model_dtype"), "start_token": prefix, "tokenizer": tokenizer_name}
    ctx.record["lm_eval"] = {"samples_file": str(path), "n_samples": len(samples), **{
        k: info.get(k) for k in ("results_file", "model", "model_args", "lm_eval_version")},
        "start_token": prefix, "start_token_source": how, "biaslens_start_token": ours, "warnings": warnings}
    ctx.record["scoring"] = {"n_texts": len(texts), "n_unique": len(set(texts)), "cache_hits": 0, "computed": 0,
                             "seconds": 0.0, "source": "lm-eval samples (no model calls)"}
    # the warnings are printed under the summary table (metrics.json and the report carry them)
    ctx.console.print(f"{len(rows):,} texts from lm-eval samples ({path}), model {name}, prefix token {prefix!r}",
                      markup=False, highlight=False, soft_wrap=True)
    return rows, tokenizer
