"""The on-disk cache of model calls.

One SQLite file in WAL mode: many readers and one writer at a time, with the
database's own locking, so two runs can share a cache without corrupting it.
Each record carries a checksum of its value; a damaged record is reported,
deleted and recomputed, never used.

Keys hash everything that changes a model's answer: the model identity
(backend, name, weights hash, dtype, start token), the call kind, the text and
the call's parameters (lm-evaluation-harness's cache forgot the model; we do not).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    checksum TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def make_key(identity: dict[str, Any], kind: str, text: str, params: dict[str, Any] | None = None) -> str:
    """A stable sha256 key of (model identity, call kind, text, parameters)."""
    payload = json.dumps({"model": identity, "kind": kind, "text": text, "params": params or {}},
                         sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _checksum(value: bytes) -> str:
    return hashlib.blake2b(value, digest_size=16).hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    writes: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "corrupt": self.corrupt, "writes": self.writes}


class CallCache:
    """Persistent key -> bytes store for model calls.

    Args:
        path: SQLite file; None keeps everything in memory (no resume).
        timeout: seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | Path | None, timeout: float = 120.0):
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path) if self.path else ":memory:", timeout=timeout,
                                     isolation_level=None, check_same_thread=False)
        if self.path is not None:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        self._retry(lambda: self._conn.execute(_SCHEMA))
        self.stats = CacheStats()

    def _retry(self, fn, attempts: int = 20):
        # busy_timeout covers most contention; a short retry loop covers the
        # rest (e.g. WAL checkpoints racing a new writer).
        for i in range(attempts):
            try:
                return fn()
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                if i == attempts - 1:
                    raise
                time.sleep(0.05 * (i + 1))

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Values for the keys present and intact; damaged records are dropped and counted."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, bytes] = {}
        bad: list[str] = []
        for start in range(0, len(keys), 900):  # SQLite's host-parameter limit
            chunk = keys[start : start + 900]
            q = f"SELECT key, value, checksum FROM calls WHERE key IN ({','.join('?' * len(chunk))})"
            for key, value, checksum in self._retry(lambda: self._conn.execute(q, chunk).fetchall()):  # noqa: B023 - called at once
                if _checksum(value) == checksum:
                    found[key] = value
                else:
                    bad.append(key)
        if bad:
            log.warning("cache %s: %d damaged record(s) found; they will be recomputed", self.path, len(bad))
            self.stats.corrupt += len(bad)
            self.delete(bad)
        self.stats.hits += len(found)
        self.stats.misses += len(keys) - len(found)
        return found

    def put_many(self, items: dict[str, bytes]) -> None:
        """Write a batch in one transaction: either all of it lands or none."""
        if not items:
            return
        now = time.time()
        rows = [(k, v, _checksum(v), now) for k, v in items.items()]

        def write():
            with self._conn:  # BEGIN ... COMMIT, rolled back on error
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?)", rows)

        try:
            self._retry(write)
        except (sqlite3.OperationalError, OSError) as e:
            from biaslens.paths import no_space_error

            full = no_space_error(e, self.path or ":memory:", "writing the call cache")
            if full is not None:
                raise full from e
            raise
        self.stats.writes += len(rows)

    def delete(self, keys: list[str]) -> None:
        def run():
            self._conn.executemany("DELETE FROM calls WHERE key = ?", [(k,) for k in keys])

        self._retry(run)

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def clear(self) -> None:
        self._retry(lambda: self._conn.execute("DELETE FROM calls"))

    def close(self) -> None:
        self._conn.close()
