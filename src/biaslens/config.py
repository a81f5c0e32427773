"""The run configuration: one object that the CLI fills from flags or a YAML file and
that ``biaslens.run(config)`` accepts directly in Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from biaslens.errors import ConfigError  # noqa: F401  (re-exported: the public name)
from biaslens.models.embedded import EMBEDDED_NAME


class ModelConfig(BaseModel):
    """Which model to call and how."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(EMBEDDED_NAME, description="'smollm2-135m' (embedded), 'fake', a Hugging Face id or a local folder")
    device: str = Field("cpu", description="cpu, cuda, cuda:N or mps")
    dtype: str = Field("float32", description="float32 (exact, default), bf16-fast (CPU fast mode), bfloat16 or float16")
    kind: Literal["auto", "causal", "masked", "seq2seq"] = "auto"
    batch_size: int | None = Field(None, ge=1, description="texts per forward pass; default per backend")
    start_token: str | None = Field(None, description="override the document-start token prepended before each text")
    score_first_token: bool = Field(True, description="False: reference-compatible mode, no start token, first token unscored")
    trust_remote_code: bool = False
    compile: bool = Field(False, description="score through torch.compile (padded batches, ~2 min to compile): for models without prefix packing")
    backend: str = Field(
        "auto", description="auto: embedded/fake/Hugging Face by name; hf; vllm: vLLM offline engine; openai: an "
                            "OpenAI-compatible server; or any backend registered in models.registry.MODEL_REGISTRY")
    base_url: str | None = Field(None, description="openai backend: server URL, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str = Field("OPENAI_API_KEY", description="openai backend: environment variable holding the API key (the key itself is never stored)")
    api: Literal["completions", "chat"] = Field("completions", description="openai backend: endpoint for generation (scoring always uses completions)")
    max_concurrency: int = Field(8, ge=1, description="openai backend: requests in flight at once")
    requests_per_second: float | None = Field(None, gt=0, description="openai backend: rate limit; none: unlimited")
    request_timeout: float = Field(120.0, gt=0, description="openai backend: seconds per request before retrying")
    max_retries: int = Field(6, ge=0, description="openai backend: retries on 429/5xx/timeouts, with exponential backoff")
    engine_options: dict = Field(default_factory=dict, description="vllm and registered backends: keyword options for the loader (vllm: vllm.LLM's tensor_parallel_size, gpu_memory_utilization, max_model_len, enforce_eager, quantization, ...)")


    @field_validator("backend")
    @classmethod
    def _known_backend(cls, v: str) -> str:
        from biaslens.models.registry import MODEL_REGISTRY

        if v != "auto" and v not in MODEL_REGISTRY:
            raise ValueError(f"unknown backend {v!r}; choose from auto, {', '.join(MODEL_REGISTRY)}")
        return v


class ExecutorConfig(BaseModel):
    """Where batches of model calls run: in this process, or on a Ray cluster."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "ray"] = Field("local", description="local: this process; ray: Ray Data batch inference, one model replica per actor")
    ray_address: str | None = Field(None, description="ray: cluster address (none: start a local cluster)")
    workers: int | None = Field(None, ge=1, description="ray: model replicas (actors); default one per GPU, or 2 on CPU")


class RedditBiasOptions(BaseModel):
    """Options of the ``redditbias`` suite (LMB perplexity t-test)."""

    model_config = ConfigDict(extra="forbid")

    data_dir: Path | None = Field(None, description="RedditBias checkout (data/<bias_type>/...); none: phrases from the specifications")
    split: Literal["test", "valid"] = "test"
    perplexity_column: str | None = Field(None, description="evaluate this precomputed column of the paired files; no model")
    bias_types: list[str] | None = Field(None, description="subset of bias types; default all")
    spec_files: list[Path] = Field(default_factory=list, description="your own bias specifications (YAML/JSON)")
    counterfactual_mode: Literal["default", "reference"] = "default"
    reference_text: Path | None = Field(None, description="text file for LM perplexity; default humanref6k.txt under data_dir")
    outlier_removal: Literal["auto", "on", "off"] = Field("auto", description="auto: off for the *_reduced files, on otherwise")
    max_template_pairs: int | None = Field(400, ge=1, description="spec-only phrases: at most this many pairs per bias type")
    max_reference_lines: int | None = Field(None, ge=1, description="LM perplexity: only the first N lines of the reference text")
    from_lm_eval: Path | None = Field(None, description="lm-eval --log_samples file of `biaslens export lm-eval --suite redditbias`: its log-likelihoods, no model")
    tokenizer: str | None = Field(None, description="with from_lm_eval: the model folder whose tokenizer counts each text's tokens")


class FairPairOptions(BaseModel):
    """Options of the ``fairpair`` suite. ``None`` sizes resolve per model at run time: the
    paper's settings (60 occupations, 100 samples, 128 tokens), or a small run on the
    embedded model (5 occupations, 20 samples, 32 tokens)."""

    model_config = ConfigDict(extra="forbid")

    occupations: list[str] | None = Field(None, description="occupations to use; default the paper's 60 (first n_occupations)")
    n_occupations: int | None = Field(None, ge=1, description="the first N of the paper's occupations")
    name_pairs: list[str | list[str]] = Field(default_factory=lambda: ["John:man/Jane:woman"],
                                              description="'John/Jane', 'John:man/Jane:woman' or [John, man, Jane, woman]")
    descriptors: list[str] = Field(default_factory=list, description="descriptors before the noun (e.g. HolisticBias terms); '' = none")
    samples: int | None = Field(None, ge=2, description="continuations per prompt [100; 20 on the embedded model]")
    max_new_tokens: int | None = Field(None, ge=1, description="[128; 32 on the embedded model]")
    top_p: float = Field(0.9, gt=0, le=1)
    temperature: float = Field(1.0, gt=0)
    chat: bool = Field(False, description="wrap prompts in the chat template; default plain continuation")
    perturber: Literal["rule", "llm"] = "rule"
    perturber_model: str | None = Field(None, description="llm perturber: model name; default the evaluated model")
    mapping_file: Path | None = Field(None, description="rule perturber: word-pair YAML, or 'gender' (default) / 'gender-full'")
    max_jaccard: float = Field(0.15, ge=0, le=1, description="filter: largest Jaccard dissimilarity original vs perturbed")
    filter_jaccard: Literal["masked", "raw"] = Field("masked", description="masked: the swapped words do not count; raw: as the paper")
    dissimilarities: list[str] = Field(default_factory=lambda: ["jaccard", "sentiment", "embedding"])
    k_folds: int | None = Field(10, ge=2, description="k-fold variant (None: off)")
    generations_file: Path | None = Field(None, description="precomputed continuations (JSONL with prompt and response); no model")
    ngram_top: int = Field(15, ge=1, description="n-grams shown per side")


class GenerationOptions(BaseModel):
    """Options of the ``holistic-generation`` and ``holistic-offensiveness`` suites."""

    model_config = ConfigDict(extra="forbid")

    max_new_tokens: int = Field(32, ge=1, description="upper bound on response tokens")
    min_new_tokens: int = Field(0, ge=0, description="end of sequence blocked until this many tokens (paper: 20)")
    num_beams: int = Field(1, ge=1, description="beam size (paper: 10 DialoGPT, 3 BlenderBot); 1 = greedy")
    no_repeat_ngram_size: int = Field(3, ge=0, description="block repeated n-grams within the response (paper: 3)")
    do_sample: bool = Field(False, description="sample instead of greedy/beam search")
    n: int = Field(1, ge=1, description="responses per prompt (needs do_sample)")
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(0.9, gt=0, le=1)
    persona: list[str] = Field(default_factory=list, description="context lines before the prompt (paper: two persona lines)")
    generations_file: Path | None = Field(None, description="precomputed responses (JSONL: prompt or prompt_id, response); no model")
    nouns_per_gender: int | None = Field(1, ge=1, description="sampled runs: nouns kept per noun gender (None: all 30)")
    variants: bool = Field(True, description="apply the paper's seeded stylistic variants to the prompts (A.3)")
    style_classifier: str = Field("head", description="'head' (offline, trained on labelled real output), 'zero-shot' (offline) or a Hugging Face text-classification model")
    style_inventory: Path | None = Field(None, description="zero-shot: your own styles YAML (default: built-in, 61 styles)")
    style_clusters: Path | None = Field(None, description="clusters YAML overriding the inventory's/the paper's clusters")
    offensiveness_classifier: str = Field("auto", description="'auto' ($BIASLENS_TOXICITY_MODEL, else Detoxify, else the offline lexical screen alt-profanity-check) or a classifier name/id/folder")
    identity_masking: bool = Field(True, description="score offensiveness with the prompt's descriptor replaced by a neutral placeholder (false: the paper's unmasked scores as headline)")
    n_permutations: int = Field(200, ge=0, description="noise floor: label permutations (0: off)")
    n_bootstrap: int = Field(1000, ge=0, description="FGB interval: 0 turns it off; any other value keeps it (a jackknife over descriptors: no resamples to set)")
    neutral_template: str = Field("This is {descriptor}.", description="offensiveness audit: neutral template")


class CommunityOptions(BaseModel):
    """Options of the ``community`` suite (Wald & Pfahler): several models side by side."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(default_factory=list, description="models to compare (base and community model folders); "
                                                                "default: model.name; an explicit model.name comes first")
    n: int = Field(50, ge=1, description="generations per prompt (paper: 50)")
    max_new_tokens: int = Field(64, ge=1, description="token budget per generation, then trimmed to max_words")
    min_new_tokens: int = Field(32, ge=0, description="end of text blocked until this many tokens (about 25 words)")
    max_words: int = Field(50, ge=1, description="generations are cut to this many words (paper: 25-50 words)")
    min_words: int = Field(25, ge=0, description="generations shorter than this are counted (kept) in run.json")
    no_repeat_ngram_size: int = Field(3, ge=0, description="paper: 3")
    temperature: float = Field(1.0, gt=0)
    top_k: int = Field(50, ge=0, description="Hugging Face pipeline default, as the paper used")
    top_p: float = Field(1.0, gt=0, le=1)
    chat: bool = Field(False, description="chat template for models without a separator (community models: never)")
    templates_file: Path | None = Field(None, description="your own templates YAML (default: the paper's six)")
    keywords_file: Path | None = Field(None, description="your own demographics/keywords YAML (default: the paper's 15)")
    dimensions: list[str] | None = Field(None, description="subset of dimensions; default all five")
    generations_files: list[Path] = Field(default_factory=list, description="precomputed generations JSONL (prompt or prompt_id, response[, model]); one model per file unless lines name one")
    toxicity_classifier: str = Field("auto", description="'auto' ($BIASLENS_TOXICITY_MODEL, else Detoxify, else the offline lexical screen alt-profanity-check), 'alt-profanity-check', 'detoxify[:variant]' or a Hugging Face classifier")
    identity_masking: bool = Field(True, description="score toxicity with the dimension's keywords replaced by a neutral placeholder (false: the paper's unmasked scores as headline)")
    toxicity_label: str | None = Field(None, description="Hugging Face classifier: the toxic label (default its last)")
    n_bootstrap: int = Field(1000, ge=0, description="unused: the gap and mean intervals are keyword-level t intervals (kept so older configs load)")
    n_examples: int = Field(5, ge=0, description="most negative/toxic generations listed per model")


class RunConfig(BaseModel):
    """Everything a run needs. Unknown fields are errors, so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")

    suite: str = "holistic-likelihood"
    model: ModelConfig = Field(default_factory=ModelConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    out: Path | None = Field(None, description="run folder; default runs/<suite>-<model>-<time>")
    cache_dir: Path | None = Field(None, description="call cache folder; default the user cache")
    use_cache: bool = True
    seed: int = 0
    # dataset selection (HolisticBias)
    dataset_dir: Path | None = None
    extra_dataset_files: list[Path] = Field(default_factory=list)
    axes: list[str] | None = None
    templates: list[str] | None = None
    sample: int | None = Field(6000, ge=1, description="about this many sentences, whole (axis, template, descriptor) groups")
    full: bool = Field(False, description="use every sentence (overrides sample)")
    alpha: float = Field(0.05, gt=0, lt=1)
    redditbias: RedditBiasOptions = Field(default_factory=RedditBiasOptions)
    fairpair: FairPairOptions = Field(default_factory=FairPairOptions)
    generation: GenerationOptions = Field(default_factory=GenerationOptions)
    community: CommunityOptions = Field(default_factory=CommunityOptions)
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="options of suites that declare their own options class, by suite name "
                                          "(validated by that class when the suite runs)")

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides) -> RunConfig:
        """Read a YAML config (safely: no Python objects), then apply overrides."""
        from biaslens.fileio import load_yaml

        path = Path(path)
        data = load_yaml(path, ConfigError) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}")
        if isinstance(data.get("model"), str):
            data["model"] = {"name": data["model"]}
        return cls.validated(deep_merge(data, overrides), source=str(path))

    @classmethod
    def validated(cls, data: dict, source: str = "config") -> RunConfig:
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            msgs = [f"{source}: field '{'.'.join(str(p) for p in err['loc'])}': {_error_text(err)}" for err in e.errors()]
            raise ConfigError("\n".join(msgs)) from None


def _error_text(err: dict) -> str:
    """pydantic's message, except for an unknown field: say so, with the closest field names (as -S does)."""
    if err.get("type") != "extra_forbidden":
        return err["msg"]
    import difflib

    *parents, name = [str(p) for p in err["loc"]]
    model: Any = RunConfig
    for part in parents:  # the section the unknown field sits in
        field = model.model_fields.get(part) if model is not None else None
        annotation = field.annotation if field is not None else None
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    close = difflib.get_close_matches(name, list(model.model_fields), n=3) if model is not None else []
    where = ".".join(parents) or "the run configuration"
    hint = f"; did you mean {', '.join('.'.join([*parents, c]) for c in close)}?" if close else ""
    return f"{where} has no field {name!r}{hint}"


def dotted_overrides(items: list[str]) -> dict:
    """``["fairpair.temperature=0.8", "axes=[age, ability]"]`` -> nested settings; values are
    read as YAML scalars or lists; a key that is no field of RunConfig is an error naming it,
    with the closest field names."""
    import difflib

    import yaml

    out: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"-S {item!r}: expected section.field=value, e.g. -S fairpair.temperature=0.8")
        parts = key.split(".")
        model: type[BaseModel] | None = RunConfig
        for i, part in enumerate(parts):
            if model is None:  # inside a free-form mapping (options.<suite>, engine_options): any key
                break
            fields = model.model_fields
            if part not in fields:
                where = ".".join(parts[:i]) or "the run configuration"
                close = difflib.get_close_matches(part, list(fields), n=3)
                hint = f"; did you mean {', '.join('.'.join([*parts[:i], c]) for c in close)}?" if close else ""
                raise ConfigError(f"-S {key}: {where} has no field {part!r}{hint}")
            annotation = fields[part].annotation
            model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as e:
            raise ConfigError(f"-S {key}: value {raw!r} is not valid YAML ({str(e).splitlines()[0]})") from None
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"-S {key}: {part!r} was set to a value above, it cannot have fields")
        node[parts[-1]] = value
    return out


def deep_merge(base: dict, extra: dict) -> dict:
    """``base`` with ``extra`` laid over it, section by section: nested mappings merge, any other
    value of ``extra`` replaces ``base``'s. Neither argument is changed.

    >>> deep_merge({"model": {"name": "m", "batch_size": 4}, "seed": 1}, {"model": {"batch_size": 8}})
    {'model': {'name': 'm', 'batch_size': 8}, 'seed': 1}
    """
    out = dict(base)
    for k, v in extra.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
