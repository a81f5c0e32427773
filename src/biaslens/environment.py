"""The process-wide policy every entry point applies (CLI, ``biaslens.run`` in a notebook):
offline unless asked, quiet third-party progress bars. Applied by the API, so the CLI and a
notebook behave the same."""

from __future__ import annotations

import os


def apply_environment_policy() -> None:
    """Offline by default (the Hub is not reachable everywhere, and a hanging download is worse
    than a clear error): ``BIASLENS_ONLINE=1`` allows downloads. Variables the user set win."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # transformers' own "Loading weights" bars would interleave with biaslens's, which show the real work
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if not os.environ.get("BIASLENS_ONLINE"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def default_console():
    """The console progress and summaries go to: standard error; without a terminal (CI logs,
    pipes) lines are not wrapped at 80 columns in mid-phrase."""
    import sys

    from rich.console import Console

    return Console(stderr=True, soft_wrap=not sys.stderr.isatty())
