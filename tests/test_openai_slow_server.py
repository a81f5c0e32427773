"""The openai backend against a slow server that answers one request at a time (issue 34, part 2).

A fault-injecting OpenAI-compatible server on 127.0.0.1 (no model: a fixed completion) holds a
lock while it "works", so requests queue, and a request the client abandoned after its timeout is
still worked on, as ``transformers serve`` does on a busy machine. Eight requests in flight with a
timeout shorter than eight service times is the case of the issue: without backing off, each
timed-out request is sent again behind the abandoned copies and the run fails; with the in-flight
limit halved on timeouts (AIMD) the same run completes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("httpx", reason="the openai backend needs httpx (pip install 'biaslens[openai]')")

from biaslens.models.base import GenerationParams  # noqa: E402
from biaslens.models.openai_compat import _InFlight, load_openai  # noqa: E402


class SerialServer:
    """/v1/models at once; /v1/completions one at a time, ``service`` seconds each (also for
    requests whose client has gone). ``status``: answer this HTTP status instead (e.g. 503)."""

    def __init__(self, service: float, status: int | None = None):
        self.service, self.status = service, status
        self.lock = threading.Lock()
        self.served = 0
        self.max_waiting = 0
        self._waiting = 0
        self._count = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout): the work was done anyway
                    pass

            def do_GET(self):
                self._send(200, {"data": [{"id": "slow-model", "owned_by": "test"}]})

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with outer._count:
                    outer._waiting += 1
                    outer.max_waiting = max(outer.max_waiting, outer._waiting)
                with outer.lock:  # one at a time, as a server with one worker
                    time.sleep(outer.service)
                    with outer._count:
                        outer._waiting -= 1
                        outer.served += 1
                if outer.status:
                    self._send(outer.status, {"error": {"message": "overloaded"}})
                else:
                    self._send(200, {"choices": [{"text": " and that is all.", "index": 0}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


PARAMS = GenerationParams(max_new_tokens=8)


def _backend(url: str, **kw):
    opts = {"max_concurrency": 8, "request_timeout": 1.0, "max_retries": 6} | kw
    return load_openai("slow-model", base_url=url, score_first_token=False, **opts)


def test_in_flight_limit_halves_once_per_burst_and_grows_back():
    f = _InFlight(8, "http://x/v1", 1.0)
    epochs = [f.acquire() for _ in range(8)]
    for e in epochs:  # eight timeouts of one burst: one halving, not eight
        f.release(e, "timeout")
    assert f.limit == 4 and f.decreases == 1
    e = f.acquire()
    f.release(e, "overloaded")
    assert f.limit == 2 and f.lowest == 2
    for _ in range(2 + 3 + 4):  # a window of `limit` answers in time adds one: 2 -> 3 -> 4 -> 5
        f.release(f.acquire(), "ok")
    assert f.limit == 5
    for _ in range(100):
        f.release(f.acquire(), "ok")
    assert f.limit == 8  # never above the configured ceiling
    f.release(f.acquire(), "other")  # an error that says nothing about load
    assert f.limit == 8


def test_acquire_waits_for_a_free_slot():
    f = _InFlight(2, "http://x/v1", 1.0)
    a, b = f.acquire(), f.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(f.acquire()))
    t.start()
    time.sleep(0.2)
    assert not got  # the third waits
    f.release(a, "ok")
    t.join(2)
    assert got
    f.release(b, "ok")
    f.release(got[0], "ok")


def test_a_slow_serial_server_completes_with_fewer_requests_in_flight(caplog):
    """24 completions, 0.25 s each, one at a time, 1 s timeout, 8 in flight at first: done."""
    caplog.set_level(logging.WARNING, logger="biaslens")
    with SerialServer(0.25) as server:
        backend = _backend(server.url)
        try:
            t0 = time.monotonic()
            out = backend.generate_batch([f"prompt {i}" for i in range(24)], PARAMS, list(range(24)))
            took = time.monotonic() - t0
        finally:
            backend.close()
    assert out == ["and that is all."] * 24
    stats = backend.stats
    assert stats["failed"] == 0
    assert stats["in_flight_lowest"] <= 4, stats  # 4 waiting 0.25 s each fit in the 1 s timeout
    assert stats["retry_reasons"].get("timeout", 0) >= 1  # it did time out at 8, and backed off
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("did not answer within the request timeout (1 s) with 8 requests in flight" in m
               and "now sends at most 4 at a time" in m for m in said), said
    assert took < 60


def test_without_backing_off_the_same_server_fails(monkeypatch):
    """The control: a fixed limit of 8 against the same server gives up (the issue's failed run)."""
    monkeypatch.setattr(_InFlight, "release", lambda self, epoch, outcome: _fixed_release(self))
    with SerialServer(0.25) as server:
        backend = _backend(server.url, max_retries=2)
        try:
            with pytest.raises(Exception) as err:
                backend.generate_batch([f"prompt {i}" for i in range(24)], PARAMS, list(range(24)))
        finally:
            backend.close()
    assert getattr(err.value, "kind", None) == "server_timeout", err.value
    assert "raise --request-timeout (now 1 s)" in str(err.value)


def _fixed_release(f: _InFlight) -> None:
    with f._cond:
        f._busy -= 1
        f._cond.notify_all()


def test_503_answers_lower_the_limit_too(caplog):
    caplog.set_level(logging.WARNING, logger="biaslens")
    with SerialServer(0.01, status=503) as server:
        backend = _backend(server.url, max_retries=1)
        backend.backoff_base = 0.01
        try:
            with pytest.raises(Exception) as err:
                backend.generate_batch(["a", "b", "c", "d"], PARAMS, [0, 1, 2, 3])
        finally:
            backend.close()
    assert getattr(err.value, "kind", None) == "server_overloaded"
    assert backend.stats["in_flight_lowest"] < 8
    assert any("answered that it is overloaded (429/503)" in r.getMessage() for r in caplog.records)


def test_a_run_against_a_slow_server_completes_and_a_failed_one_records_the_message(tmp_path, style_encoder):
    """Through `biaslens.run`: holistic-generation (40 prompts) against the serial server completes;
    against a server slower than the timeout even alone, run.json says the user's message and
    the kind of failure, with no private class name."""
    from biaslens.api import run

    config = {"suite": "holistic-generation", "sample": 40, "cache_dir": str(tmp_path / "cache"),
              "axes": ["age", "gender_and_sex", "race_ethnicity", "religion", "sexual_orientation"],
              "generation": {"max_new_tokens": 8, "n_permutations": 20, "no_repeat_ngram_size": 0}}
    from rich.console import Console

    quiet = Console(stderr=True, quiet=True)
    with SerialServer(0.12) as server:
        model = {"name": "slow-model", "backend": "openai", "base_url": server.url, "request_timeout": 0.5,
                 "max_concurrency": 8, "score_first_token": False}
        res = run(config | {"model": model, "out": str(tmp_path / "ok")}, console=quiet)
        record = json.loads((res.out / "run.json").read_text())
        assert record["status"] == "complete" and record["error"] is None
        assert server.max_waiting >= 5  # it did queue eight at first
    requests = record["model"]["requests"]
    assert requests["failed"] == 0 and requests["in_flight_lowest"] < 8, requests
    # what was done is said (on standard error from the command line; here in the run's log)
    assert "it is slower than that allows, so biaslens now sends at most 4 at a time" in (res.out / "run.log").read_text()
    with SerialServer(2.0) as server:
        model = {"name": "slow-model", "backend": "openai", "base_url": server.url, "request_timeout": 0.3,
                 "max_concurrency": 2, "max_retries": 1, "score_first_token": False}
        with pytest.raises(Exception):
            run(config | {"model": model, "out": str(tmp_path / "failed")}, console=quiet)
    record = json.loads((tmp_path / "failed" / "run.json").read_text())
    assert record["status"] == "failed" and record["error_kind"] == "server_timeout", record
    assert record["error"].startswith("the OpenAI-compatible server at http://127.0.0.1:"), record["error"]
    assert "_RetriesExhausted" not in record["error"] and "raise --request-timeout" in record["error"]
