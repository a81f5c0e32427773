"""Options of the ``winobias`` suite, read from the ``winobias:`` section of a run configuration
and as ``biaslens run winobias --winobias-...`` flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from biaslens.options import Section, flag


class WinoBiasOptions(Section, section="winobias", flag_prefix="winobias-", panel="WinoBias"):
    """Options of the ``winobias`` suite (Zhao et al. 2018)."""

    data_dir: Path | None = Field(None, description=(
        "your own copy of the WinoBias data folder ({pro,anti}_stereotyped_type{1,2}.txt.{dev,test}) "
        "[default the shipped files]"))
    types: list[Literal["1", "2"]] = Field(default_factory=lambda: ["1", "2"], json_schema_extra=flag(sep=","),
                                       description="comma-separated sentence types")
    splits: list[Literal["dev", "test"]] = Field(default_factory=lambda: ["dev", "test"],
                                                 json_schema_extra=flag(sep=","), description="comma-separated splits")
