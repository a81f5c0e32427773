"""The hand-computed examples in the docstrings of biaslens.metrics, biaslens.datasets and
biaslens.results are tests too."""

import doctest
import importlib
import pkgutil

import pytest

import biaslens.datasets
import biaslens.metrics


def _modules(package) -> list[str]:
    return [m.name for m in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")]


MODULES = [*_modules(biaslens.metrics), *_modules(biaslens.datasets), "biaslens.results"]


def test_modules_found() -> None:
    # a renamed package must not leave this file testing nothing
    assert {"biaslens.metrics.generation_bias", "biaslens.datasets.redditbias.specs"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_metric_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
