"""Errors every layer may raise, kept in a module that imports nothing, so that pure layers
(datasets, metrics) can raise them without importing the configuration."""


class ConfigError(ValueError):
    """A configuration file or value is invalid; the message names the field."""
