"""vLLM-side pieces of the vLLM backend. Imports vLLM at module level, so only
:func:`biaslens.models.vllm_backend.load_vllm` imports this module, after checking
that vLLM is installed.
"""

from __future__ import annotations

from functools import partial

import torch
from vllm.v1.sample.logits_processor import AdapterLogitsProcessor

#: SamplingParams.extra_args key that turns the n-gram block on for one request
NGRAM_ARG = "biaslens_no_repeat_ngram_size"


def _block_repeated_ngrams(n: int, output_ids: list[int], logits: torch.Tensor) -> torch.Tensor:
    """Same rule as :class:`biaslens.models.generation.ResponseNoRepeatNGram`: ban every
    token that would complete an n-gram already present in the response so far."""
    seq = output_ids
    if len(seq) < n:
        return logits
    prefix = tuple(seq[len(seq) - n + 1 :])
    banned = [seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i : i + n - 1]) == prefix]
    if banned:
        logits[banned] = -float("inf")
    return logits


class ResponseNoRepeatNGramVLLM(AdapterLogitsProcessor):
    """n-gram blocking within the response (vLLM passes output tokens only, not the
    prompt), for requests that set ``extra_args[NGRAM_ARG]``."""

    def is_argmax_invariant(self) -> bool:
        return False  # it changes which token greedy decoding picks

    def new_req_logits_processor(self, params):
        n = (params.extra_args or {}).get(NGRAM_ARG)
        if not n:
            return None
        return partial(_block_repeated_ngrams, int(n))
