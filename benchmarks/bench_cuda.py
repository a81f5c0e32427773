"""The embedded model on a CUDA GPU: scoring and generation throughput by batch size and dtype,
and optionally the paper-scale runs.

    python benchmarks/bench_cuda.py [--n 20000] [--full] [--shape 7b] [--generation-full]
        [--time-limit S] [--out FILE]

- ``--full``: the full v1.0 Likelihood Bias run (`biaslens run --full --device cuda --no-cache`),
  wall time and the run's scoring phase (target: under 20 s of scoring with the 135M model).
- ``--shape 7b`` (or ``1.7b``): a random-weight model of that shape (Llama-7B: 6.7B parameters;
  SmolLM2-1.7B), built on the GPU from a config with the embedded model's tokenizer (no
  download), scores ``--shape-sample`` HolisticBias sentences (default: all of v1.0) in bf16
  through the engine; its compute floor is the positions it computed times 2 x its parameters
  (the output head only where a position predicts a token) at this GPU's measured bf16 matmul
  rate (target: within 1.5x of the floor). The scores of random weights are not meaningful; only
  the time is. ``--shape-fp32`` adds the same in fp32 (TF32 off).
- ``--generation-full``: `biaslens run holistic-generation --full --device cuda --no-cache`
  (every prompt, the embedded model, the style judge) end to end, timed (stopped at
  ``--time-limit``, default 540 s, and recorded as such).
- ``--batch-size N``: texts per scoring batch for the runs and ``--shape`` (default: biaslens's).
- ``--before SRC``: the ``--full`` run again with another biaslens tree (a folder holding
  ``src/biaslens``, e.g. ``git archive <commit> src | tar -x -C SRC``), side by side on this GPU.
- ``--random-weights DIR``: for a GPU machine without the weight files. DIR holds the config and
  tokenizer files of the embedded model (``DIR/smollm2-135m``) and of the sentence encoder
  (``DIR/all-MiniLM-L6-v2``), as biaslens's cache has them; random-weight models of exactly those
  shapes are built from them (seeded) and every run uses them. Timings hold (the same shapes, the
  same tokens scored); the scores do not, and random weights never stop generating early, so
  generation produces every allowed token.

Writes benchmarks/results/cuda.json (GPU name, torch/transformers versions, CPU facts). No call
cache is used, so every sentence is computed; fp32 runs with TF32 off (exact, biaslens's default).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from biaslens.machine import machine_facts

HERE = Path(__file__).resolve().parent
#: ``--device``: cuda, or cpu to try this script out at small sizes where there is no GPU
DEVICE = "cuda"


def _timed(fn, *args, **kwargs):
    import torch

    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    sync()
    return out, time.perf_counter() - t0


def _generate_all(backend, prompts: list[str], params, batch_size: int) -> list[str]:
    return [text for i in range(0, len(prompts), batch_size)
            for text in backend.generate_batch(prompts[i:i + batch_size], params, [0] * len(prompts[i:i + batch_size]))]


#: model shapes built from a config (random weights): the compute of a real model of that size
SHAPES = {
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 4, "tie_word_embeddings": True},  # to try the script out on a CPU
    "1.7b": {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24, "num_attention_heads": 32,
             "num_key_value_heads": 32, "tie_word_embeddings": True},
    "7b": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 32, "tie_word_embeddings": False},
}


def _random_weight_models(src: Path, into: Path) -> tuple[str, str]:
    """Random-weight models of the embedded model's and the sentence encoder's shapes, from the
    config and tokenizer files in ``src``: the language model as a folder (returned, for
    ``--model``) and the encoder as the ``all_minilm_l6_v2`` package's ``model.zip`` (its folder
    returned, for PYTHONPATH), which is where biaslens looks for it."""
    import shutil
    import zipfile

    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    torch.manual_seed(0)
    lm = into / "smollm2-135m-random"
    shutil.copytree(src / "smollm2-135m", lm, dirs_exist_ok=True)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(lm)).save_pretrained(lm)
    encoder = into / "encoder"
    shutil.copytree(src / "all-MiniLM-L6-v2", encoder, dirs_exist_ok=True)
    AutoModel.from_config(AutoConfig.from_pretrained(encoder)).save_pretrained(encoder)
    package = into / "site" / "all_minilm_l6_v2"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    with zipfile.ZipFile(package / "model.zip", "w") as zf:
        for f in sorted(encoder.rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(encoder).as_posix())
    return str(lm), str(package.parent)


def _timed_run(cli_args: list[str], out: Path, limit: float, env: dict | None = None) -> dict:
    """``biaslens <cli_args> --device cuda --no-cache`` in a subprocess: wall time and run.json's timings."""
    import os

    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "biaslens.cli", *cli_args, "--device", DEVICE, "--out", str(out),
                               "--no-cache"], capture_output=True, text=True, timeout=limit,
                              env={**os.environ, **(env or {})})
        code, tail = proc.returncode, proc.stderr[-1500:]
    except subprocess.TimeoutExpired as e:
        code, tail = f"stopped at --time-limit {limit:.0f} s", str(e.stderr or "")[-1500:]
    wall = time.perf_counter() - t0
    run_json = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    return {"command": " ".join(["biaslens", *cli_args, f"--device {DEVICE} --no-cache"]), "wall_seconds": round(wall, 1),
            "exit_code": code, "status": run_json.get("status"), "timings": run_json.get("timings"),
            "scoring": run_json.get("scoring"), "stderr_tail": tail}


def _matmul_tflops(dtype, n: int = 8192, repeats: int = 20) -> float:
    """This GPU's dense matmul rate (TFLOP/s) on large square products."""
    import torch

    if DEVICE != "cuda":
        n, repeats = 1024, 3
    a, b = (torch.randn(n, n, device=DEVICE, dtype=dtype) for _ in range(2))
    for _ in range(3):
        a @ b
    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync()
    return 2 * n**3 * repeats / (time.perf_counter() - t0) / 1e12


def _shape_run(shape: str, dtype: str, texts: list[str], result: dict, tokenizer_folder: str | None = None,
               batch_size: int | None = None, compiled: bool = False) -> dict:
    """Score ``texts`` with a random-weight model of ``shape`` in ``dtype``, against its compute floor;
    ``compiled``: then again through ``torch.compile`` (:meth:`HFCausalBackend.compile`), side by side."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from biaslens.engine.scoring import ScoringStats, score_texts
    from biaslens.models.base import ModelInfo
    from biaslens.models.embedded import embedded_model_dir
    from biaslens.models.hf import HFCausalBackend

    tok = AutoTokenizer.from_pretrained(tokenizer_folder or embedded_model_dir())
    config = LlamaConfig(vocab_size=len(tok), max_position_embeddings=2048, **SHAPES[shape])
    torch_dtype = getattr(torch, dtype)
    with torch.device(DEVICE):
        model = LlamaForCausalLM(config).to(torch_dtype).eval()
    info = ModelInfo(backend="hf", name=f"random-{shape}", kind="causal", weights_hash="random", dtype=dtype,
                     start_token="<|endoftext|>")
    backend = HFCausalBackend(model, tok, info, device=DEVICE)
    score_texts(backend, texts[:2048], cache=None)  # warm-up
    backend.computed_tokens = backend.computed_head_rows = 0
    stats = ScoringStats()
    scores, secs = _timed(score_texts, backend, texts, cache=None, stats=stats, batch_size=batch_size)
    n_params = sum(p.numel() for p in model.parameters())
    head = config.hidden_size * config.vocab_size
    body = n_params - head * (1 if config.tie_word_embeddings else 2)  # without the input embedding and head
    predicting = backend.computed_head_rows  # the head runs once per distinct predicting prefix
    del scores
    rate = _matmul_tflops(torch_dtype) * 1e12
    floor = (2 * body * backend.computed_tokens + 2 * head * predicting) / rate
    out = {"dtype": dtype, "n_parameters": n_params, "sentences": len(texts), "seconds": round(secs, 2),
           "sentences_per_second": round(len(texts) / secs, 1), "computed_positions": backend.computed_tokens,
           "predicting_positions": predicting, "floor_seconds": round(floor, 2), "ratio_to_floor": round(secs / floor, 2),
           "batch_size": batch_size or backend.score_batch_size, "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20) if DEVICE == "cuda" else None}
    if compiled:
        backend.compile()
        _, compile_secs = _timed(score_texts, backend, texts[:2048], cache=None)  # compiles here
        backend.computed_tokens = backend.computed_head_rows = 0
        _, secs_c = _timed(score_texts, backend, texts, cache=None, batch_size=batch_size)
        import torch._dynamo.utils as dynamo_utils

        out["compiled"] = {"seconds": round(secs_c, 2), "ratio_to_floor": round(secs_c / floor, 2),
                           "speedup_vs_eager": round(secs / secs_c, 2),
                           "first_batch_with_compilation_seconds": round(compile_secs, 1),
                           "graphs_compiled": int(dynamo_utils.counters["stats"]["unique_graphs"]),
                           "same_positions": backend.computed_tokens == out["computed_positions"]}
    print(out, flush=True)
    del model, backend
    torch.cuda.empty_cache()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000, help="HolisticBias sentences to score")
    ap.add_argument("--batch-sizes", default="256,1024,4096", help="texts per scoring batch to try")
    ap.add_argument("--prompts", type=int, default=512, help="generation prompts (32 new tokens each)")
    ap.add_argument("--full", action="store_true", help="also time `biaslens run --full --device cuda`")
    ap.add_argument("--shape", choices=sorted(SHAPES), default=None, help="also score with a random model of this shape")
    ap.add_argument("--shape-sample", type=int, default=0, help="sentences for --shape (0: all of v1.0)")
    ap.add_argument("--shape-fp32", action="store_true", help="--shape in fp32 too")
    ap.add_argument("--shape-compile", action="store_true",
                    help="--shape also through torch.compile (the packed path's compiled body), side by side")
    ap.add_argument("--generation-full", action="store_true",
                    help="also time `biaslens run holistic-generation --full --device cuda`")
    ap.add_argument("--time-limit", type=float, default=540.0, help="seconds for each subprocess run")
    ap.add_argument("--skip-sweep", action="store_true", help="skip the batch-size and generation sweep")
    ap.add_argument("--batch-size", type=int, default=None, help="texts per scoring batch (default: biaslens's)")
    ap.add_argument("--before", type=Path, default=None, help="another biaslens tree: the --full run with it too")
    ap.add_argument("--random-weights", type=Path, default=None,
                    help="folder of config and tokenizer files: random-weight models of those shapes")
    ap.add_argument("--run-sample", type=int, default=0,
                    help="the --full and --generation-full runs on this many items (--sample) instead of all")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: try the script out at small sizes (--n, --shape-sample) where there is no GPU")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cuda.json")
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device

    import numpy as np
    import torch
    import transformers

    from biaslens.engine.scoring import ScoringStats, score_texts
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset
    from biaslens.models import load_model
    from biaslens.models.base import GenerationParams, GenerationRequest

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = likelihood_rows(build_sentences(load_holistic_dataset()))
    texts = rows["text"].astype(str).sample(n=args.n, random_state=0).tolist()
    result: dict = {"benchmark": "cuda", "gpu": torch.cuda.get_device_name(0) if DEVICE == "cuda" else "none (--device cpu)", "torch": torch.__version__,
                    "transformers": transformers.__version__, "sentences": len(texts), "scoring": [],
                    "machine": machine_facts()}
    model, model_args, env = "smollm2-135m", [], {}
    if args.random_weights:
        import os
        import tempfile

        model, site = _random_weight_models(args.random_weights, Path(tempfile.mkdtemp(prefix="biaslens-random-")))
        model_args = ["--model", model]
        sys.path.insert(0, site)
        env = {"PYTHONPATH": os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH")) if p)}
        result["weights"] = "random (seeded), built from the embedded model's and the encoder's configs"
    reference = None
    for dtype in () if args.skip_sweep else ("float32", "bfloat16"):
        backend = load_model(model, device="cuda", dtype=dtype)
        score_texts(backend, texts[:512], cache=None)  # warm-up: CUDA context, kernels, allocator
        for bs in [int(b) for b in args.batch_sizes.split(",")]:
            torch.cuda.reset_peak_memory_stats()
            stats = ScoringStats()
            scores, secs = _timed(score_texts, backend, texts, cache=None, batch_size=bs, stats=stats)
            ll = np.asarray([s.sum_logprob for s in scores])
            if reference is None:
                reference = ll
            result["scoring"].append({
                "dtype": dtype, "batch_size": bs, "seconds": round(secs, 2),
                "sentences_per_second": round(len(texts) / secs, 1),
                "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20),
                "max_abs_loglik_diff_vs_first_fp32": float(np.max(np.abs(ll - reference)))})
            print(result["scoring"][-1], flush=True)
        if dtype == "float32":
            prompts = [f"I'm {t[len('I'):].strip()}" if t.startswith("I ") else t for t in texts[: args.prompts]]
            params = GenerationParams(max_new_tokens=32, min_new_tokens=32)
            rendered = [backend.render_prompt(GenerationRequest(p), params) for p in prompts]
            backend.generate_batch(rendered[:16], params, [0] * 16)
            gens = []
            for bs in (128, 512):
                _, secs = _timed(_generate_all, backend, rendered, params, bs)
                gens.append({"batch_size": bs, "prompts": len(rendered), "new_tokens_each": 32,
                             "seconds": round(secs, 2), "tokens_per_second": round(32 * len(rendered) / secs, 1)})
                print(gens[-1], flush=True)
            result["generation_greedy_fp32"] = gens
        backend = None  # free the GPU memory before the next dtype loads
        torch.cuda.empty_cache()
    def save() -> None:  # after every step, so a run stopped at its time limit keeps what it measured
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))

    save()
    size = ["--sample", str(args.run_sample)] if args.run_sample else ["--full"]
    if args.batch_size:
        size += ["--batch-size", str(args.batch_size)]
        result["batch_size"] = args.batch_size
    if args.full:
        result["full_run"] = _timed_run(["run", *size, *model_args], Path("/tmp/biaslens-cuda-full"),
                                        args.time_limit, env)
        print(result["full_run"], flush=True)
        save()
        if args.before:
            import os

            before_env = {**env, "PYTHONPATH": os.pathsep.join(
                p for p in (str(args.before.resolve() / "src"), env.get("PYTHONPATH"), os.environ.get("PYTHONPATH")) if p)}
            result["full_run_before"] = {"tree": str(args.before), **_timed_run(
                ["run", *size, *model_args], Path("/tmp/biaslens-cuda-full-before"), args.time_limit, before_env)}
            print(result["full_run_before"], flush=True)
            save()
    if args.shape:
        all_texts = rows["text"].astype(str).tolist()
        if args.shape_sample:
            all_texts = rows["text"].astype(str).sample(n=args.shape_sample, random_state=0).tolist()
        result["shape"] = {"shape": args.shape, "matmul_tflops_bf16": round(_matmul_tflops(torch.bfloat16), 1),
                           "runs": [_shape_run(args.shape, dt, all_texts, result, model if args.random_weights else None,
                                               args.batch_size, compiled=args.shape_compile)
                                    for dt in (("bfloat16", "float32") if args.shape_fp32 else ("bfloat16",))]}
        save()
    if args.generation_full:
        result["generation_full_run"] = _timed_run(["run", "holistic-generation", *size, *model_args],
                                                   Path("/tmp/biaslens-cuda-generation-full"), args.time_limit, env)
        print(result["generation_full_run"], flush=True)
    save()


if __name__ == "__main__":
    main()
