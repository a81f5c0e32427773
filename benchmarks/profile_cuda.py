"""Where a GPU's scoring time goes: a cProfile of ``score_texts`` over HolisticBias v1.0 sentences
on a random-weight model of the embedded model's shape (the host's share), then a large shape in
bf16 at two batch sizes and under torch.profiler (the device's share, by kernel).

    python benchmarks/profile_cuda.py --models FOLDER [--device cuda] [--n 460980] [--shape 7b] [--m 20000]

FOLDER holds the config and tokenizer files of ``smollm2-135m`` and ``all-MiniLM-L6-v2`` (as for
``bench_cuda.py --random-weights``). Prints the tables; benchmarks/results/cuda_profile_h200.log is
one such output (an H200). Random weights: the timings hold, the scores do not.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cuda  # noqa: E402  (beside this file)


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def host_profile(model: str, texts: list[str], device: str) -> None:
    """score_texts over ``texts`` once plain and once under cProfile; the top functions."""
    from biaslens.engine.scoring import ScoringStats, score_texts
    from biaslens.models import load_model

    backend = load_model(model, device=device)
    score_texts(backend, texts[:4096], cache=None)  # warm-up
    prof = cProfile.Profile()
    for label in ("plain", "profiled"):
        stats = ScoringStats()
        _sync(device)
        t = time.perf_counter()
        if label == "profiled":
            prof.enable()
        score_texts(backend, texts, cache=None, stats=stats)
        _sync(device)
        if label == "profiled":
            prof.disable()
        print(f"{label} {len(texts)} texts {time.perf_counter() - t:.2f} s; engine {stats.seconds:.2f} s; "
              f"batches {stats.batches}", flush=True)
    for order, limit in (("tottime", 30), ("cumulative", 20)):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(order).print_stats(limit)
        print(out.getvalue()[:9000])


def device_profile(tokenizer_folder: str, shape: str, texts: list[str], device: str) -> None:
    """A random-weight model of ``shape`` in bf16: timed at 1,024 and 4,096 texts per batch, then
    half the texts under torch.profiler (kernels by device time)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from biaslens.engine.scoring import ScoringStats, score_texts
    from biaslens.models.base import ModelInfo
    from biaslens.models.hf import HFCausalBackend

    tok = AutoTokenizer.from_pretrained(tokenizer_folder)
    config = LlamaConfig(vocab_size=len(tok), max_position_embeddings=2048, **bench_cuda.SHAPES[shape])
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    info = ModelInfo(backend="hf", name=f"random-{shape}", kind="causal", weights_hash="random", dtype="bfloat16",
                     start_token="<|endoftext|>")
    backend = HFCausalBackend(model, tok, info, device=device)
    score_texts(backend, texts[:1024], cache=None)  # warm-up
    for size in (1024, 4096):
        _sync(device)
        t = time.perf_counter()
        score_texts(backend, texts, cache=None, batch_size=size, stats=ScoringStats())
        _sync(device)
        print(f"{shape} batch {size} {len(texts)} texts {time.perf_counter() - t:.2f} s", flush=True)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as p:
        score_texts(backend, texts[: len(texts) // 2], cache=None)
        _sync(device)
    key = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    print(p.key_averages().table(sort_by=key, row_limit=25, max_name_column_width=60)[:9000])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=Path, required=True, help="config and tokenizer files (see above)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu: try it out at small sizes")
    ap.add_argument("--n", type=int, default=460980, help="sentences for the host profile (v1.0 has 460,980)")
    ap.add_argument("--shape", default="7b", choices=sorted(bench_cuda.SHAPES), help="the large shape")
    ap.add_argument("--m", type=int, default=20000, help="sentences for the large shape")
    args = ap.parse_args()

    import torch

    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset

    bench_cuda.DEVICE = args.device
    torch.backends.cuda.matmul.allow_tf32 = False
    model, _ = bench_cuda._random_weight_models(args.models, Path(tempfile.mkdtemp(prefix="biaslens-random-")))
    texts = likelihood_rows(build_sentences(load_holistic_dataset()))["text"].astype(str).tolist()
    host_profile(model, texts[: args.n], args.device)
    device_profile(model, args.shape, texts[: args.m], args.device)


if __name__ == "__main__":
    main()
