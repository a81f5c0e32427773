"""The on-disk cache of model calls.

One SQLite file in WAL mode: many readers and one writer at a time, with the
database's own locking, so two runs can share a cache without corrupting it.
Each record carries a checksum of its value; a damaged record is reported,
deleted and recomputed, never used. A damaged file (SQLite's "database disk image is
malformed", a truncated file, a file that is not SQLite) is moved aside with a warning
naming both paths, and a new cache is started.

Keys hash everything that changes a model's answer: the model identity
(backend, name, weights hash, dtype, start token), the call kind, the text and
the call's parameters (lm-evaluation-harness's cache forgot the model; we do not).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biaslens.fileio import move_aside

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


def make_keys(identity: dict[str, Any], kind: str, texts: Iterable[str],
              params: dict[str, Any] | None = None) -> dict[str, str]:
    """:func:`make_key` of many texts with one model identity and call, as {text: key}.

    The same keys, faster: the payload's fixed part (everything but the text) is encoded
    once. json.dumps with sorted keys writes "kind", "model", "params", "text" in that order,
    so the text comes last.
    """
    head = json.dumps({"model": identity, "kind": kind, "params": params or {}, "text": ""},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    head = head[: -len('""}')]  # ends with "text": the text's JSON string goes there
    encode = json.JSONEncoder(ensure_ascii=False).encode
    sha = hashlib.sha256
    return {t: sha(f"{head}{encode(t)}}}".encode()).hexdigest() for t in texts}


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


#: what SQLite says of a damaged file (a torn page, a truncated file, a file that is not SQLite)
_DAMAGE = ("malformed", "not a database", "file is encrypted", "disk image", "corrupt")


def _is_damage(error: BaseException) -> bool:
    return isinstance(error, sqlite3.DatabaseError) and any(d in str(error).lower() for d in _DAMAGE)


def check_integrity(path: str | Path) -> list[str]:
    """SQLite's integrity check of a cache file, read-only: [] when intact, else its findings."""
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)  # as_uri: quotes "?", "#"
    except sqlite3.DatabaseError as e:
        return [str(e)]
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.DatabaseError as e:
        return [str(e)]
    finally:
        conn.close()
    return [] if rows == ["ok"] else rows


class CallCache:
    """Persistent key -> bytes store for model calls.

    A damaged file (found at open or by a failing read or write) is moved aside with a warning
    and a new cache started: it only holds results that can be computed again.

    Args:
        path: SQLite file; None keeps everything in memory (no resume).
        timeout: seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | Path | None, timeout: float = 120.0):
        self.path = Path(path) if path is not None else None
        self.timeout = timeout
        #: where a damaged file was moved (None: it never was)
        self.set_aside: Path | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._healing(self._open)
        self.stats = CacheStats()

    def _open(self) -> None:
        self._conn = sqlite3.connect(str(self.path) if self.path else ":memory:", timeout=self.timeout,
                                     isolation_level=None, check_same_thread=False)
        try:
            if self.path is not None:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
            self._retry(lambda: self._conn.execute(_SCHEMA))
            self._conn.execute("SELECT key FROM calls LIMIT 1").fetchall()  # reads the table's first page
        except BaseException:
            self._conn.close()
            raise

    def _healing(self, fn):
        """``fn()``; on a damaged file: move it aside, open a new one and run ``fn()`` there."""
        try:
            return fn()
        except sqlite3.DatabaseError as e:
            if self.path is None or not _is_damage(e):
                raise
            self._move_aside(e)
            if fn != self._open:
                self._open()
            return fn()

    def _move_aside(self, error: BaseException) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        i = 1
        while aside.exists():
            aside, i = aside.with_name(f"{aside.name.split('~')[0]}~{i}"), i + 1
        # the WAL goes with it: replayed into a new file it would bring the damage back
        for suffix in ("", "-wal", "-shm"):
            move_aside(f"{self.path}{suffix}", f"{aside}{suffix}")
        self.set_aside = aside
        log.warning("the call cache %s is damaged (%s): moved it aside to %s and started a new one; "
                    "its results will be computed again", self.path, error, aside)

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

    def _select(self, keys: list[str]) -> list[tuple[str, bytes, str]]:
        rows = []
        for start in range(0, len(keys), 900):  # SQLite's host-parameter limit
            chunk = keys[start : start + 900]
            q = f"SELECT key, value, checksum FROM calls WHERE key IN ({','.join('?' * len(chunk))})"
            rows += self._retry(lambda: self._conn.execute(q, chunk).fetchall())  # noqa: B023 - called at once
        return rows

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Values for the keys present and intact; damaged records are dropped and counted."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, bytes] = {}
        bad: list[str] = []
        for key, value, checksum in self._healing(lambda: self._select(keys)):
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
            self._healing(lambda: self._retry(write))
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

        self._healing(lambda: self._retry(run))

    def __len__(self) -> int:
        return int(self._healing(lambda: self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]))

    def clear(self) -> None:
        self._healing(lambda: self._retry(lambda: self._conn.execute("DELETE FROM calls")))

    def close(self) -> None:
        self._conn.close()
