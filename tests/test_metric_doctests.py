"""The hand-computed examples in the docstrings of the pure layers (biaslens.metrics,
biaslens.datasets, biaslens.vocabulary, each method's metrics and dataset) and biaslens.results are
tests too."""

import doctest
import importlib
import pkgutil

import pytest

import biaslens.datasets
import biaslens.methods
import biaslens.metrics
import biaslens.vocabulary


def _modules(package) -> list[str]:
    return [m.name for m in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")]


def _pure(name: str) -> bool:
    """A method's metric and dataset modules (``methods/<name>/metrics.py``, ``dataset/``, HolisticBias's
    ``*_metrics.py``)."""
    parts = name.split(".")
    return len(parts) > 3 and (parts[3] in ("metrics", "dataset") or parts[3].endswith("_metrics"))


MODULES = [*_modules(biaslens.metrics), *_modules(biaslens.datasets), *_modules(biaslens.vocabulary),
           *[m for m in _modules(biaslens.methods) if _pure(m)], "biaslens.results"]


def test_modules_found() -> None:
    # a renamed package must not leave this file testing nothing
    assert {"biaslens.methods.holistic.generation_metrics", "biaslens.methods.redditbias.dataset.specs"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_metric_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
