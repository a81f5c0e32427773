"""Hugging Face transformers backends: causal LMs (log-likelihood) and masked LMs
(pseudo-log-likelihood).

Causal LMs of the common architectures score a batch packed as a prefix trie (every
distinct token prefix computed once, a tree-shaped attention mask); others use
right-padded batches with an attention mask. Either way a text's scores do not depend on
what else is in its batch (tested: batch 1 vs batch 16 agree to 1e-4; trie vs plain
padded forward to 1e-4).
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from biaslens.models.base import Backend, ModelError, ModelInfo, TokenScores
from biaslens.models.fingerprint import weights_fingerprint
from biaslens.models.kv_cache import cache_arg, output_cache
from biaslens.models.tokenized import (
    DTYPES,
    TokenizerBackend,
    TokenRows,
    check_model_location,
    common_prefix,
    is_masked_config,
    lexicographic_order,
    pick_start_token,
)
from biaslens.models.trie import TriePack

log = logging.getLogger(__name__)

#: the CPU fast mode: the transformer blocks' matrix multiplications in bfloat16 (oneDNN,
#: float32 accumulation), everything else (embeddings, norms, attention, residual stream,
#: output head and log-softmax) in float32. Not a torch dtype: weights load as float32.
FAST_BF16 = "bf16-fast"


def resolve_dtype(dtype: str):
    """The torch dtype the weights load in (``bf16-fast`` loads float32; see FAST_BF16)."""
    import torch

    if dtype.lower() == FAST_BF16:
        return torch.float32
    name = DTYPES.get(dtype.lower())
    if name is None:
        raise ModelError(f"unknown --dtype {dtype!r}; choose one of float32, bfloat16, float16, {FAST_BF16}")
    return name if name == "auto" else getattr(torch, name)


def apply_thread_setting(torch) -> None:
    """Set torch's intra-op threads when the user asked (``BIASLENS_THREADS``), else leave them.

    Loading a model used to set them to ``os.cpu_count()`` for the whole process, silently
    overriding a notebook user's own setting. Torch already picks a default for the machine
    (the physical cores on common builds; equal to ``os.cpu_count()`` on the machines the
    benchmarks ran on), while ``os.cpu_count()`` counts hyper-threads and CPUs a container
    does not grant, which can only oversubscribe. Ray workers and the tests pass their CPU
    share through ``BIASLENS_THREADS``.
    """
    requested = os.environ.get("BIASLENS_THREADS")
    if not requested:
        return
    try:
        threads = max(1, int(requested))
    except ValueError:
        raise ModelError(f"BIASLENS_THREADS={requested!r}: give a whole number of threads") from None
    if torch.get_num_threads() != threads:
        log.debug("torch threads: %d (BIASLENS_THREADS)", threads)
        torch.set_num_threads(threads)


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX)."""
    import torch

    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, c, lambda: False)()) for c in checks)


def _pack_linears(modules, dtype) -> int:
    """Route each ``nn.Linear``'s inference forward through oneDNN with its weight packed
    once (in ``dtype``, outputs cast back to the input dtype). Training, autograd, other
    devices and a weight changed since packing fall back to the module's own forward.
    Returns the number of modules packed."""
    import torch

    n = 0
    for lin in modules:
        if not isinstance(lin, torch.nn.Linear) or lin.weight.device.type != "cpu" or "forward" in vars(lin):
            continue
        weight = lin.weight.detach()
        packed = torch.ops.mkldnn._reorder_linear_weight(weight.to(dtype), None)
        bias = lin.bias.detach().to(dtype) if lin.bias is not None else None
        version = lin.weight._version
        plain = lin.forward

        def forward(x, _lin=lin, _packed=packed, _bias=bias, _version=version, _plain=plain):
            if (x.device.type != "cpu" or _lin.weight._version != _version
                    or (torch.is_grad_enabled() and (x.requires_grad or _lin.weight.requires_grad))):
                return _plain(x)
            y = torch.ops.mkldnn._linear_pointwise(x.to(dtype), _packed, _bias, "none", [], "")
            return y.to(x.dtype)

        lin.forward = forward
        n += 1
    return n


def _gather_logprobs(logits, targets) -> np.ndarray:
    """log p(target) at each position, as float64 numpy: logit minus logsumexp, in float32
    at least whatever the model dtype (no full log-softmax tensor is materialised)."""
    import torch

    logits = logits.float()
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (picked - torch.logsumexp(logits, dim=-1)).double().cpu().numpy()


#: model types whose attention takes a custom 4D mask with position ids and whose logits are
#: the output embedding applied to the base model's last hidden state (tests cover llama,
#: qwen2 and gpt2 against the plain padded path)
_TRIE_MODEL_TYPES = frozenset({"llama", "qwen2", "qwen3", "gpt2"})
#: config fields that change attention or logits in a way the packed path does not reproduce
_TRIE_BLOCKERS = ("sliding_window", "final_logit_softcapping", "attn_logit_softcapping", "logit_scale",
                  "logits_scaling")


def _trie_supported(model) -> bool:
    config = getattr(model, "config", None)
    if config is None or getattr(config, "model_type", None) not in _TRIE_MODEL_TYPES:
        return False
    if any(getattr(config, k, None) not in (None, 1, 1.0) for k in _TRIE_BLOCKERS):
        return False
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return head is not None and hasattr(head, "weight") and hasattr(model, "base_model")


def gpu_generate_rows(config, free_bytes: int, most: int, bytes_per_value: int, tokens_per_row: int = 256) -> int:
    """Rows per generation batch on a GPU: as many as ``most`` while the key/value cache of
    ``tokens_per_row`` tokens each (prompt and response) takes at most a quarter of the free
    memory, and never fewer than 8 (a 7B model in bf16 has 0.5 MB of cache per token)."""
    def field(*names: str, default: int) -> int:  # config names differ across architectures
        return next((int(v) for v in (getattr(config, n, None) for n in names) if v), default)

    layers = field("num_hidden_layers", "n_layer", default=32)
    heads = field("num_attention_heads", "n_head", default=32)
    kv_heads = field("num_key_value_heads", default=heads)
    head_dim = field("head_dim", default=field("hidden_size", "n_embd", default=4096) // heads)
    per_row = 2 * layers * kv_heads * head_dim * bytes_per_value * tokens_per_row
    return max(8, min(most, int(free_bytes // 4 // per_row)))


@dataclass
class PreparedScores:
    """A scoring batch with the host's work done (:meth:`HFCausalBackend.prepare_rows`).

    ``mode``: "trie" (``tensors`` for the transformer body, ``head`` = (the distinct
    predicting nodes, each scored token's index among them, the scored tokens), all on the
    model's device),
    "shared" / "plain" (``padded`` ids; ``shared`` leading tokens common to the batch), or
    "empty" (nothing to compute).
    """

    rows: TokenRows
    lengths: np.ndarray  # scored sequence lengths (start token included)
    mode: str
    nodes: int = 0
    tensors: dict = field(default_factory=dict)
    head: tuple = ()
    padded: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    shared: int = 0


@dataclass
class PreparedGeneration:
    """A generation batch with the host's work done (:meth:`HFCausalBackend.prepare_generation`)."""

    prompts: list[str]
    params: Any
    seeds: list[int]
    enc: list[list[int]]  # each prompt's token ids
    plan: Any = None  # models.generation.DecodePlan for biaslens's decoder; None: HF generate


class HFCausalBackend(TokenizerBackend):
    """Any causal LM transformers can load (model id or local folder)."""

    default_batch_size = 32
    #: texts per scoring batch with prefix-trie packing when the user gives none: 256
    #: HolisticBias texts are ~1,300 distinct prefixes, large enough for efficient GEMMs
    TRIE_BATCH_SIZE = 256
    #: most trie nodes per packed row: attention over a row costs its square, while rows
    #: that are too short repeat shared ancestors (start token, template opening)
    TRIE_ROW_NODES = 128

    def __init__(self, model, tokenizer, info: ModelInfo, device: str = "cpu", score_first_token: bool = True):
        super().__init__(tokenizer, info, score_first_token=score_first_token)
        self.model = model
        self.device = device
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        #: compute shared prefixes once (tested equal to the plain path)
        self.share_prefix = True
        #: pack a batch as a prefix trie (every distinct prefix computed once) where the
        #: architecture supports it; otherwise only the batch's common prefix is shared
        self.use_trie = _trie_supported(model)
        #: token positions that went through the model (padding excluded), for benchmarks
        self.computed_tokens = 0
        #: positions the packed path ran the output head on (distinct predicting prefixes)
        self.computed_head_rows = 0
        #: sampled generation: compute each distinct prompt once per batch (the n samples of a
        #: prompt share it); tested to give the same samples at every batch size
        self.share_prompts = self.use_trie
        #: greedy and sampled decoding through biaslens's own loop (models.generation.decode:
        #: shared prompt openings once, finished rows leave the batch); tested to give plain
        #: ``generate``'s greedy texts. Same architectures as the trie: standard causal attention.
        self.own_decoder = self.use_trie
        #: the compiled transformer body of the packed path (:meth:`compile`), else None
        self._body = None

    def compile(self) -> None:
        """Score through ``torch.compile`` (inductor, dynamic shapes, frozen weights).

        Where the batch is packed as a prefix trie, the transformer body is compiled and the
        packing stays: the compiled body fuses the element-wise work between the matrix
        products (RMSNorm, rotary embedding, SiLU, casts) that the eager model runs as separate
        kernels. Elsewhere the whole model is compiled and the shared-prefix path is turned off:
        a key/value cache passed into the compiled graph would force recompilations.
        Generation keeps using the eager model.
        """
        import torch
        import torch._inductor.config as inductor_config

        inductor_config.freezing = True  # constant-fold the weights into packed GEMM layouts
        self._eager_model = self.model
        if self.use_trie and self.share_prefix:
            self._body = torch.compile(self.model.base_model, dynamic=True)
        else:
            self.model = torch.compile(self.model, dynamic=True)
            self.share_prefix = False
        self.info.extra["compiled"] = True

    #: rows per generation batch: a decoding step is one GEMM of this many rows, and on CPU
    #: 128 rows ran 1.3-1.5x the tokens/s of 32 (benchmarks/bench_generation.py); the key/value
    #: cache of 128 rows of 100 tokens is about 0.6 GB for a 135M model
    GENERATE_BATCH_SIZE = 128
    #: on a GPU, rows per generation batch up to this many while their key/value cache fits in
    #: a quarter of the free GPU memory: on an H100 the embedded model generated 3.7-4.2x the
    #: tokens/s at 512 rows as at 128 (benchmarks/bench_cuda.py)
    GENERATE_BATCH_SIZE_GPU = 512
    #: texts per trie-packed scoring batch on a GPU: a small model's forward pass is bound by
    #: launching its kernels (about 30 ms of Python per forward of the 135M model, whatever the
    #: batch), so fewer, larger batches: the full v1.0 run's scoring took 16.8 s at 4,096 against
    #: 23.8 s at 1,024 on an H200, and a 7B shape was 5% faster (benchmarks/results/cuda_batch_h200.json)
    TRIE_BATCH_SIZE_GPU = 4096

    @property
    def on_gpu(self) -> bool:
        return str(self.device).startswith("cuda")

    @property
    def generate_batch_size(self) -> int:
        if not self.on_gpu:
            return self.GENERATE_BATCH_SIZE
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(self.device))
        return gpu_generate_rows(self.model.config, free, self.GENERATE_BATCH_SIZE_GPU,
                                 next(self.model.parameters()).element_size())

    @property
    def score_batch_size(self) -> int:
        """Texts per scoring batch when the user gives none (generation: generate_batch_size)."""
        if self.use_trie and self.share_prefix:
            return self.TRIE_BATCH_SIZE_GPU if self.on_gpu else self.TRIE_BATCH_SIZE
        return self.default_batch_size

    #: texts are grouped by this many leading tokens before sorting by length; on
    #: HolisticBias this left 15% fewer tokens to compute than length order alone
    #: (shared prefixes run once) with little extra padding
    PREFIX_GROUP_TOKENS = 3

    def order_rows(self, rows: TokenRows, texts: Sequence[str]) -> np.ndarray:
        """Group texts by their first tokens (a template's opening words), then by length:
        a batch then shares a prefix, computed once, and needs little padding. With trie
        packing, plain token order: neighbours share the longest prefixes. Ties: by text."""
        if not self.share_prefix:
            return super().order_rows(rows, texts)
        padded = rows.padded(-1)  # -1 after a row's end: a prefix sorts before its extensions
        if self.use_trie:
            return lexicographic_order(padded, texts)
        leading = [padded[:, j] for j in range(min(self.PREFIX_GROUP_TOKENS, padded.shape[1]))]
        return lexicographic_order(padded, texts, keys_before=[*leading, rows.lengths])

    #: scoring batches prepared ahead on a background thread (token ids, trie, tensors on the
    #: device) while the model runs the current one; see :attr:`prefetch_batches`
    PREFETCH_BATCHES_GPU = 1
    PREFETCH_BATCHES_CPU = 0

    @property
    def prefetch_batches(self) -> int:
        """Batches the engine prepares ahead of the model (0: none). On a GPU the host's work
        then overlaps the device's; on a CPU the forward pass already uses every core."""
        return self.PREFETCH_BATCHES_GPU if self.on_gpu else self.PREFETCH_BATCHES_CPU

    def score_batch(self, texts: list[str]) -> list[TokenScores]:
        return self.score_rows(self.tokenize(texts))

    def score_rows(self, rows: TokenRows) -> list[TokenScores]:
        """Scores of tokenized texts (:meth:`tokenize`), in their order."""
        return self.score_prepared(self.prepare_rows(rows))

    def prepare_rows(self, rows: TokenRows) -> PreparedScores:
        """The host's part of scoring a batch, done before (or while) the model runs another:
        the scored sequences, their packing (prefix trie, shared prefix or padding) and its
        tensors, already on the model's device."""
        seqs = rows.with_prefix(self.start_id)
        lengths = seqs.lengths
        prep = PreparedScores(rows=rows, lengths=lengths, mode="plain")
        if not len(rows) or int(lengths.max()) < 2:
            prep.mode = "empty"
            return prep
        if self.use_trie and self.share_prefix:
            pack = TriePack(seqs, self.TRIE_ROW_NODES)
            ids, pos, mask = pack.arrays(self._pad_id)
            prep.mode, prep.nodes = "trie", len(pack.node_row)
            dtype = self.model.get_input_embeddings().weight.dtype
            prep.tensors = {"input_ids": self._to_device(ids), "position_ids": self._to_device(pos),
                            "attention_mask": self._additive_mask(mask, dtype)}
            # every scored token: the node of the token before it predicts it
            predicting = seqs.depths() < np.repeat(lengths - 1, lengths)
            where = np.flatnonzero(predicting)
            seq_of = np.repeat(pack.seq_row, lengths)
            uniq, inverse = np.unique(seq_of[where] * pack.width + pack.position_col[where], return_inverse=True)
            prep.head = (self._to_device(uniq), self._to_device(inverse), self._to_device(seqs.ids[where + 1]))
            return prep
        padded = seqs.padded(self._pad_id, max(2, int(lengths.max())))  # width 2: a one-token text still runs
        prep.padded = padded
        if self.share_prefix and len(seqs) > 1:
            prep.shared = common_prefix(padded, lengths)
            if prep.shared >= 2:
                prep.mode = "shared"
        return prep

    def score_prepared(self, prep: PreparedScores) -> list[TokenScores]:
        """Run the model on a prepared batch (:meth:`prepare_rows`) and build its scores."""
        import torch

        if prep.mode == "empty":
            lp = np.zeros(0, dtype=np.float64)
        else:
            with torch.inference_mode():
                if prep.mode == "trie":
                    lp = self._trie_forward(prep)
                elif prep.mode == "shared":
                    lp = self._flat_shared_prefix(prep.padded, prep.lengths, prep.shared)
                else:
                    lp = self._flat_plain(prep.padded, prep.lengths)
        return self._token_scores(lp, prep.lengths, prep.rows)

    def _to_device(self, array: np.ndarray):
        """A numpy array as a tensor on the model's device (through pinned memory on a GPU)."""
        import torch

        t = torch.from_numpy(array)
        return t.pin_memory().to(self.device, non_blocking=True) if self.on_gpu else t

    def _additive_mask(self, mask: np.ndarray, dtype):
        """(rows, 1, width, width) attention bias: 0 where ``mask`` lets a node see, the dtype's
        lowest value elsewhere (the additive form both eager and SDPA attention accept)."""
        import torch

        if not self.on_gpu and dtype == torch.float32:  # numpy: no thread pool for a small fill
            return torch.from_numpy(np.where(mask, np.float32(0), np.finfo(np.float32).min)[:, None])
        allowed = self._to_device(mask[:, None])
        return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill_(~allowed,
                                                                                          torch.finfo(dtype).min)

    def _trie_forward(self, prep: PreparedScores) -> np.ndarray:
        """Log-probabilities of a trie-packed batch (see :class:`TriePack`): the transformer
        body over the packed nodes, the output head only on nodes that predict a token."""
        self.computed_tokens += prep.nodes
        body = self._body if self._body is not None else self.model.base_model
        hidden = body(**prep.tensors, use_cache=False).last_hidden_state
        hidden = hidden.reshape(-1, hidden.shape[-1])
        nodes, inverse, targets = prep.head
        self.computed_head_rows += len(nodes)
        return self._head_logprobs(hidden[nodes], inverse, targets)

    def _token_scores(self, lp: np.ndarray, lengths: np.ndarray, rows: TokenRows) -> list[TokenScores]:
        """One :class:`TokenScores` per text from the batch's flat log-probabilities (each
        sequence's tokens after its first, in order); arrays are views into the batch's."""
        ends = np.cumsum(np.maximum(lengths - 1, 0)).tolist()
        starts = rows.starts.tolist()
        skip = 1 if self.start_id is None else 0  # without a start token the first token is context only
        offsets = rows.offsets
        out = []
        begin = 0
        for i, end in enumerate(ends):
            a, b = starts[i], starts[i + 1]
            out.append(TokenScores(lp[begin:end], offsets[min(a + skip, b) : b]))
            begin = end
        return out

    #: vocabulary columns of the output head per step: a (rows x 4096) block of logits stays
    #: in the CPU cache while its log-sum-exp is folded in; measured 1.45x faster than
    #: torch.logsumexp over full-vocabulary row blocks on this model
    HEAD_VOCAB_CHUNK = 4096

    def _head_logprobs(self, hidden, rows, targets) -> np.ndarray:
        """log p(targets[k] | hidden[rows[k]]) as float64: logit minus logsumexp, in float32,
        with the output head computed in vocabulary chunks and the log-sum-exp accumulated
        online (no full-vocabulary logits or log-softmax tensor is kept). ``rows``,
        ``targets``: integer arrays or tensors."""
        import torch
        import torch.nn.functional as F

        head = self.model.get_output_embeddings()
        weight, bias = head.weight, head.bias
        h = hidden.to(weight.dtype)
        dev = h.device
        r = torch.as_tensor(rows).to(dev)
        t = torch.as_tensor(targets).to(dev)
        picked = torch.empty(len(rows), dtype=torch.float32, device=dev)
        run_max = torch.full((h.shape[0],), float("-inf"), dtype=torch.float32, device=dev)
        run_sum = torch.zeros(h.shape[0], dtype=torch.float32, device=dev)
        for c0 in range(0, weight.shape[0], self.HEAD_VOCAB_CHUNK):
            c1 = min(c0 + self.HEAD_VOCAB_CHUNK, weight.shape[0])
            logits = F.linear(h, weight[c0:c1], None if bias is None else bias[c0:c1]).float()
            # each target's logit where its chunk is this one; no boolean indexing, whose size
            # the host would have to wait for (a device sync per chunk)
            here = logits[r, (t - c0).clamp_(0, c1 - c0 - 1)]
            picked = torch.where((t >= c0) & (t < c1), here, picked)
            new_max = torch.maximum(run_max, logits.amax(dim=-1))
            run_sum = run_sum * torch.exp(run_max - new_max) + logits.sub_(new_max[:, None]).exp_().sum(dim=-1)
            run_max = new_max
        lse = run_sum.log_() + run_max
        return (picked - lse[r]).double().cpu().numpy()

    def _logprobs(self, seqs: list[list[int]]) -> list[np.ndarray]:
        """Log-probability of every token after the first, one right-padded forward pass."""
        rows = TokenRows.from_lists(seqs)
        lengths = rows.lengths
        lp = self._flat_plain(rows.padded(self._pad_id, max(2, int(lengths.max()))), lengths)
        return np.split(lp, np.cumsum(np.maximum(lengths - 1, 0))[:-1])

    def _logprobs_with_shared_prefix(self, seqs: list[list[int]], shared: int) -> list[np.ndarray]:
        """Same numbers as :meth:`_logprobs` (to float rounding), but the ``shared`` tokens
        every text starts with go through the model once and their key/value cache is
        reused for the whole batch."""
        rows = TokenRows.from_lists(seqs)
        lengths = rows.lengths
        lp = self._flat_shared_prefix(rows.padded(self._pad_id), lengths, shared)
        return np.split(lp, np.cumsum(np.maximum(lengths - 1, 0))[:-1])

    def _flat_plain(self, padded: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """:meth:`_logprobs` of a padded id matrix, flat (each sequence's tokens after its first)."""
        import torch

        input_ids = torch.from_numpy(padded)
        attn = torch.from_numpy((np.arange(padded.shape[1]) < lengths[:, None]).astype(np.int64))
        self.computed_tokens += int(lengths.sum())
        logits = self.model(input_ids=input_ids.to(self.device), attention_mask=attn.to(self.device)).logits
        tok_lp = _gather_logprobs(logits[:, :-1], input_ids[:, 1:].to(self.device))
        # tokens with a left context: none for an empty text
        return tok_lp[np.arange(tok_lp.shape[1]) < (lengths - 1)[:, None]]

    def _flat_shared_prefix(self, padded: np.ndarray, lengths: np.ndarray, shared: int) -> np.ndarray:
        """:meth:`_logprobs_with_shared_prefix` of a padded id matrix, flat."""
        import torch

        prefix = torch.from_numpy(padded[:1, :shared].copy()).to(self.device)
        first = self.model(input_ids=prefix, use_cache=True)
        prefix_lp = _gather_logprobs(first.logits[:, :-1], prefix[:, 1:])[0]
        last_logits = first.logits[:, -1:]  # predicts each text's first suffix token
        cache = output_cache(first)
        n = len(lengths)
        cache.batch_repeat_interleave(n)
        suffix = lengths - shared
        width = int(suffix.max())
        self.computed_tokens += shared + int(suffix.sum())
        input_ids = torch.from_numpy(np.ascontiguousarray(padded[:, shared : shared + width])).to(self.device)
        attn = np.zeros((n, shared + width), dtype=np.int64)
        attn[:, :shared] = 1
        attn[:, shared:] = np.arange(width) < suffix[:, None]
        logits = self.model(input_ids=input_ids, attention_mask=torch.from_numpy(attn).to(self.device),
                            **cache_arg(self.model, cache), use_cache=False).logits
        logits = torch.cat([last_logits.expand(n, -1, -1), logits[:, :-1]], dim=1)
        tok_lp = _gather_logprobs(logits, input_ids)
        both = np.concatenate([np.broadcast_to(prefix_lp, (n, len(prefix_lp))), tok_lp], axis=1)
        return both[np.arange(both.shape[1]) < (lengths - 1)[:, None]]

    # -- generation ------------------------------------------------------
    def generate_batch(self, prompts: list[str], params, seeds: list[int]) -> list[str]:
        return self.generate_prepared(self.prepare_generation(prompts, params, seeds))

    def prepare_generation(self, prompts: list[str], params, seeds: list[int]) -> PreparedGeneration:
        """The host's part of generating a batch, done before (or while) the model runs another:
        the prompts' token ids (one tokenizer call) and, for biaslens's decoder, its prefill plan
        (distinct prompts, shared opening, prompt trie)."""
        from biaslens.models.generation import DecodePlan

        enc = self.tokenize(prompts).to_lists()
        own = self.own_decoder and params.num_beams == 1 and min(map(len, enc), default=0) > 0
        return PreparedGeneration(list(prompts), params, list(seeds), enc,
                                  DecodePlan.of(enc, self._pad_id) if own else None)

    def generate_prepared(self, prep: PreparedGeneration) -> list[str]:
        """Generate a prepared batch (:meth:`prepare_generation`): one response per prompt."""
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        from biaslens.models.generation import PerRowSampler, ResponseNoRepeatNGram, decode, left_padded

        tok = self.tokenizer
        prompts, params, seeds, enc = prep.prompts, prep.params, prep.seeds, prep.enc
        model = getattr(self, "_eager_model", self.model)
        if prep.plan is not None:
            with torch.inference_mode():
                out = decode(model, enc, params, seeds, self._eos_ids(), self._pad_id, plan=prep.plan)
            return [tok.decode(row, skip_special_tokens=True).strip() for row in out]
        pad = self._pad_id
        ids, attn = left_padded(enc, pad)  # every response starts at column `width`
        width = ids.shape[1]
        eos = self._eos_ids()
        cfg = GenerationConfig(max_new_tokens=params.max_new_tokens, min_new_tokens=params.min_new_tokens or None,
                               do_sample=False, num_beams=1 if params.do_sample else params.num_beams,
                               pad_token_id=pad, eos_token_id=eos)
        procs = LogitsProcessorList()
        if params.no_repeat_ngram_size:
            procs.append(ResponseNoRepeatNGram(params.no_repeat_ngram_size, width))
        if params.do_sample:
            gens = [torch.Generator().manual_seed(s) for s in seeds]
            procs.append(PerRowSampler(gens, params.temperature, params.top_p, params.top_k))
        ids, attn = ids.to(self.device), attn.to(self.device)
        with torch.inference_mode():
            # sampled rows always start from a prompt cache (one path whatever the batch holds)
            past = self._prompt_cache(model, ids, attn, prompts) if params.do_sample and self.share_prompts else None
            out = model.generate(input_ids=ids, attention_mask=attn, **cache_arg(model, past),
                                 generation_config=cfg, logits_processor=procs)
        return [tok.decode(row[width:], skip_special_tokens=True).strip() for row in out.cpu().tolist()]

    def _prompt_cache(self, model, ids, attn, prompts: list[str]):
        """The key/value cache of every row's prompt but its last column, computed once per
        distinct prompt and given to each of its rows: the n samples of a prompt share one
        forward pass over it (generate then continues from the last prompt token)."""
        import torch
        from transformers import DynamicCache

        if ids.shape[1] < 2:
            return None
        first: dict[str, int] = {}
        for i, p in enumerate(prompts):
            first.setdefault(p, i)
        slot = {p: k for k, p in enumerate(first)}
        unique = torch.tensor(list(first.values()), device=ids.device)
        u_ids, u_attn = ids[unique, :-1], attn[unique, :-1]
        # positions as generate makes them from a left-padded mask
        positions = (u_attn.cumsum(-1) - 1).masked_fill(u_attn == 0, 0)
        cache = DynamicCache(config=model.config)
        model(input_ids=u_ids, attention_mask=u_attn, position_ids=positions, **cache_arg(model, cache), use_cache=True,
              logits_to_keep=1)
        cache.batch_select_indices(torch.tensor([slot[p] for p in prompts], device=ids.device))
        return cache

    def _eos_ids(self) -> list[int]:
        ids = set()
        for src in (getattr(self.model, "generation_config", None), self.model.config):
            e = getattr(src, "eos_token_id", None) if src is not None else None
            if isinstance(e, int):
                ids.add(e)
            elif isinstance(e, (list, tuple)):
                ids.update(int(x) for x in e)
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return sorted(ids)


class HFMaskedBackend(TokenizerBackend):
    """Masked LMs (BERT, RoBERTa): pseudo-log-likelihood, masking one token at a time
    (Salazar et al. 2020), as the paper's B.1 setting."""

    default_batch_size = 64

    def __init__(self, model, tokenizer, info: ModelInfo, device: str = "cpu"):
        super().__init__(tokenizer, info, score_first_token=False)  # every token is scored with both sides
        self.model = model
        self.device = device
        if tokenizer.mask_token_id is None:
            raise ModelError(f"{info.name}: tokenizer has no mask token; is this a masked LM?")

    def score_batch(self, texts: list[str]) -> list[TokenScores]:
        import torch

        tok = self.tokenizer
        enc = tok(list(texts), add_special_tokens=True, return_offsets_mapping=True,
                  return_special_tokens_mask=True)
        # one masked copy per (text, non-special position)
        rows, owners, positions = [], [], []
        for i, (ids, special) in enumerate(zip(enc["input_ids"], enc["special_tokens_mask"])):
            for pos, sp in enumerate(special):
                if not sp:
                    masked = list(ids)
                    masked[pos] = tok.mask_token_id
                    rows.append(masked)
                    owners.append(i)
                    positions.append(pos)
        results: list[list[float]] = [[] for _ in texts]
        chunk = max(1, self.default_batch_size)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        with torch.inference_mode():
            for start in range(0, len(rows), chunk):
                part = rows[start : start + chunk]
                width = max(len(r) for r in part)
                ids_t = torch.full((len(part), width), pad, dtype=torch.long)
                attn = torch.zeros((len(part), width), dtype=torch.long)
                for j, r in enumerate(part):
                    ids_t[j, : len(r)] = torch.tensor(r)
                    attn[j, : len(r)] = 1
                logits = self.model(input_ids=ids_t.to(self.device), attention_mask=attn.to(self.device)).logits
                logp = torch.log_softmax(logits.float(), dim=-1)
                for j in range(len(part)):
                    i, pos = owners[start + j], positions[start + j]
                    true_id = enc["input_ids"][i][pos]
                    results[i].append(float(logp[j, pos, true_id]))
        out = []
        for i in range(len(texts)):
            keep = [p for p, sp in enumerate(enc["special_tokens_mask"][i]) if not sp]
            offsets = np.asarray([enc["offset_mapping"][i][p] for p in keep], dtype=np.int32).reshape(-1, 2)
            out.append(TokenScores(np.asarray(results[i], dtype=np.float64), offsets))
        return out


class HFSeq2SeqBackend(TokenizerBackend):
    """Encoder-decoder models (BlenderBot, T5, BART): generation only. The response is
    the decoder output, so HF's n-gram blocking already acts on the response alone."""

    default_batch_size = 16

    def __init__(self, model, tokenizer, info: ModelInfo, device: str = "cpu"):
        super().__init__(tokenizer, info, score_first_token=False)
        self.model = model
        self.device = device

    def score_batch(self, texts: list[str]) -> list[TokenScores]:
        raise ModelError(f"{self.info.name} is an encoder-decoder model: biaslens scores causal and masked LMs only")

    def token_lengths(self, texts: list[str]) -> list[int]:
        # the encoder sees the prompt with its special tokens
        return [len(ids) for ids in self.tokenizer(list(texts))["input_ids"]]

    def render_prompt(self, request, params) -> str:
        # BlenderBot-style dialogue history: turns joined by newlines
        return "\n".join((*request.context, request.prompt))

    def generate_batch(self, prompts: list[str], params, seeds: list[int]) -> list[str]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        from biaslens.models.generation import PerRowSampler

        enc = self.tokenizer(list(prompts), return_tensors="pt", padding=True, truncation=True)
        cfg = GenerationConfig(max_new_tokens=params.max_new_tokens, min_new_tokens=params.min_new_tokens or None,
                               do_sample=False, num_beams=1 if params.do_sample else params.num_beams,
                               no_repeat_ngram_size=params.no_repeat_ngram_size or None,
                               decoder_start_token_id=self.model.config.decoder_start_token_id,
                               pad_token_id=self.tokenizer.pad_token_id, eos_token_id=self.tokenizer.eos_token_id)
        procs = LogitsProcessorList()
        if params.do_sample:
            procs.append(PerRowSampler([torch.Generator().manual_seed(s) for s in seeds],
                                       params.temperature, params.top_p, params.top_k))
        with torch.inference_mode():
            out = self.model.generate(**{k: v.to(self.device) for k, v in enc.items()}, generation_config=cfg,
                                      logits_processor=procs)
        return [t.strip() for t in self.tokenizer.batch_decode(out, skip_special_tokens=True)]


def check_device(torch, device: str) -> None:
    """One clear line when the device cannot be used, instead of torch's assertion later."""
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        if torch.version.cuda is None:
            version = str(torch.__version__).split("+")[0]
            raise ModelError(f"--device {device}: this torch build ({torch.__version__}) has no CUDA support; "
                             f"a CUDA build of the same version is needed: pip install torch=={version} with the "
                             "CUDA variant (e.g. +cu124) that your GPU driver supports (nvidia-smi shows the "
                             "driver's CUDA version), or use --device cpu")
        raise ModelError(f"--device {device}: torch has CUDA {torch.version.cuda} but sees no GPU "
                         "(driver, CUDA_VISIBLE_DEVICES?); use --device cpu")
    if str(device) == "mps" and not torch.backends.mps.is_available():
        raise ModelError("--device mps: this machine or torch build has no Apple MPS support; use --device cpu")


def load_hf(
    name_or_path: str,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    kind: str = "auto",
    start_token: str | None = None,
    score_first_token: bool = True,
    trust_remote_code: bool = False,
    gguf_file: str | None = None,
    display_name: str | None = None,
    backend_name: str = "hf",
    compile: bool = False,
) -> Backend:
    """Load a transformers model as a scoring backend.

    Args:
        name_or_path: Hugging Face model id or local folder.
        device: "cpu", "cuda", "cuda:1", "mps".
        dtype: float32 (exact default), bfloat16, float16, or ``bf16-fast`` (CPU: the
            blocks' matrix multiplications in bfloat16, the rest in float32; needs
            AVX512-BF16 or AMX, refused otherwise).
        kind: "causal", "masked" or "auto" (from the config's architecture).
        start_token: override the document-start token (causal LMs).
        score_first_token: False gives the reference-compatible mode with no start
            token, where the first token is context only.
        trust_remote_code: run the model repository's own code (off unless asked).
        gguf_file: load a GGUF file inside ``name_or_path``.
        compile: score through ``torch.compile`` (causal LMs): about 1.45x the
            sentences/s on the embedded model on CPU, after a one-time compilation of
            about two minutes, so worth it for large runs only.
    """
    # a missing torch/transformers is named with its pip extra by biaslens.models.load_model
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    apply_thread_setting(torch)
    check_device(torch, device)
    check_model_location(name_or_path)
    kw: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if gguf_file:
        kw["gguf_file"] = gguf_file
    try:
        config = AutoConfig.from_pretrained(name_or_path, **kw)
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, **kw)
    except (OSError, ValueError) as e:  # ValueError: a folder without a usable config.json
        if not trust_remote_code and "custom code" in str(e):
            raise ModelError(f"cannot load model {name_or_path!r}: it needs its own Python code (auto_map in "
                             "config.json), which biaslens does not run unless you pass --trust-remote-code "
                             "(only for a model you trust)") from e
        local = Path(name_or_path).exists()
        # Hub ids are "name" or "owner/name"; anything else is meant as a folder
        looks_like_path = name_or_path.startswith(("/", ".", "~")) or name_or_path.count("/") > 1
        hint = ("the folder has no usable config.json/tokenizer" if local else
                "no such folder" if looks_like_path else
                "it is not a local folder and the Hugging Face Hub could not be reached (offline?); "
                "pass a local model folder, or 'smollm2-135m' for the embedded model")
        raise ModelError(f"cannot load model {name_or_path!r}: {hint}. ({e.__class__.__name__}: {' '.join(str(e).split())[:200]})") from e
    if kind == "auto":
        if getattr(config, "is_encoder_decoder", False):
            kind = "seq2seq"
        else:
            kind = "masked" if is_masked_config(config) else "causal"
    torch_dtype = resolve_dtype(dtype)
    fast = dtype.lower() == FAST_BF16
    if fast and (not str(device).startswith("cpu") or not cpu_has_bf16()):
        raise ModelError(f"--dtype {FAST_BF16} needs a CPU with native bfloat16 (AVX512-BF16 or AMX); "
                         + ("this one has neither" if str(device).startswith("cpu") else
                            f"on {device} use --dtype bfloat16") + "; use float32 (exact)")
    from transformers import AutoModelForSeq2SeqLM

    cls = {"masked": AutoModelForMaskedLM, "seq2seq": AutoModelForSeq2SeqLM}.get(kind, AutoModelForCausalLM)
    try:
        model = cls.from_pretrained(name_or_path, dtype=torch_dtype, **kw)
    except pickle.UnpicklingError as e:  # torch.load(weights_only=True) refused a pickle that is not plain tensors
        raise ModelError(f"cannot load {kind} model {name_or_path!r}: its PyTorch .bin weights hold pickled objects "
                         "other than tensors, which biaslens never unpickles (that could run code); use a "
                         "safetensors copy of the model") from e
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot load {kind} model {name_or_path!r}: {' '.join(str(e).split())[:300]}") from e
    model.eval()
    model.to(device)
    if fast:
        # the output head stays float32: log-softmax over the vocabulary is where bf16 hurt most
        _pack_linears(model.base_model.modules(), torch.bfloat16)
    chosen = pick_start_token(tokenizer, start_token) if (kind == "causal" and score_first_token) else None
    info = ModelInfo(
        backend=backend_name,
        name=display_name or str(name_or_path),
        kind=kind,
        weights_hash=weights_fingerprint(name_or_path, config),
        dtype=FAST_BF16 if fast else str(torch_dtype).replace("torch.", ""),
        start_token=chosen,
        extra={"path": str(name_or_path), "device": device, "key_score_first_token": score_first_token,
               "n_parameters": int(sum(p.numel() for p in model.parameters()))},
    )
    if kind == "masked":
        return HFMaskedBackend(model, tokenizer, info, device)
    if kind == "seq2seq":
        return HFSeq2SeqBackend(model, tokenizer, info, device)
    if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
        tokenizer.pad_token = tokenizer.eos_token  # GPT-2 has no pad token; the mask hides it anyway
    backend = HFCausalBackend(model, tokenizer, info, device, score_first_token=score_first_token)
    if compile:
        backend.compile()
    return backend
