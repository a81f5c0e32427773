"""What every backend with a local Hugging Face tokenizer shares (HF causal, masked and
encoder-decoder models, vLLM): the start-token rule, token scores from per-token
log-probabilities, and prompt rendering (chat template or start token).

Torch-free: a backend passes its tokenizer in; nothing here runs a model. Keeping these
rules in one place is what makes the backends agree: vLLM scores and renders prompts
exactly as the reference transformers backend does.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
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


@dataclass(frozen=True)
class TokenRows:
    """Token ids and character offsets of many texts in three flat arrays (no per-text Python
    objects): text i is ``ids[starts[i]:starts[i + 1]]``, with ``offsets`` aligned to ``ids``.

    The engine tokenizes the texts to score once into one ``TokenRows``, sorts and batches
    them by index, and each batch travels as a ``TokenRows`` of its own (:meth:`take`).
    """

    ids: np.ndarray  # (tokens,) int64
    offsets: np.ndarray  # (tokens, 2) int32: character span of each token in its text
    starts: np.ndarray  # (texts + 1,) int64

    @classmethod
    def from_lists(cls, ids: Sequence[Sequence[int]], offsets: Sequence[Sequence[Sequence[int]]] | None = None) -> TokenRows:
        """From per-text id lists (and (start, end) offset pairs; None: zeros)."""
        starts = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)), out=starts[1:])
        total = int(starts[-1])
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=total)
        if offsets is None:
            spans = np.zeros((total, 2), dtype=np.int32)
        else:
            spans = np.fromiter(chain.from_iterable(chain.from_iterable(offsets)), dtype=np.int32,
                                count=2 * total).reshape(total, 2)
        return cls(flat, spans, starts)

    def __len__(self) -> int:
        return len(self.starts) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def row(self, i: int) -> np.ndarray:
        return self.ids[self.starts[i] : self.starts[i + 1]]

    def to_lists(self) -> list[list[int]]:
        """Per-text id lists (for code that takes lists; not for hot loops)."""
        return [a.tolist() for a in np.split(self.ids, self.starts[1:-1])]

    def take(self, index) -> TokenRows:
        """The texts at ``index`` (in that order), as a new ``TokenRows``."""
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths[index]
        starts = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        flat = gather_index(self.starts[index], lengths, int(starts[-1]))
        return TokenRows(self.ids[flat], self.offsets[flat], starts)

    def with_prefix(self, token: int | None) -> TokenRows:
        """Every text with ``token`` before it (offsets (0, 0) there); itself when None."""
        if token is None:
            return self
        n = len(self)
        starts = self.starts + np.arange(n + 1, dtype=np.int64)
        ids = np.empty(len(self.ids) + n, dtype=np.int64)
        offsets = np.zeros((len(self.ids) + n, 2), dtype=np.int32)
        first = starts[:-1]
        keep = np.ones(len(ids), dtype=bool)
        keep[first] = False
        ids[first] = token
        ids[keep] = self.ids
        offsets[keep] = self.offsets
        return TokenRows(ids, offsets, starts)

    def padded(self, fill: int = -1, width: int | None = None) -> np.ndarray:
        """(texts, width) matrix of the ids, each row filled with ``fill`` after its end."""
        lengths = self.lengths
        width = int(lengths.max(initial=0)) if width is None else width
        out = np.full((len(self), width), fill, dtype=np.int64)
        out[row_of_position(self.starts), self.depths()] = self.ids
        return out

    def depths(self) -> np.ndarray:
        """Each token's position inside its text (0 for the first)."""
        return np.arange(len(self.ids), dtype=np.int64) - np.repeat(self.starts[:-1], self.lengths)


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector paused while a tokenizer's per-text lists and offset
    tuples (acyclic, dropped at once) are made: for 100,000 texts they set off about 2,000
    collections over the whole heap, a third of the tokenizing time."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


#: the process that first ran the tokenizer's thread pool: a process forked from it must not
#: (the pool's threads do not survive a fork)
_POOL_PID: list[int] = []


@contextlib.contextmanager
def _tokenizer_threads(on: bool = True):
    """The fast tokenizer's thread pool for one batch call (2-8x faster with the cores to use it).

    biaslens's environment policy turns ``TOKENIZERS_PARALLELISM`` off for the process, so that
    processes forked later neither warn nor deadlock on the pool; the variable is read at each
    call, so it is lifted here for the call and set back after it. A value the user set wins,
    and a process forked after the pool ran keeps it off."""
    name = "TOKENIZERS_PARALLELISM"
    from biaslens.environment import SET_BY_POLICY

    user_set = name in os.environ and name not in SET_BY_POLICY
    # the main thread only: another thread changing the environment could race a C-level read
    elsewhere = threading.current_thread() is not threading.main_thread()
    if not on or user_set or elsewhere or (_POOL_PID and _POOL_PID[0] != os.getpid()):
        yield
        return
    _POOL_PID[:] = _POOL_PID or [os.getpid()]
    before = os.environ.get(name)
    os.environ[name] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def gather_index(begins: np.ndarray, lengths: np.ndarray, total: int | None = None) -> np.ndarray:
    """The concatenated ranges ``begins[i] : begins[i] + lengths[i]`` as one index array."""
    total = int(lengths.sum()) if total is None else total
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(begins - (ends - lengths), lengths)


def row_of_position(starts: np.ndarray) -> np.ndarray:
    """For flat rows delimited by ``starts``, the row of every position."""
    return np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))


def common_prefix(padded: np.ndarray, lengths: np.ndarray) -> int:
    """Leading tokens all rows of ``padded`` share, leaving each at least one token of its own."""
    limit = int(lengths.min()) - 1 if len(lengths) else 0
    if limit <= 0:
        return 0
    differs = np.flatnonzero((padded[:, :limit] != padded[0, :limit]).any(axis=0))
    return int(differs[0]) if len(differs) else limit


def lexicographic_order(padded: np.ndarray, texts: Sequence[str] | None = None,
                        keys_before: Sequence[np.ndarray] = ()) -> np.ndarray:
    """Indices that sort the rows of ``padded`` lexicographically, as Python sorts lists of ids
    (a row that is a prefix of another comes first: fill it with -1), after ``keys_before``
    (most significant first); ties broken by ``texts``, else by index (a stable sort)."""
    n = len(padded)
    keys = [padded[:, j] for j in range(padded.shape[1] - 1, -1, -1)] + list(reversed(keys_before))
    order = np.lexsort(keys) if keys else np.arange(n)
    if texts is None or n < 2:
        return order
    same = np.all(padded[order[1:]] == padded[order[:-1]], axis=1)
    for key in keys_before:
        same &= key[order[1:]] == key[order[:-1]]
    if not same.any():
        return order
    # rare: equal ids from different texts (e.g. other Unicode forms); order those runs by text.
    # same[k]: positions k and k + 1 of the order tie; a run of ties spans positions a..b
    edges = np.diff(np.concatenate([[0], same.astype(np.int8), [0]]))
    for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
        order[a : b + 1] = sorted(order[a : b + 1].tolist(), key=lambda i: texts[i])
    return order


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

    def tokenize(self, texts: Sequence[str]) -> TokenRows:
        """Ids and character offsets of every text without special tokens, as :meth:`encode`
        gives them, in flat arrays. A fast tokenizer is called directly, once for the whole
        list (in parallel, no per-text wrapper objects); others go through :meth:`encode`."""
        texts = list(texts)
        fast = getattr(self.tokenizer, "_tokenizer", None) if getattr(self.tokenizer, "is_fast", False) else None
        direct = (fast is not None and getattr(fast, "truncation", None) is None
                  and getattr(fast, "padding", None) is None
                  and getattr(fast, "encode_special_tokens", False)
                  == bool(getattr(self.tokenizer, "split_special_tokens", False)))
        with _collector_paused(), _tokenizer_threads(direct):
            if direct and fast is not None:
                encodings = fast.encode_batch(texts, add_special_tokens=False)
                return TokenRows.from_lists([e.ids for e in encodings], [e.offsets for e in encodings])
            enc = self.encode(texts)
            return TokenRows.from_lists(enc["input_ids"], enc["offset_mapping"])

    def token_lengths(self, texts: list[str]) -> list[int]:
        return self.tokenize(texts).lengths.tolist()

    def order_rows(self, rows: TokenRows, texts: Sequence[str]) -> np.ndarray:
        """:meth:`batch_order` of texts already tokenized (``rows``): longest first, then by text."""
        lengths = rows.lengths.tolist()
        return np.asarray(sorted(range(len(texts)), key=lambda i: (-lengths[i], texts[i])), dtype=np.int64)

    def batch_order(self, texts: list[str]) -> list[int]:
        return self.order_rows(self.tokenize(texts), texts).tolist()

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
