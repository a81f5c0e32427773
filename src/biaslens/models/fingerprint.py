"""A model's identity for cache keys: a hash of its weight files, or the Hub revision."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from biaslens.fileio import write_atomic
from biaslens.paths import cache_dir

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".msgpack", ".h5")


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def weights_fingerprint(name_or_path: str | os.PathLike, config=None) -> str:
    """sha256 over the weight files of a local model folder (memoised by size and
    mtime, so a 500 MB model is hashed once); for a Hub model, its commit hash."""
    p = Path(name_or_path)
    if p.is_file():
        files = [p]
    elif p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix in _WEIGHT_SUFFIXES)
    else:
        rev = getattr(config, "_commit_hash", None) if config is not None else None
        return f"hub:{name_or_path}@{rev or 'unknown'}"
    memo_path = cache_dir() / "fingerprints.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    h = hashlib.sha256()
    changed = False
    for f in files:
        st = f.stat()
        key = f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}"
        digest = memo.get(key)
        if digest is None:
            digest = file_sha256(f)
            memo[key] = digest
            changed = True
        h.update(f.name.encode() + b"\0" + digest.encode())
    if changed:
        try:
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(memo_path, json.dumps(memo))
        except OSError:
            pass  # a read-only cache only costs a re-hash next time
    return "sha256:" + h.hexdigest()[:32]
