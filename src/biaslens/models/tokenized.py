"""What every backend with a local Hugging Face tokenizer shares (HF causal, masked and
encoder-decoder models, vLLM): the start-token rule, token scores from per-token
log-probabilities, and prompt rendering (chat template or start token).

Torch-free: a backend passes its tokenizer in; nothing here runs a model. Keeping these
rules in one place is what makes the backends agree: vLLM scores and renders prompts
exactly as the reference transformers backend does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from biaslens.models.base import Backend, GenerationParams, GenerationRequest, ModelError, ModelInfo, TokenScores

#: --dtype spellings and the dtype name they mean
DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
          "float16": "float16", "fp16": "float16", "auto": "auto"}

#: tokens that mark a document boundary in pretraining; preferred as the start token
DOCUMENT_START_CANDIDATES = ("<|endoftext|>", "<|begin_of_text|>", "<s>", "[CLS]")

#: model types scored as masked LMs even when the config names no *MaskedLM architecture
_MASKED_MODEL_TYPES = frozenset({"bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2",
                                 "xlm-roberta", "camembert", "mpnet"})


def downloads_allowed() -> bool:
    """Whether a model may come from the Hugging Face Hub: only when the user said so
    (``BIASLENS_ONLINE=1``) or lifted the offline switch the API sets."""
    if os.environ.get("BIASLENS_ONLINE"):
        return True
    return os.environ.get("HF_HUB_OFFLINE", "").lower() not in ("1", "true", "yes", "on")


def check_model_location(name: str) -> None:
    """Fail in one line, before any network attempt, when ``name`` cannot be loaded as asked:
    a path that does not exist, or a Hub id while downloads are off and the local Hugging Face
    cache does not hold it."""
    path = Path(name).expanduser()
    if path.exists():
        return
    # Hub ids are "name" or "owner/name"; anything else is meant as a folder, and so is an
    # "owner/name" whose "owner" is a folder here (models/nope next to a models/ folder)
    separators = ("/", "\\", os.sep, *((os.altsep,) if os.altsep else ()))
    if (name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name or name.endswith(separators)
            or (any(s in name for s in separators) and path.parent.is_dir())):
        raise ModelError(f"cannot load model {name!r}: no such folder")
    if downloads_allowed():
        return
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
    except Exception:  # noqa: BLE001 - an unusable cache is the same as an empty one here
        cached = None
    if not isinstance(cached, str):
        raise ModelError(f"cannot load model {name!r}: it is not a local folder and biaslens is offline, so "
                         "nothing was downloaded; pass a local model folder, 'smollm2-135m' (the embedded model) "
                         "or 'fake', or set BIASLENS_ONLINE=1 to download it from the Hugging Face Hub")


def pick_start_token(tokenizer, override: str | None = None) -> str | None:
    """Choose the token prepended before a text so its first word is scored.

    Order: the user's override; a document-boundary token the tokenizer knows
    (``<|endoftext|>`` for GPT-2, SmolLM2, Qwen, Pythia; ``<|begin_of_text|>`` for
    Llama 3; ``<s>`` for Llama 2); then BOS, then EOS. Chat-role markers such as
    SmolLM2's BOS ``<|im_start|>`` are skipped on purpose: scoring after them
    shifts sentence log-likelihoods by about 4 nats.
    """
    if override is not None:
        if override not in tokenizer.get_vocab():
            raise ModelError(f"--start-token {override!r} is not a token of this tokenizer")
        return override
    vocab = tokenizer.get_vocab()
    for cand in DOCUMENT_START_CANDIDATES:
        if cand in vocab:
            return cand
    for tok in (tokenizer.bos_token, tokenizer.eos_token):
        if tok and "im_start" not in tok:
            return tok
    return None


def token_scores(rows: list[np.ndarray], offset_mapping, *, first_token_is_context: bool) -> list[TokenScores]:
    """Per-text log-probabilities plus the tokenizer's character offsets of the scored tokens
    (without a start token, the first token is context only and has no score)."""
    out = []
    for lp, mapping in zip(rows, offset_mapping):
        offsets = np.asarray(mapping, dtype=np.int32).reshape(-1, 2)
        out.append(TokenScores(lp, offsets[1:] if first_token_is_context else offsets))
    return out


def is_masked_config(config) -> bool:
    """Whether a transformers config describes a masked LM (BERT-like)."""
    archs = getattr(config, "architectures", None) or []
    if any("MaskedLM" in a for a in archs):
        return True
    return getattr(config, "model_type", "") in _MASKED_MODEL_TYPES


def use_chat(tokenizer, params: GenerationParams, model_name: str) -> bool:
    """Whether a prompt goes through the tokenizer's chat template: ``params.chat``, or
    by default whenever the tokenizer has one."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if params.chat is None:
        return has_template
    if params.chat and not has_template:
        raise ModelError(f"{model_name}: chat=True but the tokenizer has no chat template")
    return params.chat


def render_prompt(tokenizer, start_token: str | None, request: GenerationRequest, params: GenerationParams,
                  model_name: str) -> str:
    """The exact text a causal LM sees: the chat template, or the plain text started the
    way scoring starts it (the document-start token)."""
    if use_chat(tokenizer, params, model_name):
        return tokenizer.apply_chat_template(request.chat_messages(), tokenize=False, add_generation_prompt=True)
    return (start_token or "") + "\n".join((*request.context, request.prompt))


class TokenizerBackend(Backend):
    """A backend that tokenizes locally with a Hugging Face tokenizer.

    Subclasses set ``model``-specific state and implement :meth:`score_batch` (and
    :meth:`generate_batch`); token counts, the start token's id, chat rendering and
    building :class:`TokenScores` come from here.
    """

    def __init__(self, tokenizer, info: ModelInfo, *, score_first_token: bool = True):
        self.tokenizer = tokenizer
        self.info = info
        self.score_first_token = score_first_token
        #: id prepended to every scored text (None: the first token is context only)
        self.start_id = (tokenizer.convert_tokens_to_ids(info.start_token)
                         if (score_first_token and info.start_token) else None)

    def encode(self, texts: list[str]) -> Any:
        """The tokenizer's encoding without special tokens, with character offsets."""
        return self.tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True)

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self.encode(texts)["input_ids"]]

    def count_tokens(self, texts: list[str]) -> list[int]:
        return self.token_lengths(texts)

    def scored_sequences(self, input_ids) -> list[list[int]]:
        """Token ids to score per text: the start token (when there is one), then the text."""
        start = [self.start_id] if self.start_id is not None else []
        return [start + list(ids) for ids in input_ids]

    def scores_from_logprobs(self, rows: list[np.ndarray], offset_mapping) -> list[TokenScores]:
        """:class:`TokenScores` from the log-probabilities of each sequence's tokens after the first."""
        return token_scores(rows, offset_mapping, first_token_is_context=self.start_id is None)

    def use_chat(self, params: GenerationParams) -> bool:
        return use_chat(self.tokenizer, params, self.info.name)

    def render_prompt(self, request: GenerationRequest, params: GenerationParams) -> str:
        return render_prompt(self.tokenizer, self.info.start_token, request, params, self.info.name)


def load_tokenizer(name: str, *, trust_remote_code: bool = False):
    """The Hugging Face tokenizer of a local model folder (or a cached Hub id), with no model:
    for counting tokens of texts another tool scored. One-line ModelError when it cannot load."""
    check_model_location(name)
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise ModelError("counting tokens needs transformers: pip install 'biaslens[hf]'") from None
    try:
        return AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot load the tokenizer of {name!r}: {str(e).splitlines()[0]}") from None
