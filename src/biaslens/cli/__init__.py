"""The ``biaslens`` command: a thin layer over the Python API."""

from biaslens.cli.app import app, main

__all__ = ["app", "main"]
