"""Where biaslens keeps its user-level files (model conversions, the call cache)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$BIASLENS_CACHE_DIR``, else ``$XDG_CACHE_HOME/biaslens``, else ``~/.cache/biaslens``."""
    env = os.environ.get("BIASLENS_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "biaslens"
