"""Errors every layer may raise, kept in a module that imports nothing, so that pure layers
(datasets, metrics) can raise them without importing the configuration."""


class DatasetError(ValueError):
    """A dataset file is malformed; the message names the file, the entry and the line."""

    kind = "bad_input"


class ConfigError(ValueError):
    """A configuration file or value is invalid; the message names the field."""

    kind = "bad_input"


def error_kind(exc: BaseException) -> str:
    """A stable word for the kind of a failure, recorded beside its message (``run.json``
    ``error_kind``): the error's ``kind`` (``bad_input``, ``model``, ``server_timeout``,
    ``server_overloaded``, ``scorer``, ``disk_full`` ...), ``interrupted``, else ``internal``."""
    kind = getattr(exc, "kind", None)
    if isinstance(kind, str) and kind:
        return kind
    return "interrupted" if isinstance(exc, KeyboardInterrupt) else "internal"


def error_message(exc: BaseException) -> str:
    """The message a user reads for ``exc``: its own text, which says what happened and what to do;
    the class name only for an unexpected (internal) error, where it is the only clue."""
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if error_kind(exc) == "internal" else text
