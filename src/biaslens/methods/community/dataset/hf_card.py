"""The dataset card of ``biaslens dataset community --format hf`` (the community-bias table as a Hugging Face
datasets folder)."""

from biaslens.datasets.hf_format import Card

HF_CARD = Card(
    "community", "Community-bias prompts (biaslens build)",
    "Wald & Pfahler 2023, Exposing Bias in Online Communities through Large-Scale Language Models",
    "the paper's six templates and 15 demographics, as transcribed by biaslens",
    "biaslens: Apache-2.0",
    "the paper's templates and keywords",
    ("dimension", "demographic", "form", "template_id"),
    {"prompt": "the filled template", "dimension": "demographic dimension", "demographic": "demographic group",
     "keyword": "the word filled in", "form": "grammatical form of the keyword"})
