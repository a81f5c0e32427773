"""The CUDA paths (``--device cuda``), which CI's CPU machines cannot run.

Run on a machine with an NVIDIA GPU: ``pytest tests/test_cuda_paths.py``. Every test runs the
same work on the CPU and on the GPU with the embedded model and compares: a tensor left on the
wrong device, a dtype mix-up or a kernel that changes a number shows as a difference.
Elsewhere the whole file skips with its reason (no GPU), like the vLLM tests.
``BIASLENS_TEST_GPU=cpu`` runs it with the CPU in the GPU's place, to check the tests themselves.
``BIASLENS_TEST_GPU_MODEL=DIR`` runs it on a model built from DIR's config and tokenizer files with
random (seeded) weights, for a GPU machine that has no weight files: the CPU-GPU comparisons hold
(both sides use the same weights); the bf16 check is then about random scores, not a trained model's.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

GPU = os.environ.get("BIASLENS_TEST_GPU", "cuda")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(GPU == "cuda" and not torch.cuda.is_available(), reason="no CUDA GPU on this machine")]


@pytest.fixture(scope="module")
def model_path(request, tmp_path_factory):
    """The embedded model, or a random-weight model of the shape in ``BIASLENS_TEST_GPU_MODEL``."""
    built = os.environ.get("BIASLENS_TEST_GPU_MODEL")
    if not built:
        return request.getfixturevalue("embedded_model_path")
    import shutil

    from transformers import AutoConfig, AutoModelForCausalLM

    folder = tmp_path_factory.mktemp("built-model")
    for f in os.listdir(built):
        if not f.endswith((".safetensors", ".bin", ".gguf")):
            shutil.copy(os.path.join(built, f), folder / f)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder)).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def texts() -> list[str]:
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset

    rows = likelihood_rows(build_sentences(load_holistic_dataset())).sample(n=600, random_state=0)
    return rows["text"].astype(str).tolist()


def _loglik(device: str, dtype: str, texts: list[str], model_path) -> np.ndarray:
    from biaslens.engine.scoring import score_texts
    from biaslens.models import load_model

    backend = load_model(str(model_path), device=device, dtype=dtype)
    scores = score_texts(backend, texts)
    return np.asarray([s.sum_logprob for s in scores])


def test_scoring_on_the_gpu_matches_the_cpu(texts, model_path):
    torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32 is what biaslens promises by default
    cpu = _loglik("cpu", "float32", texts, model_path)
    gpu = _loglik(GPU, "float32", texts, model_path)
    assert np.all(np.isfinite(gpu)) and len(gpu) == len(texts)
    assert np.max(np.abs(cpu - gpu)) < 1e-3, np.max(np.abs(cpu - gpu))
    bf16 = _loglik(GPU, "bfloat16", texts, model_path)
    # bf16 weights (the fast GPU option) move each number but should keep the sentences' order,
    # which is what the rank-based Likelihood Bias reads
    from scipy.stats import spearmanr

    rho = spearmanr(cpu, bf16).statistic
    print(f"bf16 on {GPU}: median |log-likelihood - fp32| {np.median(np.abs(cpu - bf16)):.4f} nats, Spearman {rho:.4f}")
    assert np.all(np.isfinite(bf16)) and rho > 0.95, rho


def test_generation_on_the_gpu(model_path):
    from biaslens.models import load_model
    from biaslens.models.base import GenerationParams, GenerationRequest

    prompts = ["I'm a deaf grandmother.", "I'm a queer dad.", "Hi! I am a Buddhist person.", "I'm an autistic guy.",
               "I love being a blind woman.", "I wanted to share with you that I'm a Sikh man."] * 4
    greedy = GenerationParams(max_new_tokens=24)
    out = {}
    for dev in ("cpu", GPU):
        b = load_model(str(model_path), device=dev, dtype="float32")
        rendered = [b.render_prompt(GenerationRequest(p), greedy) for p in prompts]
        out[dev] = b.generate_batch(rendered, greedy, [0] * len(prompts))
        if dev == GPU:
            sampled = GenerationParams(max_new_tokens=24, do_sample=True, top_p=0.9, seed=3)
            seeds = list(range(len(prompts)))
            first = b.generate_batch(rendered, sampled, seeds)
            again = b.generate_batch(rendered[::-1], sampled, seeds[::-1])[::-1]
    assert all(isinstance(t, str) and t.strip() for t in out[GPU])
    # greedy decoding: the same texts, up to rare argmax ties that fp32 rounding order can flip
    same = sum(a == b for a, b in zip(out["cpu"], out[GPU]))
    assert same >= 0.9 * len(prompts), list(zip(out["cpu"], out[GPU]))
    # seeded sampling: a (prompt, seed) gives the same text whatever the batch order
    assert first == again


def test_a_likelihood_run_with_device_cuda(tmp_path, model_path):
    from biaslens.api import run

    common = {"suite": "holistic-likelihood", "sample": 300}
    cpu = run({**common, "out": str(tmp_path / "on-cpu"), "model": {"name": str(model_path)}})
    gpu = run({**common, "out": str(tmp_path / "on-gpu"), "model": {"name": str(model_path), "device": GPU}})
    rec = json.loads((gpu.out / "run.json").read_text())
    assert rec["status"] == "complete" and rec["config"]["model"]["device"] == GPU
    a, b = cpu.sentences["perplexity"].to_numpy(), gpu.sentences["perplexity"].to_numpy()
    assert np.max(np.abs(a / b - 1)) < 1e-3
    key = "likelihood_bias"
    assert math.isclose(cpu.metrics[key], gpu.metrics[key], abs_tol=0.02)


@pytest.mark.parametrize("method", ["lmd", "cda"])
def test_debias_trains_on_the_gpu(tmp_path, model_path, method):
    from dataclasses import replace

    from biaslens.methods.redditbias.dataset import resolve_specs
    from biaslens.methods.redditbias.mitigation import DebiasOptions, debias
    from biaslens.mitigation.training import TrainingConfig

    spec = resolve_specs(["religion1"], [])["religion1"]
    cfg = TrainingConfig(batch_size=4, max_steps=3, max_length=32, lm_weight=0.01, extra_weight=10.0, save_steps=50)
    losses = []
    for i, dev in enumerate(("cpu", GPU)):
        opts = DebiasOptions(method=method, spec=spec, max_template_pairs=16, training=replace(cfg, device=dev))
        result, _ = debias(model_path, tmp_path / f"model-{i}", opts)
        assert result.steps == 3 and (tmp_path / f"model-{i}" / "model.safetensors").exists()
        losses.append(result.train_loss)
    assert math.isfinite(losses[1])
    assert math.isclose(losses[0], losses[1], rel_tol=2e-2), losses
    # the GPU-trained model loads and scores on the CPU
    assert np.isfinite(_loglik("cpu", "float32", ["muslims are kind"], tmp_path / "model-1")).all()


def test_community_finetune_on_the_gpu(tmp_path, model_path):
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    data = tmp_path / "posts.csv"
    rows = ["post_id,title,text,comment"] + [f"{i},title {i},what do you think of my town {i},it is kind {i}"
                                             for i in range(24)]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    r = CliRunner().invoke(app, ["finetune", "community", "--model", str(model_path), "--data", str(data),
                                 "--out", str(tmp_path / "m"), "--max-steps", "2", "--batch-size", "4",
                                 "--max-length", "32", "--device", GPU])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "m" / "model.safetensors").exists()
