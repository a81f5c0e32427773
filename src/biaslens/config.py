"""The run configuration: one object that the CLI fills from flags or a YAML file and
that ``biaslens.run(config)`` accepts directly in Python."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator, model_validator

from biaslens.errors import ConfigError  # noqa: F401  (re-exported: the public name)
from biaslens.models.embedded import EMBEDDED_NAME
from biaslens.options import ConfigFile, Section, configuration_name, deep_merge, flag, validation_error_text  # noqa: F401  (ConfigFile, deep_merge: re-exported)


class ModelConfig(Section, section="model", panel="Model and backend"):
    """Which model to call and how."""

    name: str = Field(EMBEDDED_NAME, json_schema_extra=flag("--model", short="-m"), description=(
        "'smollm2-135m' (embedded, default), 'fake', a Hugging Face id or a local folder"))
    device: str = Field("cpu", description="cpu, cuda, cuda:N or mps")
    dtype: str = Field("float32", description=(
        "float32 (exact, default), bf16-fast (CPU with native bfloat16: ~2x, median perplexity error 0.5%, see "
        "docs/benchmarks.md), bfloat16 or float16"))
    kind: Literal["auto", "causal", "masked", "seq2seq"] = Field("auto", json_schema_extra=flag("--model-kind"),
                                                                 description="the model's kind; auto: from its config")
    batch_size: int | None = Field(None, ge=1, description=(
        "texts per forward pass [default per backend: causal 256 scoring (4,096 on a GPU), "
        "32 generation (by free memory on a GPU)]"))
    start_token: str | None = Field(None, description=(
        "document-start token prepended before each text (default chosen per model, recorded in run.json)"))
    score_first_token: bool = Field(True, json_schema_extra=flag("--score-first-token/--no-start-token"), description=(
        "--no-start-token: reference-compatible scoring, no start token, the first token is not scored"))
    trust_remote_code: bool = Field(False, description="allow the model repository's own code to run")
    compile: bool = Field(False, description=(
        "score through torch.compile (a one-time compilation of a minute or more): on the packed path (Llama, "
        "Qwen2/3, GPT-2) the transformer body is compiled and the packing kept; other models are compiled whole with "
        "padded batches. For large runs; see docs/backends.md"))
    backend: str = Field("auto", description=(
        "auto (embedded/fake/Hugging Face by name, default), hf, vllm (vLLM offline engine), openai (an "
        "OpenAI-compatible server, with --base-url) or any backend registered in models.registry.MODEL_REGISTRY"))
    base_url: str | None = Field(None, description="openai backend: server URL, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str = Field("OPENAI_API_KEY", description=(
        "openai backend: environment variable holding the API key (the key is never logged or stored)"))
    api: Literal["completions", "chat"] = Field("completions", description=(
        "openai backend: endpoint for generation (scoring always uses completions)"))
    max_concurrency: int = Field(8, ge=1, description="openai backend: requests in flight at once")
    requests_per_second: float | None = Field(None, gt=0, description="openai backend: rate limit [default unlimited]")
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


class ExecutorConfig(Section, section="executor", panel="Executor"):
    """Where batches of model calls run: in this process, or on a Ray cluster."""

    kind: Literal["local", "ray"] = Field("local", json_schema_extra=flag("--executor"), description=(
        "local: this process; ray: Ray Data batch inference, one model replica per actor"))
    ray_address: str | None = Field(None, description="ray executor: cluster address (none: start a local cluster)")
    workers: int | None = Field(None, ge=1, json_schema_extra=flag("--ray-workers"), description=(
        "ray executor: model replicas (actors) [default one per GPU, 2 on CPU]"))


class JudgeConfig(Section, section="judge", flag_prefix="judge-", panel="Judge model"):
    """A language model as the judge (``--toxicity-classifier judge``, ``--offensiveness-classifier judge``,
    ``--style-classifier judge``, ``community.sentiment_classifier: judge``): which model, and how it is asked
    (biaslens.scorers.model_judge)."""

    model: str = Field(EMBEDDED_NAME, description=(
        "the judge: any model biaslens loads ('smollm2-135m' embedded, default; a Hugging Face id or folder; a served "
        "model's name with --judge-backend openai or vllm)"))
    backend: str = Field("auto", description="auto, hf, vllm, openai or any registered backend (as --backend)")
    device: str = Field("cpu", description="cpu, cuda, cuda:N or mps")
    dtype: str = Field("float32", description="as --dtype")
    base_url: str | None = Field(None, description="openai backend: server URL")
    api_key_env: str = Field("OPENAI_API_KEY", description="openai backend: environment variable holding the API key")
    api: Literal["completions", "chat"] = Field("completions", description=(
        "openai backend: chat asks through the chat endpoint (answers read from generated text)"))
    engine_options: dict = Field(default_factory=dict, json_schema_extra=flag(skip=True), description=(
        "vllm and registered backends: keyword options for the loader"))
    batch_size: int | None = Field(None, ge=1, description="texts per forward pass [default per backend]")
    rubric: Path | None = Field(None, description=(
        "a text file with your own rubric (default: built in, from the annotation guidelines, docs/annotation.md)"))
    answers: Literal["auto", "logprobs", "generate"] = Field("auto", description=(
        "logprobs: the allowed answers' log-likelihood as probabilities; generate: parse a short answer; auto: "
        "logprobs unless the server is used through its chat endpoint"))

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, v: str) -> str:
        return ModelConfig._known_backend(v)


_HOLISTIC = "HolisticBias sentences"


class RunConfigBase(ConfigFile):
    """What every run has; :data:`RunConfig` adds each registered suite's options section."""

    suite: str = Field("holistic-likelihood", json_schema_extra=flag(skip=True))  # the command's argument
    model: ModelConfig = Field(default_factory=ModelConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    out: Path | None = Field(None, json_schema_extra=flag(short="-o"), description=(
        "run folder (default runs/<suite>-<model>-<time>)"))
    cache_dir: Path | None = Field(None, description="call-cache folder (default ~/.cache/biaslens)")
    use_cache: bool = Field(True, json_schema_extra=flag("--use-cache/--no-cache"), description=(
        "read and write the call cache"))
    seed: int = Field(0, description="seed for sampling")
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level")
    # dataset selection (the HolisticBias suites)
    dataset_dir: Path | None = Field(None, json_schema_extra=flag(panel=_HOLISTIC), description=(
        "HolisticBias folder in the official format (default: built-in v1.0)"))
    extra_dataset_files: list[Path] = Field(default_factory=list, json_schema_extra=flag(
        "--extra-dataset-file", metavar="<file>", panel=_HOLISTIC), description=(
        "your own descriptors/nouns/templates JSON, merged in (repeatable)"))
    axes: list[str] | None = Field(None, json_schema_extra=flag(sep=",", panel=_HOLISTIC), description=(
        "comma-separated axes, e.g. ability,age"))
    templates: list[str] | None = Field(None, json_schema_extra=flag(sep="|", panel=_HOLISTIC), description=(
        "templates separated by '|', e.g. 'I love {plural_noun_phrase}.'"))
    sample: int | None = Field(6000, ge=1, json_schema_extra=flag(panel=_HOLISTIC), description=(
        "about N sentences, stratified, whole (axis, template, descriptor) groups"))
    full: bool = Field(False, json_schema_extra=flag(panel=_HOLISTIC), description=(
        "every sentence (HolisticBias v1.0: 460,980; overrides sample)"))
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="options of suites that declare their own options class, by suite name "
                                          "(validated by that class when the suite runs)")

    @model_validator(mode="before")
    @classmethod
    def _model_by_name(cls, data: Any) -> Any:
        """``model: name`` is short for ``model: {name: name}``."""
        if isinstance(data, dict) and isinstance(data.get("model"), str):
            data = {**data, "model": {"name": data["model"]}}
        return data


def suite_sections() -> dict[str, type[Section]]:
    """Each registered suite's options section (key -> class), from the light module beside the
    suite: the options of ``pkg.mod:Suite`` are the :class:`Section` classes of ``pkg.mod_options``, or of
    ``pkg.options`` for a method folder's ``pkg.suite`` (imported without the suite, so ``--help`` and validation stay fast). Suites that share one
    section (the two generation suites) name it once."""
    import importlib
    import importlib.util

    from biaslens.registry import SUITES

    sections: dict[str, type[Section]] = {}
    for target in SUITES.values():
        module = target.partition(":")[0]
        # a method folder (biaslens.methods.<name>.suite) keeps its options in options.py beside it
        name = module.removesuffix(".suite") + ".options" if module.endswith(".suite") else module + "_options"
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            for obj in vars(importlib.import_module(name)).values():
                if isinstance(obj, type) and issubclass(obj, Section) and obj.__module__ == name and obj.section:
                    if obj.section in RunConfigBase.model_fields:
                        raise ValueError(f"{name}: section {obj.section!r} is a field of every run; choose another")
                    sections.setdefault(obj.section, obj)
    return sections


if TYPE_CHECKING:  # the sections as a type checker sees them (tests/test_options.py keeps this list in step)
    from biaslens.methods.bbq.options import BbqOptions
    from biaslens.methods.bold.options import BoldOptions
    from biaslens.methods.community.options import CommunityOptions
    from biaslens.methods.counterfactual.options import CounterfactualOptions
    from biaslens.methods.crows_pairs.options import CrowsPairsOptions
    from biaslens.methods.fairpair.options import FairPairOptions
    from biaslens.methods.holistic.generation_options import GenerationOptions
    from biaslens.methods.holistic.likelihood_options import HolisticLikelihoodOptions
    from biaslens.methods.redditbias.options import RedditBiasOptions
    from biaslens.methods.winobias.options import WinoBiasOptions
    from biaslens.methods.winogender.options import WinogenderOptions

    class RunConfig(RunConfigBase):
        """Everything a run needs: RunConfigBase plus one section per registered suite's options
        module (built at run time from the registry; this is how a type checker sees it)."""

        likelihood: HolisticLikelihoodOptions
        redditbias: RedditBiasOptions
        fairpair: FairPairOptions
        generation: GenerationOptions
        community: CommunityOptions
        bbq: BbqOptions
        bold: BoldOptions
        crows_pairs: CrowsPairsOptions
        winogender: WinogenderOptions
        winobias: WinoBiasOptions
        counterfactual: CounterfactualOptions
else:
    RunConfig = create_model(
        "RunConfig", __base__=RunConfigBase, __module__=__name__,
        __doc__="Everything a run needs: RunConfigBase plus one section per registered suite's options module. "
                "Unknown fields are errors, so typos do not pass silently.",
        **{key: (cls, Field(default_factory=cls)) for key, cls in suite_sections().items()})


def dotted_overrides(items: list[str], root: type[BaseModel] | None = None) -> dict:
    """``["fairpair.temperature=0.8", "axes=[age, ability]"]`` -> nested settings; values are
    read as YAML scalars or lists; a key that is no field of ``root`` (default RunConfig) is an
    error naming it, with the closest field names."""
    import difflib

    import yaml

    out: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"-S {item!r}: expected section.field=value, e.g. -S fairpair.temperature=0.8")
        parts = key.split(".")
        model: type[BaseModel] | None = root or RunConfig
        for i, part in enumerate(parts):
            if model is None:  # inside a free-form mapping (options.<suite>, engine_options): any key
                break
            fields = model.model_fields
            if part not in fields:
                where = ".".join(parts[:i]) or configuration_name(root or RunConfig)
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


def __getattr__(name: str) -> Any:
    """A suite's options class by its class name (``biaslens.config.BbqOptions`` ...), as this module
    exported them before the options moved beside each method; found through the registry."""
    for cls in suite_sections().values():
        if cls.__name__ == name:
            return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
