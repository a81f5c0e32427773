"""A model behind an OpenAI-compatible HTTP server (vLLM, transformers serve, OpenAI, ...).

Generation goes through ``/completions`` or ``/chat/completions``; scoring through
``/completions`` with ``echo=true`` and ``logprobs`` (the prompt's own log-probabilities),
or vLLM's ``prompt_logprobs`` field. A server that returns neither is refused for
scoring with a clear message; generation still works.

Requests fan out over a thread pool (``max_concurrency``), share one rate limiter
(``requests_per_second``) and retry 429, 5xx, connection errors and timeouts with
exponential backoff and jitter, honouring ``Retry-After``. The number of requests in flight
adapts to the server (:class:`_InFlight`, additive increase, multiplicative decrease): a
timeout, 429 or 503 halves it, each window of answers that came back in time grows it by one
again up to ``max_concurrency``, and the first decrease says on standard error that the server
is slower than the timeout and what was done. A server that answers one request at a time
therefore gets about one at a time, instead of eight of which seven time out and are sent again
while it still works on the abandoned copies.

The HTTP client is httpx rather than the ``openai`` SDK: the SDK retries on its own
(we need one retry policy, counted and logged), validates responses into its own
models (vLLM's ``prompt_logprobs`` is not in them), and the request body must be
exactly what we send (transformers serve answers 422 to any field it does not know).

The API key is read from the environment variable named by ``api_key_env`` at load
time, kept in a private attribute, sent only as the Authorization header and scrubbed
from every error message; it never enters ModelInfo, the cache identity, logs or reprs.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import random
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from biaslens.models.base import Backend, ModelError, ModelInfo, TokenScores

log = logging.getLogger(__name__)

#: statuses worth retrying: rate limited, server overloaded or restarting
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
#: listing fields that identify the served model (``created`` and vLLM's permission ids change per restart)
_LISTING_FIELDS = ("id", "owned_by", "root", "parent", "max_model_len")


class _ServerStatusError(ModelError):
    """A non-retryable HTTP error answer (4xx); ``status`` lets the scoring probe tell them apart."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class _RetriesExhausted(ModelError):
    """Every attempt failed; ``status`` is the last HTTP status (None: connection error or timeout);
    ``kind`` says which (``server_timeout``, ``server_unreachable``, ``server_overloaded``, ``server_error``)."""

    def __init__(self, message: str, status: int | None, reason: str | int | None = None):
        super().__init__(message)
        self.status = status
        self.kind = ("server_timeout" if reason == "timeout" else "server_unreachable" if reason == "connection"
                     else "server_overloaded" if status in _OVERLOAD_STATUS else "server_error")


#: answers that mean "too much at once": fewer requests in flight, not only a later retry
_OVERLOAD_STATUS = {429, 503}


class _InFlight:
    """How many requests may be in flight, adapted to the server (AIMD, as TCP's congestion window).

    A timeout or an overload answer (429, 503) halves the limit, once per burst: requests sent
    before the last decrease do not decrease it again. Every ``limit`` answers in time add one, up
    to ``ceiling``. Each decrease is logged at warning level (standard error on the command line),
    saying what happened and the new limit."""

    def __init__(self, ceiling: int, where: str, timeout: float):
        self.ceiling = self.limit = self.lowest = ceiling
        self.where, self.timeout = where, timeout
        self.decreases = 0
        self._busy = 0
        self._epoch = 0  # bumped at each decrease
        self._good = 0
        self._cond = threading.Condition()

    def acquire(self) -> int:
        """Wait for a free slot; the epoch the request starts in."""
        with self._cond:
            while self._busy >= self.limit:
                self._cond.wait()
            self._busy += 1
            return self._epoch

    def release(self, epoch: int, outcome: str) -> None:
        """``outcome``: "ok", "timeout", "overloaded" or "other" (an error that says nothing about load)."""
        with self._cond:
            self._busy -= 1
            if outcome == "ok":
                self._good += 1
                if self._good >= self.limit and self.limit < self.ceiling:
                    self.limit += 1
                    self._good = 0
            elif outcome in ("timeout", "overloaded") and epoch == self._epoch:
                before = self.limit
                self.limit = max(1, self.limit // 2)
                self.lowest = min(self.lowest, self.limit)
                self._epoch += 1
                self._good = 0
                self.decreases += 1
                self._say(outcome, before)
            self._cond.notify_all()

    def _say(self, outcome: str, before: int) -> None:
        what = (f"did not answer within the request timeout ({self.timeout:g} s)" if outcome == "timeout"
                else "answered that it is overloaded (429/503)")
        if before > self.limit:
            log.warning("openai backend: the server at %s %s with %d requests in flight: it is slower than that "
                        "allows, so biaslens now sends at most %d at a time (and more again as answers come back in "
                        "time); the request is retried", self.where, what, before, self.limit)
        else:
            log.warning("openai backend: the server at %s %s even with one request in flight; the request is "
                        "retried after a pause. If this goes on, raise --request-timeout (now %g s) or use a faster "
                        "server", self.where, what, self.timeout)


class _Secret:
    """Holds the API key; its repr never shows it (nor does ``vars()`` of the backend)."""

    __slots__ = ("value",)

    def __init__(self, value: str | None):
        self.value = value or None

    def __repr__(self) -> str:
        return "<secret>" if self.value else "<no key>"


class _RateLimiter:
    """At most ``rate`` request starts per second across all threads (evenly spaced)."""

    def __init__(self, rate: float | None):
        self.interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self.interval
        if slot > now:
            time.sleep(slot - now)


def _retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta seconds or an HTTP date); None when absent/unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time()) if when is not None else None


def _normalise_base_url(base_url: str | None) -> str:
    if not base_url:
        raise ModelError("--backend openai needs --base-url (the server's API root, e.g. http://127.0.0.1:8000/v1)")
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ModelError(f"--base-url {_public_url(base_url)!r} is not an http(s) URL "
                         "(expected e.g. http://127.0.0.1:8000/v1)")
    path = parts.path.rstrip("/") or "/v1"  # a bare host:port means the usual /v1 root
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _public_url(url: str) -> str:
    """The URL without user:password and query string: what may be logged and recorded."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class OpenAIBackend(Backend):
    """Scores and generates through an OpenAI-compatible server (see the module docstring)."""

    #: seconds of the first retry's backoff; doubled per attempt, capped by ``backoff_cap``
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    #: longest Retry-After honoured (a server asking for more is waited on this long, then retried)
    retry_after_cap: float = 120.0

    def __init__(self, *, name: str, base_url: str, api_key: str | None, api: str, max_concurrency: int,
                 requests_per_second: float | None, request_timeout: float, max_retries: int,
                 start_token: str | None, score_first_token: bool, tokenizer=None):
        import httpx

        self.name = name
        parts = urlsplit(base_url)
        # a query string (e.g. an api-version) goes after each endpoint's path
        self.base_url = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        self._query = _Secret(parts.query)  # may hold a credential: never shown
        self.public_url = _public_url(base_url)
        self._key = _Secret(api_key)
        self.api = api
        self.max_concurrency = max_concurrency
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.score_first_token = score_first_token
        self.tokenizer = tokenizer  # local copy of the served model's tokenizer, for token counts only
        self.start_text = start_token if score_first_token else None
        self.default_batch_size = max(16, 4 * max_concurrency)  # keeps every worker busy between cache commits
        self._limiter = _RateLimiter(requests_per_second)
        self._in_flight = _InFlight(max_concurrency, self.public_url, request_timeout)
        self._client = httpx.Client(timeout=httpx.Timeout(request_timeout, connect=min(10.0, request_timeout)),
                                    limits=httpx.Limits(max_connections=max_concurrency))
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="biaslens-openai")
        self._stats_lock = threading.Lock()
        self.stats: dict[str, Any] = {"requests": 0, "retries": 0, "retry_reasons": Counter(), "failed": 0,
                                      "in_flight_limit": max_concurrency, "in_flight_lowest": max_concurrency}
        self._score_mode: str | None = None  # "echo" | "prompt_logprobs" once a probe succeeded
        self._probe_lock = threading.Lock()
        self._warned: set[str] = set()
        self._tokenize_ok: bool | None = None  # does the server answer vLLM's /tokenize?
        self.info = ModelInfo(backend="openai", name=name, kind="causal", weights_hash="", dtype="server",
                              start_token=self.start_text,
                              extra={"base_url": self.public_url, "api": api, "key_score_first_token": score_first_token,
                                     # the live counters: run.json, written when the run ends, shows its totals
                                     "requests": self.stats})

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIBackend(name={self.name!r}, base_url={self.public_url!r}, api={self.api!r})"

    # -- HTTP ------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key.value}"} if self._key.value else {}

    def _redact(self, text: str) -> str:
        """Scrub the key from text that may echo it (server error bodies, exception messages)."""
        text = str(text)
        for secret in (self._key.value, self._query.value):
            if secret:
                text = text.replace(secret, "***")
        return text

    def _count(self, field: str, reason: str | None = None) -> None:
        with self._stats_lock:
            self.stats[field] += 1
            if reason:
                self.stats["retry_reasons"][reason] += 1

    def _request(self, method: str, path: str, body: dict | None = None, *, max_retries: int | None = None,
                 at_root: bool = False) -> dict:
        """One API call with retries; the decoded JSON answer, or ModelError naming the URL.
        ``at_root``: ``path`` is under the server root rather than the API root (vLLM's /tokenize)."""
        import httpx

        base, public = self.base_url, self.public_url
        if at_root:
            base, public = (u[: -len("/v1")] if u.endswith("/v1") else u for u in (base, public))
        url = base + path + (f"?{self._query.value}" if self._query.value else "")
        where = public + path
        retries = self.max_retries if max_retries is None else max_retries
        last, status = "", None
        reason: str | int | None = None
        for attempt in range(retries + 1):
            epoch, load, resp = self._in_flight.acquire(), "other", None
            self._limiter.wait()  # after the slot: the rate limit spaces the sends themselves
            self._count("requests")
            wait_hint, status = None, None
            try:
                resp = self._client.request(method, url, json=body, headers=self._headers())
            except httpx.TimeoutException as e:
                reason, last, load = "timeout", f"no answer within {self.request_timeout:g} s ({type(e).__name__})", "timeout"
            except httpx.TransportError as e:
                reason, last = "connection", f"connection failed ({type(e).__name__}: {self._redact(e)[:160]})"
            else:
                load = "ok" if resp.status_code < 400 else "overloaded" if resp.status_code in _OVERLOAD_STATUS else "other"
            finally:
                self._in_flight.release(epoch, load)
                self._note_in_flight()
            if resp is not None:
                if resp.status_code < 400:
                    try:
                        data = resp.json()
                        if not isinstance(data, dict):
                            raise ValueError
                        return data
                    except ValueError:
                        raise ModelError(f"{where} answered HTTP {resp.status_code} with something that is not "
                                         "JSON: is --base-url the API root of an OpenAI-compatible server "
                                         "(usually ending in /v1)?") from None
                detail = self._error_detail(resp)
                last = f"HTTP {resp.status_code}{': ' + detail if detail else ''}"
                if resp.status_code not in _RETRY_STATUS:
                    self._count("failed")
                    raise _ServerStatusError(f"{where} refused the request: {last}", resp.status_code)
                reason = status = resp.status_code
                wait_hint = _retry_after_seconds(resp.headers.get("retry-after"))
            if attempt == retries:
                break
            delay = self._backoff(attempt, wait_hint)
            self._count("retries", str(reason))
            log.info("openai backend: %s from %s, retry %d/%d in %.2f s", reason, where, attempt + 1, retries, delay)
            time.sleep(delay)
        self._count("failed")
        advice = (f"; it is slower than the request timeout even with {self._in_flight.limit} request(s) in flight: "
                  f"raise --request-timeout (now {self.request_timeout:g} s)" if reason == "timeout" else "")
        raise _RetriesExhausted(f"the OpenAI-compatible server at {self.public_url} failed on {path} after "
                                f"{retries + 1} attempt(s): {last}{advice}", status, reason)

    def _note_in_flight(self) -> None:
        with self._stats_lock:  # run.json's request statistics: the limit now and the lowest it went
            self.stats["in_flight_limit"] = self._in_flight.limit
            self.stats["in_flight_lowest"] = self._in_flight.lowest

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:  # the server said when; a little jitter spreads the waiting workers
            return min(retry_after, self.retry_after_cap) * random.uniform(1.0, 1.1)
        step = min(self.backoff_cap, self.backoff_base * (2 ** attempt))
        return step / 2 + random.uniform(0, step / 2)  # "equal jitter": never zero, never in lockstep

    def _error_detail(self, resp) -> str:
        """A short, single-line, key-free excerpt of an error answer (server text is untrusted)."""
        try:
            data = resp.json()
            msg = data.get("detail") or data.get("error") or data.get("message") or data if isinstance(data, dict) else data
            if isinstance(msg, dict):
                msg = msg.get("message") or msg
            text = msg if isinstance(msg, str) else json.dumps(msg)
        except ValueError:
            text = resp.text
        return self._redact(" ".join(str(text).split()))[:300]

    def _fan_out(self, fn, items: list) -> list:
        """``fn`` over ``items`` on the worker pool, results in order; the first error cancels the rest."""
        if len(items) <= 1 or self.max_concurrency == 1:
            return [fn(x) for x in items]
        futures = [self._pool.submit(fn, x) for x in items]
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for f in futures:
            if f.done() and f.exception() is not None:
                for p in pending:
                    p.cancel()
                wait(pending)  # in-flight requests end before we report
                raise f.exception()
        return [f.result() for f in futures]

    def _log_retries(self, before: int) -> None:
        if self.stats["retries"] > before:
            log.info("openai backend: %d requests so far, %d retried (%s)", self.stats["requests"],
                     self.stats["retries"], dict(self.stats["retry_reasons"]))

    # -- identity ---------------------------------------------------------
    def describe_server(self) -> None:
        """Check the server answers and fill ``info.weights_hash`` from what it says it serves."""
        try:
            listing = self._request("GET", "/models", max_retries=1)
        except _ServerStatusError as e:
            if e.status == 404:
                raise ModelError(f"{self.public_url}/models does not exist: is --base-url the API root of an "
                                 "OpenAI-compatible server (usually ending in /v1)?") from None
            if e.status in (401, 403):
                raise ModelError(f"the server at {self.public_url} refused our credentials (HTTP {e.status}): "
                                 "check the API key environment variable (--api-key-env)") from None
            raise
        except _RetriesExhausted as e:
            if e.status is None:
                raise ModelError(f"cannot reach an OpenAI-compatible server at {self.public_url}: {e}. "
                                 "Is it running, and is --base-url right (e.g. http://127.0.0.1:8000/v1)?") from None
            log.warning("openai backend: %s/models failed (%s); identifying the model by URL and name only",
                        self.public_url, e)
            listing = {}
        entries = listing.get("data") if isinstance(listing, dict) else None
        entries = entries if isinstance(entries, list) else []
        entry = next((m for m in entries if isinstance(m, dict) and m.get("id") == self.name), None)
        served = {k: entry[k] for k in _LISTING_FIELDS if entry and k in entry}
        if entries and entry is None:
            ids = [str(m.get("id")) for m in entries[:10] if isinstance(m, dict)]
            log.warning("openai backend: %s does not list model %r (it lists %s)", self.public_url, self.name, ids)
        parts = urlsplit(self.public_url)
        ident = {"server": f"{parts.netloc}{parts.path}", "model": self.name, "served": served}
        digest = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:20]
        self.info.weights_hash = f"served:{digest}"
        self.info.extra["served_model"] = served or None

    # -- scoring -----------------------------------------------------------
    def _refusal(self, why: str) -> ModelError:
        return ModelError(
            f"the server at {self.public_url} does not return prompt log-probabilities for {self.name!r} ({why}), "
            "so biaslens cannot score with it. Scoring needs /completions with echo=true and logprobs, or vLLM's "
            "prompt_logprobs: serve the model with `vllm serve`, or run it locally with --backend hf (or vllm). "
            "Generation-only suites (holistic-generation, community, fairpair generation) work with this server.")

    def score_batch(self, texts: list[str]) -> list[TokenScores]:
        if self.score_first_token and not self.start_text:
            raise ModelError(f"cannot tell the document-start token of {self.name!r} (no local tokenizer): pass "
                             "--start-token with the model's document-boundary token (e.g. '<|endoftext|>'), "
                             "or --no-start-token for the reference mode")
        before = self.stats["retries"]
        out: list[TokenScores] = []
        if self._score_mode is None and texts:
            with self._probe_lock:  # the first text finds out which way this server scores
                if self._score_mode is None:
                    out.append(self._probe(texts[0]))
        out += self._fan_out(self._score_one, texts[len(out):])
        self._log_retries(before)
        return out

    def _probe(self, text: str) -> TokenScores:
        scores = self._score_echo(text)
        if scores is not None:
            self._score_mode = "echo"
            return scores
        try:
            scores = self._score_prompt_logprobs(text)
        except _ServerStatusError as e:  # e.g. 422 "Unexpected fields": the server does not know the field
            raise self._refusal(f"echo returned no logprobs; prompt_logprobs was refused: {e}") from None
        if scores is None:
            raise self._refusal("neither echo with logprobs nor prompt_logprobs returned any")
        self._score_mode = "prompt_logprobs"
        log.info("openai backend: scoring through vLLM's prompt_logprobs")
        return scores

    def _score_one(self, text: str) -> TokenScores:
        fn = self._score_echo if self._score_mode == "echo" else self._score_prompt_logprobs
        scores = fn(text)
        if scores is None:
            raise self._refusal("a scoring answer came back without them")
        return scores

    def _prefix(self) -> str:
        return self.start_text or ""

    def _score_body(self, prompt: str, **extra) -> dict:
        return {"model": self.name, "prompt": prompt, "max_tokens": 1, "temperature": 0, **extra}

    def _score_echo(self, text: str) -> TokenScores | None:
        prefix = self._prefix()
        prompt = prefix + text
        data = self._request("POST", "/completions", self._score_body(prompt, echo=True, logprobs=1))
        choice = (data.get("choices") or [{}])[0]
        lp = choice.get("logprobs") if isinstance(choice, dict) else None
        if not isinstance(lp, dict) or not lp.get("token_logprobs"):
            return None
        values = list(lp["token_logprobs"])
        tokens = [str(t) for t in (lp.get("tokens") or [])]
        offsets = [int(x) for x in (lp.get("text_offset") or [])]
        n = len(values)
        usage = (data.get("usage") or {}).get("prompt_tokens")
        if isinstance(usage, int) and 0 < usage <= n:
            n = usage  # the rest is the one generated token
        elif offsets:
            n = sum(1 for s in offsets if s < len(prompt))
        return self._to_scores(text, len(prefix), values[:n], _prompt_starts(prompt, tokens[:n], offsets[:n]))

    def _score_prompt_logprobs(self, text: str) -> TokenScores | None:
        prefix = self._prefix()
        prompt = prefix + text
        data = self._request("POST", "/completions", self._score_body(prompt, prompt_logprobs=0))
        choice = (data.get("choices") or [{}])[0]
        plp = choice.get("prompt_logprobs") if isinstance(choice, dict) else None
        if plp is None:
            plp = data.get("prompt_logprobs")
        if not isinstance(plp, list) or not plp:
            return None
        # vLLM gives {token_id: {logprob, decoded_token}} per position, no offsets: find each
        # decoded token in the prompt, left to right. The first position has no entry: it is
        # the start token, unless the next one is (then the first is a BOS of the server's)
        pieces = []
        for i, entry in enumerate(plp):
            tok = next(iter(entry.values()), None) if isinstance(entry, dict) else None
            if entry and (not isinstance(tok, dict) or "logprob" not in tok):
                raise ModelError(f"{self.public_url}: unreadable prompt_logprobs entry at position {i}")
            pieces.append(tok)
        second = str((pieces[1] or {}).get("decoded_token") or "") if len(pieces) > 1 else ""
        cursor = len(prefix) if prefix and second != prefix else 0
        values, starts = [], []
        for i, tok in enumerate(pieces):
            if tok is None:
                values.append(None)
                starts.append(0 if i == 0 else cursor)
                continue
            piece = str(tok.get("decoded_token") or "")
            found = prompt.find(piece, cursor) if piece else -1
            start = found if found >= 0 else cursor
            values.append(float(tok["logprob"]))
            starts.append(start)
            cursor = start + len(piece) if found >= 0 else cursor
        return self._to_scores(text, len(prefix), values, starts)

    def _to_scores(self, text: str, shift: int, values: list, starts: list[int]) -> TokenScores:
        """The text's own tokens (not the start token's, not a server-added BOS's) with their
        character spans in ``text``; ``starts`` are token starts in the prompt (prefix + text),
        negative for tokens the server put before it. The reference mode drops the first token."""
        if len(starts) != len(values):
            raise ModelError(f"{self.public_url}: {len(values)} prompt log-probabilities but {len(starts)} offsets")
        n_before = sum(1 for x in starts if x < shift)
        if shift and n_before > 2:  # BOS + start token at most: the server read the start text as plain text
            raise ModelError(f"the server split the start token {self.start_text!r} into {n_before} tokens: it is "
                             f"not a special token of {self.name!r}'s tokenizer. Pass --start-token with the model's "
                             "document-boundary token, or --no-start-token")
        lps, spans = [], []
        n = len(values)
        for i in range(n):
            if starts[i] < shift:
                continue  # the start token, or a BOS of the server's own
            start = min(starts[i] - shift, len(text))
            end = (starts[i + 1] - shift) if i + 1 < n else len(text)
            if values[i] is None:
                if lps:
                    raise ModelError(f"{self.public_url} returned no log-probability for prompt token {i}")
                continue  # the prompt's first token has no context: nothing to score
            lps.append(float(values[i]))
            spans.append((start, max(start, min(end, len(text)))))
        if not self.score_first_token and spans and spans[0][0] == 0:
            # the server scored the first token after a BOS of its own; the reference mode does not
            lps, spans = lps[1:], spans[1:]
        return TokenScores(np.asarray(lps, dtype=np.float64), np.asarray(spans, dtype=np.int32).reshape(-1, 2))

    def token_lengths(self, texts: list[str]) -> list[int]:
        """For ordering batches only: the local tokenizer's counts, else characters (no requests)."""
        if self.tokenizer is not None:
            return [len(ids) for ids in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]]
        return [len(t) for t in texts]

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Token counts from the local tokenizer, else from vLLM's /tokenize, else characters / 4."""
        if self.tokenizer is not None:
            return self.token_lengths(texts)
        if self._tokenize_ok is not False and texts:
            try:
                counts = self._fan_out(self._remote_count, list(texts))
                self._tokenize_ok = True
                return counts
            except ModelError as e:
                if self._tokenize_ok:  # it worked before: a real failure
                    raise
                self._tokenize_ok = False
                log.warning("openai backend: no local tokenizer for %r and the server has no /tokenize (%s): "
                            "token counts are estimated as characters / 4", self.name, e)
        return [max(1, round(len(t) / 4)) for t in texts]

    def _remote_count(self, text: str) -> int:
        # vLLM serves /tokenize next to /v1, at the server root
        data = self._request("POST", "/tokenize", {"model": self.name, "prompt": text, "add_special_tokens": False},
                             max_retries=0 if self._tokenize_ok is None else None, at_root=True)
        if not isinstance(data.get("count"), int):
            raise ModelError("the /tokenize answer has no count")
        return int(data["count"])

    # -- generation ----------------------------------------------------------
    def _use_chat(self, params) -> bool:
        return self.api == "chat" or params.chat is True

    def render_prompt(self, request, params) -> str:
        if self._use_chat(params):
            return json.dumps({"messages": request.chat_messages()}, ensure_ascii=False, sort_keys=True)
        # as the HF backend: a plain LM continues a document, started the way scoring starts it
        return self._prefix() + "\n".join((*request.context, request.prompt))

    def _sampling_fields(self, params, seed: int) -> dict:
        if params.num_beams > 1 and not params.do_sample:
            raise ModelError("the OpenAI API has no beam search: use greedy decoding (--num-beams 1) or --do-sample")
        if params.no_repeat_ngram_size and "ngram" not in self._warned:
            self._warned.add("ngram")
            log.warning("openai backend: no_repeat_ngram_size=%d is not part of the OpenAI API; the server "
                        "generates without n-gram blocking", params.no_repeat_ngram_size)
        body: dict[str, Any] = {"max_tokens": params.max_new_tokens}
        if params.do_sample:
            # 31 bits: some servers reject larger seeds
            body.update(temperature=params.temperature, top_p=params.top_p, seed=int(seed) & 0x7FFFFFFF)
            if params.top_k:
                body["top_k"] = params.top_k  # vLLM extension; sent only when asked for
        else:
            body["temperature"] = 0
        if params.min_new_tokens:
            body["min_tokens"] = params.min_new_tokens  # vLLM extension; sent only when asked for
        return body

    def generate_batch(self, prompts: list[str], params, seeds: list[int]) -> list[str]:
        chat = self._use_chat(params)
        before = self.stats["retries"]

        def one(row: tuple[str, int]) -> str:
            prompt, seed = row
            body = {"model": self.name, **self._sampling_fields(params, seed)}
            if chat:
                body["messages"] = json.loads(prompt)["messages"]
                data = self._request("POST", "/chat/completions", body)
                choice = (data.get("choices") or [{}])[0]
                text = ((choice.get("message") or {}).get("content") if isinstance(choice, dict) else None)
            else:
                body["prompt"] = prompt
                data = self._request("POST", "/completions", body)
                choice = (data.get("choices") or [{}])[0]
                text = choice.get("text") if isinstance(choice, dict) else None
            if text is None:
                raise ModelError(f"{self.public_url}: an answer without generated text ({'chat' if chat else 'completions'})")
            return str(text).strip()

        out = self._fan_out(one, list(zip(prompts, seeds)))
        self._log_retries(before)
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()


def _prompt_starts(prompt: str, tokens: list[str], offsets: list[int]) -> list[int]:
    """Start of each echoed token in ``prompt``. vLLM's ``text_offset`` adds up the decoded token
    strings from the first token on, a BOS it added included, so when the decoded tokens end with
    the prompt we align on that; otherwise (e.g. a character split over byte tokens) we take the
    server's offsets as they are, which only blurs the spans, never the log-probabilities."""
    if tokens:
        joined = "".join(tokens)
        if joined.endswith(prompt):
            extra = len(joined) - len(prompt)
            starts, pos = [], -extra
            for t in tokens:
                starts.append(pos)
                pos += len(t)
            return starts
    if offsets:
        return offsets
    raise ModelError("the server's echo answer has neither tokens nor text offsets to place them")


def _local_tokenizer(name: str):
    """The model's tokenizer when it is on this machine (a local folder, or the local HF cache)."""
    try:
        from transformers import AutoTokenizer

        if Path(name).is_dir():
            return AutoTokenizer.from_pretrained(name)
        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - any failure only means "not here"
        log.debug("openai backend: no local tokenizer for %r (%s)", name, type(e).__name__)
        return None


def load_openai(
    name: str,
    *,
    start_token: str | None = None,
    score_first_token: bool = True,
    base_url: str | None,
    api_key_env: str = "OPENAI_API_KEY",
    api: str = "completions",
    max_concurrency: int = 8,
    requests_per_second: float | None = None,
    request_timeout: float = 120.0,
    max_retries: int = 6,
) -> Backend:
    """Connect to an OpenAI-compatible server serving model ``name``.

    Args:
        name: the model id the server knows (``model`` in each request).
        start_token: text of the document-start token prepended when scoring; default: the one
            the HF backend would pick, when the model's tokenizer is available locally.
        score_first_token: False = reference mode (the first token is context only).
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key_env: environment variable holding the key; unset = no key (local servers).
        api: ``completions`` or ``chat``, for generation (scoring always uses completions).
        max_concurrency: requests in flight at once.
        requests_per_second: rate limit across all requests (None: unlimited).
        request_timeout: seconds to wait for one answer before retrying.
        max_retries: retries on 429, 5xx, connection errors and timeouts.
    """
    import httpx  # noqa: F401 - fail before any work; load_model names the extra that brings it
    if api not in ("completions", "chat"):
        raise ModelError(f"--api {api!r}: use completions or chat")
    if max_concurrency < 1 or max_retries < 0 or request_timeout <= 0:
        raise ModelError("--max-concurrency must be >= 1, max_retries >= 0 and request_timeout > 0")
    if requests_per_second is not None and requests_per_second <= 0:
        raise ModelError("--requests-per-second must be > 0")
    url = _normalise_base_url(base_url)
    query = urlsplit(base_url.strip()).query
    url = f"{url}?{query}" if query else url
    tokenizer = _local_tokenizer(name)
    chosen = None
    if score_first_token:
        from biaslens.models.tokenized import pick_start_token

        chosen = start_token if start_token is not None else (pick_start_token(tokenizer) if tokenizer else None)
    backend = OpenAIBackend(name=name, base_url=url, api_key=os.environ.get(api_key_env) or None, api=api,
                            max_concurrency=max_concurrency, requests_per_second=requests_per_second,
                            request_timeout=request_timeout, max_retries=max_retries, start_token=chosen,
                            score_first_token=score_first_token, tokenizer=tokenizer)
    try:
        backend.describe_server()
    except BaseException:
        backend.close()
        raise
    return backend
