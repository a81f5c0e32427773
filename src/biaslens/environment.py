"""The process-wide policy every entry point applies (CLI, ``biaslens.run`` in a notebook):
offline unless asked, quiet third-party progress bars. Applied by the API, so the CLI and a
notebook behave the same."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


#: variables the policy set because the user had not (biaslens may lift those for one call:
#: models.tokenized runs the fast tokenizer's batch call in parallel)
SET_BY_POLICY: set[str] = set()


def _default(name: str, value: str) -> None:
    if name not in os.environ:
        os.environ[name] = value
        SET_BY_POLICY.add(name)


def apply_environment_policy() -> None:
    """Offline by default (the Hub is not reachable everywhere, and a hanging download is worse
    than a clear error): ``BIASLENS_ONLINE=1`` allows downloads. Variables the user set win."""
    _default("TOKENIZERS_PARALLELISM", "false")
    # transformers' own "Loading weights" bars would interleave with biaslens's, which show the real work
    _default("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if not os.environ.get("BIASLENS_ONLINE"):
        _default("HF_HUB_OFFLINE", "1")
        _default("TRANSFORMERS_OFFLINE", "1")


def applies_environment_policy(fn: F) -> F:
    """Decorate a public function that may load a model: it applies
    :func:`apply_environment_policy` first, so ``biaslens.debias(...)`` in a notebook is as
    offline as ``biaslens debias`` on the command line."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        apply_environment_policy()
        return fn(*args, **kwargs)

    wrapper.applies_environment_policy = True
    return wrapper  # type: ignore[return-value]


def default_console():
    """The console progress and summaries go to: standard error; without a terminal (CI logs,
    pipes) lines are not wrapped at 80 columns in mid-phrase."""
    import sys

    from rich.console import Console

    return Console(stderr=True, soft_wrap=not sys.stderr.isatty())
