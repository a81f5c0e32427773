"""The method's options: set from YAML as `options: {pronoun-gap: {occupations: [...]}}`."""

from pydantic import BaseModel, ConfigDict, Field


class PronounGapOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    occupations: list[str] = Field(default_factory=lambda: ["nurse", "engineer", "teacher", "pilot", "baker"],
                                   min_length=2)
