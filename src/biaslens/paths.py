"""Where biaslens keeps its user-level files (model conversions, the call cache)."""

from __future__ import annotations

import errno
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


#: errno values that mean "the disk (or the user's quota or file-size limit) is full"
_NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


class NoSpaceLeft(RuntimeError):
    """A write failed because the disk is full; the message names the path."""

    kind = "disk_full"


def no_space_error(exc: BaseException, path: str | Path, what: str = "writing") -> NoSpaceLeft | None:
    """A :class:`NoSpaceLeft` naming ``path`` when ``exc`` is a full-disk error (OSError with
    ENOSPC/EFBIG/EDQUOT, SQLite's "database or disk is full"), else None."""
    import sqlite3

    text = str(exc)
    full = (isinstance(exc, OSError) and (exc.errno in _NO_SPACE_ERRNOS
                                          # pyarrow's OSError carries the errno in its text only
                                          or "No space left" in text or "File too large" in text)) or (
        isinstance(exc, sqlite3.OperationalError) and "full" in text)
    if not full:
        return None
    return NoSpaceLeft(f"no space left on device {what} {path}; free some space and run the same command "
                       "again (finished work is kept)")
