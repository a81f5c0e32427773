"""The dataset card of ``biaslens dataset redditbias --format hf`` (the RedditBias table as a Hugging Face
datasets folder)."""

from biaslens.datasets.hf_format import Card

HF_CARD = Card(
    "redditbias", "RedditBias phrase pairs (biaslens build)",
    "Barikeri et al. 2021, RedditBias: A Real-World Resource for Bias Evaluation and Debiasing of "
    "Conversational Language Models (ACL 2021)",
    "https://github.com/umanlp/RedditBias (bias specifications); the pairs here are built from them by biaslens",
    "biaslens: Apache-2.0; the bias specifications' terms are the authors' (see the source repository)",
    "biaslens bias specifications (religion1, religion2, race, gender, orientation)",
    ("bias_type", "view", "source"),
    {"bias_type": "RedditBias bias type", "phrase": "phrase about the minoritized group",
     "counterfactual": "the same phrase with the target term swapped to the dominant group"},
    "Without a RedditBias checkout these are spec-template pairs, not the authors' Reddit comments.")
