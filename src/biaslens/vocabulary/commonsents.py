"""FairPair's Common Sents word lists (data/commonsents.yaml): the paper's 60 occupations and its
first-name pairs, read by FairPair's prompts and the counterfactual method's occupation check."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@lru_cache(maxsize=1)
def commonsents_data() -> dict[str, Any]:
    text = resources.files("biaslens.vocabulary").joinpath("data/commonsents.yaml").read_text("utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def occupations() -> list[str]:
    """The paper's 60 occupations, in its order."""
    return list(commonsents_data()["occupations"])
