"""The call cache: keys, integrity checks, recomputation of damaged records, and two
processes writing one SQLite file at once."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import numpy as np

from biaslens.engine.cache import CallCache, _checksum, make_key
from biaslens.engine.scoring import ScoringStats, score_texts
from biaslens.models.base import TokenScores
from biaslens.models.fake import FakeBackend

IDENTITY = {"backend": "hf", "name": "m", "kind": "causal", "weights_hash": "sha256:ab", "dtype": "float32",
            "start_token": "<|endoftext|>"}


def test_put_get_round_trip(call_cache_dir):
    cache = CallCache(call_cache_dir / "calls.sqlite")
    items = {make_key(IDENTITY, "score", f"text {i}"): bytes([i]) * (i + 1) for i in range(50)}
    cache.put_many(items)
    assert len(cache) == 50
    got = cache.get_many(list(items) + ["missing-key"])
    assert got == items
    assert cache.stats.hits == 50 and cache.stats.misses == 1 and cache.stats.writes == 50
    cache.close()
    reopened = CallCache(call_cache_dir / "calls.sqlite")  # persisted
    assert reopened.get_many(items) == items
    reopened.clear()
    assert len(reopened) == 0
    reopened.close()


def test_in_memory_cache():
    cache = CallCache(None)
    cache.put_many({"k": b"v"})
    assert cache.get_many(["k"]) == {"k": b"v"}


def test_key_depends_on_everything_that_changes_the_answer():
    base = make_key(IDENTITY, "score", "I love my grandmother.")
    assert base == make_key(dict(reversed(list(IDENTITY.items()))), "score", "I love my grandmother.")  # order-free
    assert len(base) == 64
    variants = [
        make_key({**IDENTITY, "name": "other"}, "score", "I love my grandmother."),
        make_key({**IDENTITY, "weights_hash": "sha256:cd"}, "score", "I love my grandmother."),
        make_key({**IDENTITY, "dtype": "bfloat16"}, "score", "I love my grandmother."),
        make_key({**IDENTITY, "start_token": None}, "score", "I love my grandmother."),
        make_key({**IDENTITY, "key_score_first_token": False}, "score", "I love my grandmother."),
        make_key(IDENTITY, "generate", "I love my grandmother."),
        make_key(IDENTITY, "score", "I love my grandmother"),
        make_key(IDENTITY, "score", "I love my grandmother. "),
        make_key(IDENTITY, "score", "I love my grandmother.", {"max_new_tokens": 5}),
    ]
    assert len({base, *variants}) == len(variants) + 1
    assert make_key(IDENTITY, "score", "x", {"a": 1, "b": 2}) == make_key(IDENTITY, "score", "x", {"b": 2, "a": 1})
    assert make_key(IDENTITY, "score", "x", {}) == make_key(IDENTITY, "score", "x", None)


def test_model_info_identity_ignores_device_and_batch():
    from biaslens.models.base import ModelInfo

    a = ModelInfo("hf", "m", "causal", "h", "float32", "<s>", extra={"device": "cpu", "key_x": 1})
    b = ModelInfo("hf", "m", "causal", "h", "float32", "<s>", extra={"device": "cuda", "key_x": 1})
    c = ModelInfo("hf", "m", "causal", "h", "float32", "<s>", extra={"device": "cpu", "key_x": 2})
    assert a.cache_identity() == b.cache_identity() != c.cache_identity()


def test_corrupt_record_is_detected_deleted_and_recomputed(call_cache_dir):
    path = call_cache_dir / "calls.sqlite"
    texts = [f"I am a person number {i} ." for i in range(20)]
    backend = FakeBackend()
    cache = CallCache(path)
    first = score_texts(backend, texts, cache=cache)
    assert backend.scored_texts == 20 and len(cache) == 20
    cache.close()

    victim = make_key(backend.info.cache_identity(), "score", texts[3])
    raw = sqlite3.connect(path)
    (value,) = raw.execute("SELECT value FROM calls WHERE key = ?", (victim,)).fetchone()
    damaged = bytearray(value)
    damaged[12] ^= 0xFF  # flip bits inside a log-prob; the stored checksum no longer matches
    raw.execute("UPDATE calls SET value = ? WHERE key = ?", (bytes(damaged), victim))
    raw.commit()
    raw.close()

    cache = CallCache(path)
    assert victim not in cache.get_many([victim])  # never returned
    assert cache.stats.corrupt == 1
    assert cache._conn.execute("SELECT COUNT(*) FROM calls WHERE key = ?", (victim,)).fetchone()[0] == 0  # deleted
    cache.close()

    # corrupt it again and let score_texts find it: recomputed, counted, the rest from the cache
    raw = sqlite3.connect(path)
    good = TokenScores(np.array([-1.0]), np.array([[0, 1]], dtype=np.int32)).to_bytes()
    raw.execute("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, 0)", (victim, good, "0" * 32))
    raw.commit()
    raw.close()
    cache = CallCache(path)
    backend2 = FakeBackend()
    stats = ScoringStats()
    again = score_texts(backend2, texts, cache=cache, stats=stats)
    assert backend2.scored_texts == 1  # only the damaged one
    assert stats.corrupt_records == 1 and stats.cache_hits == 19 and stats.computed == 1
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.logprobs, b.logprobs)
    assert cache.get_many([victim])[victim] == first[3].to_bytes()  # repaired on disk
    cache.close()


def test_undecodable_record_with_valid_checksum_is_recomputed(call_cache_dir):
    """A record whose checksum matches but whose bytes do not decode is never used either."""
    path = call_cache_dir / "calls.sqlite"
    backend = FakeBackend()
    texts = ["a b c", "d e f"]
    key = make_key(backend.info.cache_identity(), "score", texts[0])
    cache = CallCache(path)
    cache.put_many({key: b"\x01\x00"})
    stats = ScoringStats()
    out = score_texts(backend, texts, cache=cache, stats=stats)
    assert stats.corrupt_records == 1 and stats.computed == 2
    assert out[0].n_tokens == 3
    assert TokenScores.from_bytes(cache.get_many([key])[key]).n_tokens == 3
    cache.close()


def test_scoring_uses_cache_and_keeps_order(call_cache_dir):
    backend = FakeBackend()
    cache = CallCache(call_cache_dir / "calls.sqlite")
    texts = ["b b", "a", "c c c", "a", "b b"]
    stats = ScoringStats()
    out = score_texts(backend, texts, cache=cache, batch_size=2, stats=stats)
    assert [s.n_tokens for s in out] == [2, 1, 3, 1, 2]
    assert stats.n_unique == 3 and stats.computed == 3 and stats.batches == 2
    stats2 = ScoringStats()
    out2 = score_texts(FakeBackend(), list(reversed(texts)), cache=cache, stats=stats2)
    assert stats2.computed == 0 and stats2.cache_hits == 3
    assert [s.n_tokens for s in out2] == [2, 1, 3, 1, 2][::-1]
    # another model identity never sees these records
    stats3 = ScoringStats()
    score_texts(FakeBackend(seed=1), texts, cache=cache, stats=stats3)
    assert stats3.cache_hits == 0 and stats3.computed == 3
    cache.close()


def _writer(path: str, worker: int, n: int, barrier, errors, spans) -> None:
    import time

    try:
        cache = CallCache(path, timeout=60)
        barrier.wait(timeout=60)
        t0 = time.time()
        for i in range(n):  # one transaction per key: as much lock contention as possible
            key = f"w{worker}-{i:05d}"
            cache.put_many({key: f"value {worker} {i} ".encode() * (1 + i % 7)})
        spans.put((t0, time.time()))
        cache.close()
    except BaseException as e:  # reported to the parent, which fails the test
        errors.put(f"worker {worker}: {type(e).__name__}: {e}")
        raise


def test_two_processes_write_one_cache_at_once(call_cache_dir):
    path = call_cache_dir / "calls.sqlite"
    CallCache(path).close()  # create the schema first, as a run would
    ctx = mp.get_context("spawn")
    barrier, errors, spans = ctx.Barrier(2), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(path), w, 2000, barrier, errors, spans)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert all(p.exitcode == 0 for p in procs), [errors.get() for _ in range(errors.qsize())]
    (a0, a1), (b0, b1) = spans.get(timeout=5), spans.get(timeout=5)
    assert max(a0, b0) < min(a1, b1)  # the two writers really overlapped
    cache = CallCache(path)
    assert len(cache) == 4000
    rows = cache._conn.execute("SELECT key, value, checksum FROM calls").fetchall()
    assert all(_checksum(v) == c for _, v, c in rows)
    for key, value, _ in rows:
        w, i = key[1:].split("-")
        assert value == f"value {w} {int(i)} ".encode() * (1 + int(i) % 7)
    assert cache._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    cache.close()


def test_many_keys_at_once_equal_one_by_one():
    from biaslens.engine.cache import make_keys

    identity = {**IDENTITY, "key_score_first_token": True, "é": None}
    texts = ["a", "", 'quotes " and \\ backslash', "line\nbreak\ttab\x00nul \u2028", "naïve 💡", "a"]
    for kind, params in (("score", None), ("generate", {"max_new_tokens": 8, "sample_index": 2, "z": [1, "x"]})):
        keys = make_keys(identity, kind, texts, params)
        assert list(keys) == list(dict.fromkeys(texts))
        assert all(keys[t] == make_key(identity, kind, t, params) for t in texts)
