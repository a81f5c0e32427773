"""The dataset card of ``biaslens dataset holistic --format hf`` (the HolisticBias table as a Hugging Face
datasets folder)."""

from biaslens.datasets.hf_format import Card

HF_CARD = Card(
    "holistic", "HolisticBias sentences (biaslens build)",
    "Smith et al. 2022, \"I'm sorry to hear that\": Finding New Biases in Language Models with a Holistic "
    "Descriptor Dataset (EMNLP 2022)",
    "https://github.com/facebookresearch/ResponsibleNLP (holistic_bias)",
    "CC BY-SA 4.0 (the HolisticBias dataset's license; this table is an adapted version)",
    "HolisticBias v1.0",
    ("axis", "bucket", "descriptor_gender", "descriptor_preference", "noun_gender", "noun_phrase_type"),
    {"text": "the sentence", "axis": "demographic axis", "bucket": "descriptor bucket within the axis",
     "descriptor": "the descriptor term", "noun": "person noun", "template": "sentence template",
     "noun_phrase_type": "how the descriptor and noun combine"})
