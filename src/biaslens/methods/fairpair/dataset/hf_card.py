"""The dataset card of ``biaslens dataset fairpair --format hf`` (the FairPair table as a Hugging Face
datasets folder)."""

from biaslens.datasets.hf_format import Card

HF_CARD = Card(
    "fairpair", "FairPair Common Sents prompt pairs (biaslens build)",
    "Dwivedi-Yu et al. 2024, FairPair: A Robust Evaluation of Biases in Language Models through Paired "
    "Perturbations",
    "the paper's Common Sents templates, occupations and name pairs, as transcribed by biaslens",
    "biaslens: Apache-2.0",
    "the paper's 60 occupations, default name pair",
    ("occupation",),
    {"pair_id": "stable id of the prompt", "x": "prompt about the source name", "px": "its perturbation p(x)",
     "source_name": "name in x", "target_name": "name in p(x)"})
