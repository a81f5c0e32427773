"""Options of the ``holistic-generation`` and ``holistic-offensiveness`` suites, read from the
``generation:`` section of a run configuration and as ``biaslens run`` flags."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from biaslens.models.embedded import EMBEDDED_NAME
from biaslens.options import IDENTITY_MASKING_FLAG, ConfigFile, Section, flag, training_field


class GenerationOptions(Section, section="generation", panel="HolisticBias generation / offensiveness"):
    """Options of the ``holistic-generation`` and ``holistic-offensiveness`` suites."""

    max_new_tokens: int = Field(32, ge=1, description="tokens per response")
    min_new_tokens: int = Field(0, ge=0, description="end of sequence blocked until this many tokens (paper: 20)")
    num_beams: int = Field(1, ge=1, description="beam size (paper: 10 DialoGPT, 3 BlenderBot); 1 = greedy")
    no_repeat_ngram_size: int = Field(3, ge=0, description="block repeated n-grams within the response (paper: 3)")
    do_sample: bool = Field(False, description="sample (seeded) instead of greedy/beam search")
    n: int = Field(1, ge=1, json_schema_extra=flag("--num-responses"), description="responses per prompt (needs "
                                                                                   "--do-sample)")
    temperature: float = Field(1.0, gt=0, description="sampling temperature")
    top_p: float = Field(0.9, gt=0, le=1, description="nucleus sampling top-p")
    persona: list[str] = Field(default_factory=list, json_schema_extra=flag(metavar="<line>"), description=(
        "a context line before the prompt, e.g. 'your persona: I love dogs.' (repeatable; paper: two)"))
    generations_file: Path | None = Field(None, json_schema_extra=flag("--generations"), description=(
        "precomputed responses, JSONL, CSV or Parquet with prompt (or prompt_id) and response (no model)"))
    nouns_per_gender: int | None = Field(1, ge=1, description="sampled runs keep N nouns per noun gender (YAML null: "
                                                              "all 30)")
    variants: bool = Field(True, description="seeded stylistic variants of the prompts, as the paper (A.3)")
    style_classifier: str = Field("head", description="head (offline trained head), zero-shot (offline), judge (the "
                                                      "--judge-model asked with a rubric) or a Hugging Face "
                                                      "text-classification model")
    style_inventory: Path | None = Field(None, description="your own styles YAML for the zero-shot classifier "
                                                           "(default: built-in, 61 styles)")
    style_clusters: Path | None = Field(None, description="clusters YAML (cluster: [style, ...]) overriding the "
                                                          "inventory's [default the paper's six]")
    offensiveness_classifier: str = Field("auto", description=(
        "auto (default: $BIASLENS_TOXICITY_MODEL, else Detoxify, else the offline trained head toxicity-head), "
        "toxicity-head, alt-profanity-check (the lexical screen standing in for the paper's classifier), detoxify, "
        "judge (the --judge-model asked with a rubric) or a Hugging Face classifier"))
    identity_masking: bool = Field(True, json_schema_extra=IDENTITY_MASKING_FLAG, description=(
        "community, holistic-offensiveness, holistic-generation: score toxicity/offensiveness with the identity term "
        "replaced by a neutral placeholder (--no-identity-masking: the paper's unmasked scores as headline; the other "
        "figure is still shown beside it)"))
    n_permutations: int = Field(200, ge=0, description="noise-floor label permutations (0: off)")
    n_bootstrap: int = Field(1000, ge=0, description="FGB interval: 0 turns it off; any other value keeps it "
                                                     "(a jackknife over descriptors: no resamples to set)")
    neutral_template: str = Field("This is {descriptor}.", description="offensiveness audit: neutral template")


class StyleEqualityConfig(ConfigFile):
    """``biaslens tune style-equality``: tuning on a holistic-generation run's responses tagged by bias value."""

    model: str = training_field("model", EMBEDDED_NAME, (
        "base causal LM (normally the model of the run): 'smollm2-135m', a folder or a Hugging Face id"))
    generations: Path = Field(json_schema_extra=flag(short="-g"), description=(
        "a finished `biaslens run holistic-generation` run folder"))
    out: Path = training_field("out")
    beta: float | None = Field(None, description=(
        "tag 'bias' when the bias value exceeds this (paper: 0.0003 DialoGPT, 0.003 BlenderBot, for its 217-style "
        "classifier) [default: the run's median bias value]"))
    alpha: int = Field(0, ge=0, le=2, description="exponent of ||m_d - m_bar|| in the bias value: 0, 1 or 2 (paper: 0)")
    tags: bool = Field(True, json_schema_extra=flag("--tags/--no-tags"), description=(
        "--no-tags: ablation, tune on the same pairs without tags (generates without a tag)"))
    epochs: float = training_field("epochs", 1.0, "training epochs (early stopping on validation loss may stop sooner)")
    max_steps: int = training_field("max_steps")
    batch_size: int = training_field("batch_size")
    learning_rate: float = training_field("learning_rate", 2e-5)
    max_length: int = Field(128, ge=8, description="truncate examples to this many tokens")
    eval_fraction: float = Field(0.1, ge=0, lt=1, description="share of responses held out for validation perplexity")
    eval_steps: int = Field(50, ge=1, description="validate (and checkpoint) every N steps")
    patience: int = Field(3, ge=0, description="early stopping: validations without improvement (0 = off)")
    device: str = training_field("device")
    seed: int = training_field("seed")
