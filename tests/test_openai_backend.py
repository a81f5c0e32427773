"""The openai backend against a real OpenAI-compatible server: `transformers serve` on
127.0.0.1 serving the embedded model (one server per session), with a small
fault-injecting reverse proxy in front of it for 429 storms, slow answers and a
server that echoes the Authorization header back.

transformers serve returns no prompt log-probabilities, so against it scoring must be
refused clearly; real scoring is tested against vLLM's server in the vLLM tests.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("httpx", reason="the openai backend needs httpx (pip install 'biaslens[openai]')")
pytest.importorskip("fastapi", reason="transformers serve needs the [serving] extra (scripts/setup.sh --test)")
pytest.importorskip("uvicorn", reason="transformers serve needs the [serving] extra (scripts/setup.sh --test)")

from biaslens.engine.cache import CallCache  # noqa: E402
from biaslens.engine.generation import generate_texts  # noqa: E402
from biaslens.engine.scoring import score_texts  # noqa: E402
from biaslens.models.base import ModelError  # noqa: E402
from biaslens.models.generation import GenerationParams, GenerationRequest  # noqa: E402
from biaslens.models.openai_compat import load_openai  # noqa: E402

pytestmark = pytest.mark.slow

PROMPTS = ["I love my friends because", "Hi, I am a deaf person.", "My neighbours are"]
GREEDY = GenerationParams(max_new_tokens=6)
SHORT = GenerationParams(max_new_tokens=3)
SENTINEL = "sk-biaslens-SENTINEL-7f3a9c1e5b"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`transformers serve` in a subprocess, restartable on the same port (same URL, same model identity)."""

    def __init__(self, model_dir: Path, workdir: Path):
        self.model_dir = model_dir
        self.workdir = workdir
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        exe = Path(sys.executable).parent / "transformers"
        if not exe.exists():
            pytest.skip(f"no `transformers` command next to {sys.executable}")
        hub = self.workdir / "hf-hub"  # /v1/models scans the Hub cache; an empty one keeps it fast and offline
        hub.mkdir(exist_ok=True)
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_CACHE=str(hub),
                   OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
        self.log = open(self.workdir / f"serve-{time.time():.0f}.log", "w")
        self.proc = subprocess.Popen([str(exe), "serve", str(self.model_dir), "--host", "127.0.0.1", "--port",
                                      str(self.port), "--device", "cpu", "--dtype", "float32"],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"transformers serve exited: {Path(self.log.name).read_text()[-2000:]}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        self.kill()
        pytest.fail("transformers serve did not become healthy within 180 s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: the server and nothing else
            self.proc.wait(timeout=30)
        self.proc = None

    def ensure_running(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.start()


@pytest.fixture(scope="session")
def served_model_dir(embedded_model_path, tmp_path_factory) -> Path:
    """The embedded model with do_sample in its generation config: transformers serve samples only
    when the model's generation config says so (temperature 0 still gives greedy decoding)."""
    folder = tmp_path_factory.mktemp("served-model") / "smollm2-135m"
    folder.mkdir()
    for f in embedded_model_path.iterdir():
        if f.name != "generation_config.json":
            (folder / f.name).symlink_to(f)
    gen = json.loads((embedded_model_path / "generation_config.json").read_text())
    gen.update(do_sample=True, temperature=1.0, top_p=1.0, top_k=0)
    (folder / "generation_config.json").write_text(json.dumps(gen))
    return folder


@pytest.fixture(scope="session")
def server(served_model_dir, tmp_path_factory):
    srv = Server(served_model_dir, tmp_path_factory.mktemp("serve"))
    srv.start()
    yield srv
    srv.kill()


@pytest.fixture
def live(server) -> Server:
    """The session server, restarted first if an earlier test killed it."""
    server.ensure_running()
    return server


class FaultProxy:
    """A reverse proxy in front of the real server that misbehaves on request:
    ``fail_next`` answers 429 with Retry-After, ``delay_next`` holds answers back,
    ``echo_auth_next`` answers 400 quoting the Authorization header it received."""

    def __init__(self, upstream_port: int):
        proxy = self
        self.upstream_port = upstream_port
        self.fail_next = 0
        self.retry_after = "1"
        self.delay_next = 0
        self.delay = 0.0
        self.echo_auth_next = 0
        self.reject_posts_with = None  # answer every POST with HTTP 400 and this error message
        self.seen_auth: list[str | None] = []
        self.times: list[float] = []
        self.n_requests = 0
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _take(self, name: str) -> bool:
                with proxy.lock:
                    if getattr(proxy, name) > 0:
                        setattr(proxy, name, getattr(proxy, name) - 1)
                        return True
                    return False

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy.lock:
                    proxy.n_requests += 1
                    proxy.seen_auth.append(self.headers.get("Authorization"))
                    proxy.times.append(time.monotonic())
                if self._take("fail_next"):
                    return self._reply(429, b'{"error": {"message": "rate limited"}}',
                                       {"Retry-After": proxy.retry_after})
                if self.command == "POST" and proxy.reject_posts_with is not None:
                    return self._reply(400, json.dumps({"error": {"message": proxy.reject_posts_with}}).encode())
                if self._take("echo_auth_next"):
                    msg = {"error": {"message": f"bad credentials: {self.headers.get('Authorization')}"}}
                    return self._reply(400, json.dumps(msg).encode())
                if self._take("delay_next"):
                    time.sleep(proxy.delay)
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=120)
                try:
                    conn.request(self.command, self.path, body=body,
                                 headers={"Content-Type": "application/json"} if body else {})
                    resp = conn.getresponse()
                    data = resp.read()
                except OSError:
                    return self._reply(502, b'{"error": "upstream unavailable"}')
                try:
                    self._reply(resp.status, data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            do_GET = _forward
            do_POST = _forward

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def proxy(live):
    p = FaultProxy(live.port)
    yield p
    p.close()


def _backend(url: str, name: Path | str, **kw):
    backend = load_openai(str(name), base_url=url, **kw)
    backend.backoff_base = 0.05  # keep retries fast in tests; Retry-After still rules when sent
    return backend


# -- generation ------------------------------------------------------------------------------

def test_completions_greedy_matches_the_hf_backend(live, embedded_model):
    """The served model's greedy continuation is the local HF backend's, token for token."""
    backend = _backend(live.url, live.model_dir, max_concurrency=3)
    try:
        assert backend.info.backend == "openai" and backend.info.start_token == "<|endoftext|>"
        served = generate_texts(backend, PROMPTS[:2], GREEDY)
        # chat=False: the HF backend would otherwise use the tokenizer's chat template
        local = generate_texts(embedded_model, PROMPTS[:2], GenerationParams(max_new_tokens=6, chat=False), batch_size=1)
    finally:
        backend.close()
    assert all(rows[0] for rows in served)
    assert served == local


def test_chat_greedy_matches_the_hf_chat_template(live, embedded_model):
    backend = _backend(live.url, live.model_dir, api="chat", max_concurrency=2)
    chat = GenerationParams(max_new_tokens=6, chat=True)
    reqs = [GenerationRequest(prompt=p) for p in PROMPTS[:2]]
    try:
        served = generate_texts(backend, reqs, GenerationParams(max_new_tokens=6))
    finally:
        backend.close()
    local = generate_texts(embedded_model, reqs, chat, batch_size=1)
    assert all(rows[0] for rows in served)
    assert served == local


def test_seeded_sampling_reproducible(live):
    """transformers serve seeds torch globally per request: reproducible one request at a time."""
    params = GenerationParams(max_new_tokens=5, do_sample=True, n=2, seed=11, temperature=1.0, top_p=1.0)
    backend = _backend(live.url, live.model_dir, max_concurrency=1)
    try:
        first = generate_texts(backend, PROMPTS[:1], params)
        again = generate_texts(backend, PROMPTS[:1], params)
    finally:
        backend.close()
    assert first == again
    assert len(set(first[0])) > 1  # the two rows have their own seeds


# -- scoring ---------------------------------------------------------------------------------

def test_scoring_is_refused_clearly(live, tmp_path):
    backend = _backend(live.url, live.model_dir)
    try:
        with pytest.raises(ModelError) as e:
            score_texts(backend, ["I love cats.", "I hate dogs."], cache=CallCache(tmp_path / "c.sqlite"))
    finally:
        backend.close()
    msg = str(e.value)
    assert "does not return prompt log-probabilities" in msg and live.url in msg
    assert "vllm serve" in msg and "holistic-generation" in msg


def test_token_counts_use_the_local_tokenizer_else_an_estimate(live, caplog, embedded_model):
    backend = _backend(live.url, live.model_dir)
    texts = ["I love cats.", "Hi, I am a deaf person."]
    try:
        assert backend.count_tokens(texts) == embedded_model.count_tokens(texts)
        backend.tokenizer = None  # a model whose tokenizer is not on this machine; transformers serve has no /tokenize
        with caplog.at_level(logging.WARNING, logger="biaslens"):
            assert backend.count_tokens(texts) == [3, 6]
        assert "estimated as characters / 4" in caplog.text
    finally:
        backend.close()


def test_scoring_refusal_through_the_cli(live, tmp_path):
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "holistic-likelihood", "--backend", "openai", "--base-url", live.url,
                                   "-m", str(live.model_dir), "--sample", "20", "-o", str(out),
                                   "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 2, res.output
    assert "does not return prompt log-probabilities" in res.output and "Traceback" not in res.output
    assert json.loads((out / "run.json").read_text())["status"] == "failed"


def test_echo_logprobs_are_mapped_to_token_scores():
    """The mapping of an echo answer (OpenAI legacy format, as vLLM returns it) to TokenScores:
    start token and generated token dropped, spans in the text; reference mode drops the first token.
    (Hand-made numbers: no server here returns prompt log-probabilities; vLLM's is tested elsewhere.)"""
    from biaslens.models.openai_compat import OpenAIBackend

    backend = OpenAIBackend(name="m", base_url="http://127.0.0.1:9/v1", api_key=None, api="completions",
                            max_concurrency=1, requests_per_second=None, request_timeout=1.0, max_retries=0,
                            start_token="<|endoftext|>", score_first_token=True)
    from biaslens.models.openai_compat import _prompt_starts

    start, text = "<|endoftext|>", "I love cats."
    prompt = start + text
    # vLLM's echo: decoded tokens and text_offset as their running length; the last token is generated
    tokens = [start, "I", " love", " cats", ".", " They"]
    offsets = [0, 13, 14, 19, 24, 25]
    values = [None, -5.0, -2.0, -3.0, -1.0, -0.5]
    try:
        s = backend._to_scores(text, len(start), values[:5], _prompt_starts(prompt, tokens[:5], offsets[:5]))
        assert np.allclose(s.logprobs, [-5.0, -2.0, -3.0, -1.0])
        assert [text[a:b] for a, b in s.offsets] == ["I", " love", " cats", "."]
        # a server that adds its own BOS ("<s>" shifts vLLM's offsets by 3): same answer
        bos_starts = _prompt_starts(prompt, ["<s>", *tokens[:5]], [0, 3, 16, 17, 22, 27])
        assert bos_starts[:2] == [-3, 0]
        s2 = backend._to_scores(text, len(start), [None, -7.0, *values[1:5]], bos_starts)
        assert np.allclose(s2.logprobs, s.logprobs) and s2.offsets.tolist() == s.offsets.tolist()
        backend.score_first_token = False  # reference mode: no start text, the first token is context only
        s = backend._to_scores(text, 0, [None, -2.0, -3.0, -1.0], _prompt_starts(text, tokens[1:5], []))
        assert s.offsets.tolist() == [[1, 6], [6, 11], [11, 12]]
        s = backend._to_scores(text, 0, [None, -4.0, -2.0, -3.0, -1.0],
                               _prompt_starts(text, ["<s>", *tokens[1:5]], []))
        assert np.allclose(s.logprobs, [-2.0, -3.0, -1.0])
        backend.score_first_token = True
        # vLLM's prompt_logprobs (no offsets: placed by their decoded text), with and without a BOS first
        def plp(*pieces):
            return {"choices": [{"text": "", "prompt_logprobs": [None] + [
                {str(i): {"logprob": -float(i), "decoded_token": p}} for i, p in enumerate(pieces, 1)]}]}

        for answer in (plp("I", " love", " cats", "."), plp(start, "I", " love", " cats", ".")):
            backend._request = lambda *a, answer=answer, **k: answer
            s = backend._score_prompt_logprobs(text)
            assert [text[a:b] for a, b in s.offsets] == ["I", " love", " cats", "."]
            assert s.n_tokens == 4
        pieces = ["<", "|", "endoftext", "|>", "I", " love", " cats", "."]  # not a special token here
        with pytest.raises(ModelError, match="split the start token"):
            backend._to_scores(text, len(start), [None, -1.0, -1.0, -1.0, -2.0, -1.0, -1.0, -1.0],
                               _prompt_starts(prompt, pieces, []))
    finally:
        backend.close()


# -- faults ----------------------------------------------------------------------------------

def test_429_storm_is_retried_honouring_retry_after(proxy, live, caplog):
    direct = _backend(live.url, live.model_dir)
    try:
        expected = generate_texts(direct, PROMPTS, SHORT)
    finally:
        direct.close()
    backend = _backend(proxy.url, live.model_dir, max_concurrency=3, max_retries=6)
    proxy.fail_next, proxy.retry_after = 5, "1"
    t0 = time.monotonic()
    try:
        with caplog.at_level(logging.INFO, logger="biaslens"):
            got = generate_texts(backend, PROMPTS, SHORT)
    finally:
        backend.close()
    assert got == expected
    assert backend.stats["retry_reasons"]["429"] == 5 and backend.stats["retries"] == 5
    assert backend.stats["failed"] == 0
    assert time.monotonic() - t0 >= 1.0  # every 429 asked for one second
    assert sum("429" in r.getMessage() and "retry" in r.getMessage() for r in caplog.records) == 5
    assert any("5 retried" in r.getMessage() for r in caplog.records)


def test_429_forever_gives_up_with_a_clear_error(proxy, live):
    backend = _backend(proxy.url, live.model_dir, max_retries=2)
    proxy.fail_next, proxy.retry_after = 100, "0"
    try:
        with pytest.raises(ModelError, match=r"after 3 attempt\(s\): HTTP 429") as e:
            generate_texts(backend, PROMPTS[:1], GREEDY)
    finally:
        backend.close()
    assert proxy.url in str(e.value)


def test_slow_answer_times_out_and_is_retried(proxy, live):
    one_token = GenerationParams(max_new_tokens=1)  # fast answers: only the proxy's delay may time out
    backend = _backend(proxy.url, live.model_dir, request_timeout=2.0, max_concurrency=1)
    proxy.delay_next, proxy.delay = 1, 4.0
    try:
        got = generate_texts(backend, PROMPTS[:1], one_token)
        assert got[0][0]
        assert backend.stats["retry_reasons"]["timeout"] == 1 and backend.stats["retries"] == 1
        proxy.delay_next, proxy.delay = 10, 3.0
        backend.max_retries = 1
        with pytest.raises(ModelError, match=r"after 2 attempt\(s\): no answer within 2 s") as e:
            generate_texts(backend, PROMPTS[1:2], one_token)
        assert proxy.url in str(e.value)
    finally:
        backend.close()


def test_requests_per_second_limit(proxy, live):
    backend = _backend(proxy.url, live.model_dir, requests_per_second=4.0, max_concurrency=4)
    proxy.times.clear()
    try:
        got = generate_texts(backend, [f"Hello number {i}" for i in range(6)], GenerationParams(max_new_tokens=1))
    finally:
        backend.close()
    assert len(got) == 6
    gaps = np.diff(sorted(proxy.times))
    assert len(proxy.times) == 6 and gaps.min() >= 0.2  # 4/s: starts 0.25 s apart (some slack for scheduling)
    assert proxy.times[-1] - proxy.times[0] >= 1.2


def test_url_and_retry_after_helpers():
    from biaslens.models.openai_compat import _normalise_base_url, _public_url, _retry_after_seconds

    assert _normalise_base_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert _normalise_base_url("https://api.example.com/v1/") == "https://api.example.com/v1"
    assert _public_url("https://user:pw@api.example.com:8443/v1?api-key=s3cret") == "https://api.example.com:8443/v1"
    assert _retry_after_seconds("2") == 2.0 and _retry_after_seconds("0.5") == 0.5
    assert _retry_after_seconds(None) is None and _retry_after_seconds("soon") is None
    import email.utils

    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= _retry_after_seconds(later) <= 31


def test_bad_base_url_is_one_clear_error(live, tmp_path):
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(ModelError, match="cannot reach an OpenAI-compatible server at " + dead):
        load_openai("m", base_url=dead)
    with pytest.raises(ModelError, match="not an http"):
        load_openai("m", base_url="ftp://127.0.0.1/v1")
    with pytest.raises(ModelError, match="needs --base-url"):
        load_openai("m", base_url=None)
    with pytest.raises(ModelError, match="API root"):  # the server is there, the path is not
        load_openai("m", base_url=live.url.replace("/v1", "/api/v2"))
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    res = CliRunner().invoke(app, ["run", "holistic-generation", "--backend", "openai", "--base-url", dead,
                                   "-m", "m", "-o", str(tmp_path / "run"), "--no-cache"])
    assert res.exit_code == 2 and "cannot reach" in res.output and "Traceback" not in res.output


def test_server_error_text_is_shown_literally(proxy, live, tmp_path):
    """A server's error message is untrusted text: printed as is, one line, never as terminal markup."""
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    proxy.reject_posts_with = "bad [/bold] input [link=http://x]y[/link]"
    res = CliRunner().invoke(app, ["run", "holistic-generation", "--backend", "openai", "--base-url", proxy.url,
                                   "-m", str(live.model_dir), "--sample", "4", "--axes", "ability",
                                   "-o", str(tmp_path / "run"), "--no-cache"])
    assert res.exit_code == 2, res.output
    assert "HTTP 400: bad [/bold] input [link=http://x]y[/link]" in " ".join(res.output.split())
    assert "Traceback" not in res.output


def test_server_killed_mid_run_then_resumed(live, tmp_path, style_encoder):
    """A server dying mid-run: clear error naming the URL, run marked failed; after a restart
    on the same URL the same command resumes from the cache."""
    from biaslens.api import run

    cfg = dict(suite="holistic-generation", sample=4, axes=["ability"], templates=["I love {plural_noun_phrase}."],
               out=tmp_path / "run", cache_dir=tmp_path / "cache",
               model={"name": str(live.model_dir), "backend": "openai", "base_url": live.url, "batch_size": 2},
               generation={"max_new_tokens": 4, "no_repeat_ngram_size": 0, "n_permutations": 0, "n_bootstrap": 0})
    backend = _backend(live.url, live.model_dir, max_concurrency=1, max_retries=1)
    real = backend.generate_batch
    calls = []

    def generate_then_kill(prompts, params, seeds):
        out = real(prompts, params, seeds)
        calls.append(len(prompts))
        if len(calls) == 2:
            live.kill()  # the real server process dies between batches
        return out

    backend.generate_batch = generate_then_kill
    try:
        with pytest.raises(ModelError) as e:
            run(cfg, backend=backend)
    finally:
        backend.close()
    assert live.url in str(e.value) and "connection failed" in str(e.value)
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["status"] == "failed" and live.url in json.dumps(record)
    assert record["model"]["requests"]["retry_reasons"] == {"connection": 1}  # the retry is on record
    live.start()
    backend = _backend(live.url, live.model_dir)
    try:
        res = run(cfg, backend=backend)
    finally:
        backend.close()
    record = json.loads((res.out / "run.json").read_text())
    assert record["status"] == "complete"
    assert record["generation"]["cache_hits"] == sum(calls) == 4
    assert record["generation"]["computed"] == record["generation"]["n_responses"] - 4


# -- the API key -----------------------------------------------------------------------------

def test_key_is_sent_but_never_stored_logged_or_shown(proxy, live, tmp_path, monkeypatch, caplog, style_encoder):
    """End to end through the CLI (`biaslens run holistic-generation --backend openai`) with a
    sentinel key: the server receives it; run folder, cache, logs, output and errors never hold it."""
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    monkeypatch.setenv("BIASLENS_TEST_API_KEY", SENTINEL)
    out, cache = tmp_path / "run", tmp_path / "cache"
    with caplog.at_level(logging.DEBUG):
        res = CliRunner().invoke(app, [
            "run", "holistic-generation", "--backend", "openai", "--base-url", proxy.url,
            "--api-key-env", "BIASLENS_TEST_API_KEY", "-m", str(live.model_dir), "--sample", "4",
            "--axes", "ability", "--templates", "I love {plural_noun_phrase}.", "--max-new-tokens", "4",
            "--max-concurrency", "2", "--n-permutations", "0", "-o", str(out), "--cache-dir", str(cache)])
        assert res.exit_code == 0, res.output
        record = json.loads((out / "run.json").read_text())
        assert record["status"] == "complete" and record["model"]["backend"] == "openai"
        assert record["model"]["weights_hash"].startswith("served:")
        import pandas as pd

        responses = pd.read_parquet(out / "responses.parquet")
        assert len(responses) == 6 and responses["response"].str.len().gt(0).all()
        assert f"Bearer {SENTINEL}" in proxy.seen_auth  # the key did reach the server
        # a server quoting the Authorization header back in its error
        backend = load_openai(str(live.model_dir), base_url=proxy.url, api_key_env="BIASLENS_TEST_API_KEY")
        proxy.echo_auth_next = 1
        with pytest.raises(ModelError) as e:
            generate_texts(backend, ["Hello there"], GREEDY)
        texts = [str(e.value), repr(backend), repr(vars(backend)), repr(backend.info),
                 json.dumps(backend.info.cache_identity())]
        backend.close()
    assert "bad credentials: Bearer ***" in str(e.value)
    texts += [res.output, caplog.text]
    for folder in (out, cache):
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert files
        texts += [p.read_bytes().decode("latin-1") for p in files]
    leaks = [t[:200] for t in texts if SENTINEL in t]
    assert not leaks
