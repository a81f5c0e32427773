"""Command-line interface. Every command parses flags into the same objects the
Python API takes (``RunConfig``), calls the API, and turns known errors into one
clear line (exit code 2) instead of a traceback."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from biaslens.cli.check_backend import check_backend_command
from biaslens.cli.compare import compare as compare_command
from biaslens.cli.debias import debias_app
from biaslens.cli.downstream import downstream_app
from biaslens.cli.finetune import finetune_app
from biaslens.cli.output import JSON_HELP, command_output, run_json
from biaslens.environment import default_console


class _ReadableHelp(TyperGroup):
    """The top command group. Built with every command and subcommand under it, it makes their
    ``--help`` read at 80 columns: a command list shows each command's first sentence in full
    (wrapped, not cut at "..."), and repeatable options show their element's metavar (``<path>``)
    and repeatable arguments none, instead of ``<list[Path]>``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _readable_help(self)


def _first_sentence(text: str) -> str:
    first = " ".join(text.strip().split("\n\n")[0].split())
    end = first.find(". ")
    return first if end < 0 else first[: end + 1]


def _readable_help(group) -> None:
    for cmd in (getattr(group, "commands", None) or {}).values():
        if not cmd.short_help and cmd.help:
            cmd.short_help = _first_sentence(cmd.help)
        for param in cmd.params:
            desc = getattr(param, "type_descriptor", None)
            if desc is None or not desc.is_list:
                continue
            if param.param_type_name == "option" and param.metavar is None:
                element = param.bare_type().removeprefix("list[").removesuffix("]")
                param.metavar = f"<{element.lower()}>"  # the style of the other options: <path>, <text>
            elif param.param_type_name == "argument":
                param.display_type_rich = lambda ctx: None  # "runs..." says it repeats; no "<list[str]>"
        _readable_help(cmd)


app = typer.Typer(rich_markup_mode=None, cls=_ReadableHelp,
    name="biaslens",
    help="Measure social bias in language models: HolisticBias, RedditBias, community bias, FairPair.\n\n"
         "With no arguments, `biaslens run` scores a stratified sample of HolisticBias on the embedded "
         "model (SmolLM2-135M, offline) and writes a Likelihood Bias report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dataset_app = typer.Typer(rich_markup_mode=None, help="Build and export datasets.", no_args_is_help=True)
cache_app = typer.Typer(rich_markup_mode=None, help="Inspect or clear the model-call cache.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")
app.add_typer(cache_app, name="cache")
app.add_typer(debias_app, name="debias")
app.command("compare")(compare_command)
app.command("check-backend")(check_backend_command)
app.command("card")(__import__("biaslens.cli.card", fromlist=["card"]).card)
app.add_typer(downstream_app, name="downstream")
app.add_typer(finetune_app, name="finetune")
app.add_typer(__import__("biaslens.cli.tune", fromlist=["tune_app"]).tune_app, name="tune")

console = default_console()


def _known_errors() -> tuple[type[BaseException], ...]:
    from biaslens.api import RunNotComplete
    from biaslens.config import ConfigError
    from biaslens.datasets.generations import GenerationsFileError
    from biaslens.datasets.holistic import DatasetError
    from biaslens.models.base import ModelError
    from biaslens.paths import NoSpaceLeft
    from biaslens.report.run_folder import RunFolderBusy
    from biaslens.suites import UnknownSuite

    return (ConfigError, DatasetError, GenerationsFileError, ModelError, RunFolderBusy, RunNotComplete, UnknownSuite,
            FileNotFoundError, NoSpaceLeft)


def fail(e: BaseException | str, code: int = 2) -> None:
    """Print one "error:" line (escaped: never read as markup) and exit with ``code``."""
    from rich.markup import escape

    # escaped: messages quote file contents and server answers, whose "[...]" is not markup
    console.print(f"[bold red]error:[/bold red] {escape(str(e))}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def guard(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        console.print("interrupted: finished batches are cached; run the same command again to resume")
        raise typer.Exit(130) from None
    except _known_errors() as e:
        fail(e)
    except Exception as e:  # noqa: BLE001 - last line of defence, still one clear line
        if os.environ.get("BIASLENS_DEBUG"):
            raise
        fail(f"{type(e).__name__}: {e} (set BIASLENS_DEBUG=1 for the traceback)", code=1)


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug details (cache keys, batches).")):
    # The terminal gets warnings (or everything with -v); run.log gets INFO from the run folder.
    handler = logging.StreamHandler()
    handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, handlers=[handler])
    from biaslens.environment import apply_environment_policy

    apply_environment_policy()  # the API applies it too (a notebook behaves the same)
    if not verbose:
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()
        except ImportError:  # pragma: no cover - core dependency
            pass


@app.command()
def run(
    suite: str = typer.Argument("holistic-likelihood", help="Suite to run (see `biaslens suites`)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="'smollm2-135m' (embedded, default), 'fake', a Hugging Face id or a local folder."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run folder (default runs/<suite>-<model>-<time>)."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML file with any RunConfig field; flags override it."),
    set_: Optional[list[str]] = typer.Option(None, "--set", "-S", metavar="SECTION.FIELD=VALUE", help="Any RunConfig field as section.field=value (YAML value), e.g. -S fairpair.temperature=0.8; repeatable; applied last."),
    sample: Optional[int] = typer.Option(None, help="About N sentences, stratified, whole (axis, template, descriptor) groups [default 6000]."),
    full: bool = typer.Option(False, "--full", help="Every sentence (HolisticBias v1.0: 460,980)."),
    axes: Optional[str] = typer.Option(None, help="Comma-separated axes, e.g. ability,age."),
    templates: Optional[str] = typer.Option(None, help="Templates separated by '|', e.g. 'I love {plural_noun_phrase}.'"),
    seed: Optional[int] = typer.Option(None, help="Seed for sampling [default 0]."),
    dataset_dir: Optional[Path] = typer.Option(None, help="HolisticBias folder in the official format (default: built-in v1.0)."),
    extra_dataset_file: Optional[list[Path]] = typer.Option(None, "--extra-dataset-file", metavar="<file>", help="Your own descriptors/nouns/templates JSON, merged in (repeatable)."),
    device: Optional[str] = typer.Option(None, help="cpu, cuda, cuda:N, mps [default cpu]."),
    dtype: Optional[str] = typer.Option(None, help="float32 (exact, default), bf16-fast (CPU with native bfloat16: ~2x, median perplexity error 0.5%, see docs/benchmarks.md), bfloat16, float16."),
    batch_size: Optional[int] = typer.Option(None, help="Texts per forward pass [default per backend: causal 256 scoring, 32 generation]."),
    start_token: Optional[str] = typer.Option(None, help="Document-start token prepended before each text (default chosen per model, recorded in run.json)."),
    no_start_token: bool = typer.Option(False, "--no-start-token", help="Reference-compatible scoring: no start token, the first token is not scored."),
    trust_remote_code: bool = typer.Option(False, help="Allow the model repository's own code to run."),
    compile: bool = typer.Option(False, "--compile", help="Score through torch.compile (~2 min to compile; padded batches, no prefix packing): for large runs of models the packed path does not cover (Llama, Qwen2/3 and GPT-2 are packed and faster without it)."),
    backend: Optional[str] = typer.Option(None, "--backend", help="auto (embedded/fake/Hugging Face by name, default), hf, vllm (vLLM offline engine) or openai (an OpenAI-compatible server, with --base-url).", rich_help_panel="Backend and executor"),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="openai backend: server URL, e.g. http://127.0.0.1:8000/v1.", rich_help_panel="Backend and executor"),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="openai backend: environment variable holding the API key [default OPENAI_API_KEY]; the key is never logged or stored.", rich_help_panel="Backend and executor"),
    api: Optional[str] = typer.Option(None, "--api", help="openai backend: completions (default) or chat, for generation.", rich_help_panel="Backend and executor"),
    max_concurrency: Optional[int] = typer.Option(None, "--max-concurrency", help="openai backend: requests in flight [default 8].", rich_help_panel="Backend and executor"),
    requests_per_second: Optional[float] = typer.Option(None, "--requests-per-second", help="openai backend: rate limit [default unlimited].", rich_help_panel="Backend and executor"),
    executor: Optional[str] = typer.Option(None, "--executor", help="local (default) or ray: batches as Ray Data batch inference, one model replica per actor.", rich_help_panel="Backend and executor"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="ray executor: cluster address [default: start a local cluster].", rich_help_panel="Backend and executor"),
    ray_workers: Optional[int] = typer.Option(None, "--ray-workers", help="ray executor: model replicas [default one per GPU, 2 on CPU].", rich_help_panel="Backend and executor"),
    cache_dir: Optional[Path] = typer.Option(None, help="Call-cache folder (default ~/.cache/biaslens)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the call cache."),
    alpha: Optional[float] = typer.Option(None, help="Significance level [default 0.05]."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="redditbias: a RedditBias checkout (data/<bias_type>/...); without it, phrases come from the bias specifications.", rich_help_panel="RedditBias"),
    split: Optional[str] = typer.Option(None, "--split", help="redditbias: paired files to use, test or valid [default test].", rich_help_panel="RedditBias"),
    perplexity_column: Optional[str] = typer.Option(None, "--perplexity-column", help="redditbias: evaluate this precomputed column of the paired files (no model), e.g. perplexity.", rich_help_panel="RedditBias"),
    bias_types: Optional[str] = typer.Option(None, "--bias-types", help="redditbias: comma-separated bias types [default all: religion1,religion2,race,gender,orientation].", rich_help_panel="RedditBias"),
    spec_file: Optional[list[Path]] = typer.Option(None, "--spec-file", metavar="<file>", help="redditbias: your own bias specification, YAML or JSON (repeatable).", rich_help_panel="RedditBias"),
    counterfactual_mode: Optional[str] = typer.Option(None, "--counterfactual-mode", help="redditbias: default (shared term matcher: whole words with plural/possessive/compound forms, case kept) or reference (the authors' lowercase substring swap with their t1<->t2 exchange).", rich_help_panel="RedditBias"),
    outlier_removal: Optional[str] = typer.Option(None, "--outlier-removal", help="redditbias: auto (off for the *_reduced files), on or off.", rich_help_panel="RedditBias"),
    reference_text: Optional[Path] = typer.Option(None, "--reference-text", help="redditbias: text file for LM perplexity [default humanref6k.txt under --data-dir].", rich_help_panel="RedditBias"),
    fairpair_occupations: Optional[str] = typer.Option(None, "--fairpair-occupations", help="fairpair: comma-separated occupations [default the paper's 60; 5 on the embedded model].", rich_help_panel="FairPair"),
    fairpair_n_occupations: Optional[int] = typer.Option(None, "--fairpair-n-occupations", help="fairpair: the first N of the paper's occupations.", rich_help_panel="FairPair"),
    fairpair_names: Optional[list[str]] = typer.Option(None, "--fairpair-names", metavar="<pair>", help="fairpair: name pair 'John/Jane' or 'John:man/Jane:woman' (repeatable) [default John:man/Jane:woman].", rich_help_panel="FairPair"),
    fairpair_descriptors: Optional[str] = typer.Option(None, "--fairpair-descriptors", help="fairpair: comma-separated descriptors before the noun, e.g. 'young,old' (HolisticBias terms).", rich_help_panel="FairPair"),
    fairpair_samples: Optional[int] = typer.Option(None, "--fairpair-samples", help="fairpair: continuations per prompt [100; 20 on the embedded model].", rich_help_panel="FairPair"),
    fairpair_max_new_tokens: Optional[int] = typer.Option(None, "--fairpair-max-new-tokens", help="fairpair: tokens per continuation [128; 32 on the embedded model].", rich_help_panel="FairPair"),
    fairpair_top_p: Optional[float] = typer.Option(None, "--fairpair-top-p", help="fairpair: nucleus sampling top-p [default 0.9].", rich_help_panel="FairPair"),
    fairpair_temperature: Optional[float] = typer.Option(None, "--fairpair-temperature", help="fairpair: sampling temperature [default 1.0].", rich_help_panel="FairPair"),
    fairpair_chat: bool = typer.Option(False, "--fairpair-chat", help="fairpair: wrap prompts in the model's chat template (default: plain continuation).", rich_help_panel="FairPair"),
    fairpair_perturber: Optional[str] = typer.Option(None, "--fairpair-perturber", help="fairpair: rule (default, deterministic) or llm (the paper's instruction).", rich_help_panel="FairPair"),
    fairpair_perturber_model: Optional[str] = typer.Option(None, "--fairpair-perturber-model", help="fairpair: model for --fairpair-perturber llm [default the evaluated model].", rich_help_panel="FairPair"),
    fairpair_mapping_file: Optional[Path] = typer.Option(None, "--fairpair-mapping-file", help="fairpair: your own word-pair YAML for the rule perturber.", rich_help_panel="FairPair"),
    fairpair_dissimilarities: Optional[str] = typer.Option(None, "--fairpair-dissimilarities", help="fairpair: comma-separated, from jaccard,sentiment,embedding [default all three].", rich_help_panel="FairPair"),
    fairpair_k_folds: Optional[int] = typer.Option(None, "--fairpair-k-folds", help="fairpair: folds of the k-fold variant [default 10].", rich_help_panel="FairPair"),
    fairpair_generations: Optional[Path] = typer.Option(None, "--fairpair-generations", help="fairpair: precomputed continuations, JSONL, CSV or Parquet with prompt and response (no model).", rich_help_panel="FairPair"),
    gen_max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", help="holistic-generation: tokens per response [default 32].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_min_new_tokens: Optional[int] = typer.Option(None, "--min-new-tokens", help="holistic-generation: minimum response tokens (paper: 20) [default 0].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_num_beams: Optional[int] = typer.Option(None, "--num-beams", help="holistic-generation: beam size (paper: 10 DialoGPT, 3 BlenderBot) [default 1, greedy].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_no_repeat_ngram_size: Optional[int] = typer.Option(None, "--no-repeat-ngram-size", help="holistic-generation: block repeated n-grams in the response [default 3, as the paper].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_do_sample: bool = typer.Option(False, "--do-sample", help="holistic-generation: sample (seeded) instead of greedy/beam search.", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_n: Optional[int] = typer.Option(None, "--num-responses", help="holistic-generation: responses per prompt (needs --do-sample) [default 1].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_temperature: Optional[float] = typer.Option(None, "--temperature", help="holistic-generation: sampling temperature [default 1.0].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_top_p: Optional[float] = typer.Option(None, "--top-p", help="holistic-generation: nucleus sampling top-p [default 0.9].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_persona: Optional[list[str]] = typer.Option(None, "--persona", metavar="<line>", help="holistic-generation: a context line before the prompt, e.g. 'your persona: I love dogs.' (repeatable; paper: two).", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_generations: Optional[Path] = typer.Option(None, "--generations", help="holistic-generation: precomputed responses, JSONL, CSV or Parquet with prompt (or prompt_id) and response (no model).", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_nouns_per_gender: Optional[int] = typer.Option(None, "--nouns-per-gender", help="holistic-generation: sampled runs keep N nouns per noun gender [default 1].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_style_classifier: Optional[str] = typer.Option(None, "--style-classifier", help="holistic-generation: head (offline trained head, default), zero-shot (offline) or a Hugging Face text-classification model.", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_style_inventory: Optional[Path] = typer.Option(None, "--style-inventory", help="holistic-generation: your own styles YAML for the zero-shot classifier.", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_style_clusters: Optional[Path] = typer.Option(None, "--style-clusters", help="holistic-generation: clusters YAML (cluster: [style, ...]) [default the paper's six].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_offensiveness_classifier: Optional[str] = typer.Option(None, "--offensiveness-classifier", help="holistic-generation/-offensiveness: auto (default: $BIASLENS_TOXICITY_MODEL, else Detoxify, else the offline lexical screen alt-profanity-check), alt-profanity-check, detoxify or a Hugging Face classifier.", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_n_permutations: Optional[int] = typer.Option(None, "--n-permutations", help="holistic-generation: noise-floor permutations [default 200; 0 off].", rich_help_panel="HolisticBias generation / offensiveness"),
    gen_variants: Optional[bool] = typer.Option(None, "--variants/--no-variants", help="holistic-generation: seeded stylistic variants of the prompts, as the paper (A.3) [default on].", rich_help_panel="HolisticBias generation / offensiveness"),
    community_model: Optional[list[str]] = typer.Option(None, "--community-model", metavar="<model>", help="community: a model to compare (repeatable): a folder from `biaslens finetune community` or a base model; --model, when given, comes first.", rich_help_panel="Community"),
    community_n: Optional[int] = typer.Option(None, "--n", help="community: generations per prompt (default 50, as the paper).", rich_help_panel="Community"),
    community_generations: Optional[list[Path]] = typer.Option(None, "--community-generations", metavar="<file>", help="community: precomputed replies, JSONL, CSV or Parquet with prompt (or prompt_id), response and optionally model (repeatable).", rich_help_panel="Community"),
    community_templates: Optional[Path] = typer.Option(None, "--community-templates", help="community: your own templates YAML (default: the paper's six).", rich_help_panel="Community"),
    community_keywords: Optional[Path] = typer.Option(None, "--community-keywords", help="community: your own demographics/keywords YAML (default: the paper's 15 demographics).", rich_help_panel="Community"),
    community_dimensions: Optional[str] = typer.Option(None, "--dimensions", help="community: comma-separated dimensions, e.g. gender,religion (default all five).", rich_help_panel="Community"),
    toxicity_classifier: Optional[str] = typer.Option(None, "--toxicity-classifier", help="community: auto (default: $BIASLENS_TOXICITY_MODEL, else Detoxify, else the offline lexical screen alt-profanity-check), alt-profanity-check, detoxify or a Hugging Face classifier.", rich_help_panel="Community"),
    no_identity_masking: bool = typer.Option(False, "--no-identity-masking", help="community, holistic-offensiveness, holistic-generation: headline toxicity/offensiveness scored on the text as generated (paper-faithful) instead of with the identity term replaced by a neutral placeholder; the other figure is still shown beside it."),
    json_output: bool = typer.Option(False, "--json", help=JSON_HELP),  # CLI-only: not a RunConfig field
):
    """Run a bias suite and write a run folder (run.json, Parquet results, metrics.json, report.html)."""
    a = dict(locals())
    with command_output(a.pop("json_output")) as output:
        output.emit(run_json(guard(_run, **a, results_console=output.results)))


def _run(**a):
    from biaslens.api import run as api_run
    from biaslens.config import ConfigError, RunConfig

    overrides: dict = {"suite": a["suite"]}
    m: dict = {}
    for key in ("device", "dtype", "batch_size", "start_token", "backend", "base_url", "api_key_env", "api",
                "max_concurrency", "requests_per_second"):
        if a[key] is not None:
            m[key] = a[key]
    ex = {f: a[k] for k, f in (("executor", "kind"), ("ray_address", "ray_address"), ("ray_workers", "workers"))
          if a[k] is not None}
    if ex:
        overrides["executor"] = ex
    if a["model"] is not None:
        m["name"] = a["model"]
    if a["no_start_token"]:
        m["score_first_token"] = False
    if a["trust_remote_code"]:
        m["trust_remote_code"] = True
    if a["compile"]:
        m["compile"] = True
    if m:
        overrides["model"] = m
    for key in ("out", "sample", "seed", "dataset_dir", "cache_dir", "alpha"):
        if a[key] is not None:
            overrides[key] = a[key]
    if a["full"]:
        overrides["full"] = True
    if a["no_cache"]:
        overrides["use_cache"] = False
    if a["axes"]:
        overrides["axes"] = [s.strip() for s in a["axes"].split(",") if s.strip()]
    if a["templates"]:
        overrides["templates"] = [s.strip() for s in a["templates"].split("|") if s.strip()]
    if a["extra_dataset_file"]:
        overrides["extra_dataset_files"] = list(a["extra_dataset_file"])
    rb: dict = {k: a[k] for k in ("data_dir", "split", "perplexity_column", "counterfactual_mode", "outlier_removal",
                                  "reference_text") if a[k] is not None}
    if a["bias_types"]:
        rb["bias_types"] = [s.strip() for s in a["bias_types"].split(",") if s.strip()]
    if a["spec_file"]:
        rb["spec_files"] = list(a["spec_file"])
    if rb:
        overrides["redditbias"] = rb
    fp: dict = {k[len("fairpair_"):]: a[k] for k in ("fairpair_n_occupations", "fairpair_samples",
                                                        "fairpair_max_new_tokens", "fairpair_top_p",
                                                        "fairpair_temperature", "fairpair_perturber",
                                                        "fairpair_perturber_model", "fairpair_mapping_file",
                                                        "fairpair_k_folds") if a[k] is not None}
    for key in ("occupations", "descriptors", "dissimilarities"):
        if a[f"fairpair_{key}"] is not None:
            fp[key] = [s.strip() for s in a[f"fairpair_{key}"].split(",") if s.strip() or key == "descriptors"]
    if a["fairpair_names"]:
        fp["name_pairs"] = list(a["fairpair_names"])
    if a["fairpair_chat"]:
        fp["chat"] = True
    if a["fairpair_generations"] is not None:
        fp["generations_file"] = a["fairpair_generations"]
    if fp:
        overrides["fairpair"] = fp
    # "is", not "in": 0 == False, and --max-new-tokens 0 must reach validation, not vanish
    gen: dict = {k[len("gen_"):]: a[k] for k in a
                 if k.startswith("gen_") and not (a[k] is None or a[k] is False or a[k] == [])}
    if a["gen_variants"] is False:  # an explicit --no-variants (False is "not given" for the other flags)
        gen["variants"] = False
    if "persona" in gen:
        gen["persona"] = list(gen["persona"])
    if "generations" in gen:
        gen["generations_file"] = gen.pop("generations")
    if a["no_identity_masking"]:
        gen["identity_masking"] = False
    if gen:
        overrides["generation"] = gen
    com: dict = {f: list(a[k]) for k, f in (("community_model", "models"), ("community_generations", "generations_files"))
                 if a[k]}
    com.update({f: a[k] for k, f in (("community_n", "n"), ("community_templates", "templates_file"),
                                     ("community_keywords", "keywords_file"), ("toxicity_classifier", "toxicity_classifier"))
                if a[k] is not None})
    if a["no_identity_masking"]:
        com["identity_masking"] = False
    if a["community_dimensions"]:
        com["dimensions"] = [s.strip() for s in a["community_dimensions"].split(",") if s.strip()]
    if com:
        overrides["community"] = com
    from biaslens.config import deep_merge, dotted_overrides

    overrides = deep_merge(overrides, dotted_overrides(a["set_"] or []))
    if a["config"]:
        cfg = RunConfig.from_yaml(a["config"], **overrides)
    else:
        try:
            cfg = RunConfig.validated(overrides, source="flags")
        except ConfigError as e:
            raise ConfigError(_name_flags(str(e))) from None
    return api_run(cfg, console=console, results_console=a["results_console"])


#: the prefix of a section's flags where it differs from the section's name
_FLAG_PREFIX = {"generation": "gen_", "model": "", "executor": ""}


def _name_flags(message: str) -> str:
    """'flags: field 'fairpair.perturber': ...' -> '--fairpair-perturber: ...': an invalid value
    is reported under the flag the user typed, not the configuration's internal field."""
    import re

    params = {p.name: p for p in typer.main.get_command(app).commands["run"].params
              if getattr(p, "param_type_name", "") == "option"}

    def flag(m: re.Match) -> str:
        path = m.group(1).split(".")
        section, last = path[0], path[-1]
        for name in ("_".join(path), _FLAG_PREFIX.get(section, f"{section}_") + last, last):
            if name in params:
                return max(params[name].opts, key=len)
        return f"field '{m.group(1)}'"

    return re.sub(r"^flags: field '([\w.]+)'", flag, message, flags=re.M)


@app.command()
def suites():
    """List the available suites."""
    from biaslens.suites import PLANNED, SUITES

    for name in SUITES:
        typer.echo(name)
    if PLANNED:
        console.print(f"[dim]planned: {', '.join(PLANNED)}[/dim]")


@app.command()
def report(run_dir: Path = typer.Argument(..., help="A finished run folder or bias card folder.")):
    """Recompute the metrics and re-render report.html from a run folder's stored results (no model calls); a bias card folder re-renders each method and card.html."""
    guard(_report, run_dir)


def _report(run_dir: Path):
    from biaslens.api import rerender
    from biaslens.bias_card import is_card, rerender_card
    from biaslens.config import ConfigError

    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such folder")
    path = rerender_card(run_dir, console=console) if is_card(run_dir) else rerender(run_dir, console=console)
    typer.echo(str(path))


@dataset_app.command("holistic")
def dataset_holistic(
    out: Path = typer.Option(..., "--out", "-o", help="Output file: .csv or .parquet."),
    dataset_dir: Optional[Path] = typer.Option(None, help="Folder in the official HolisticBias format (default: built-in v1.0)."),
    extra_dataset_file: Optional[list[Path]] = typer.Option(None, "--extra-dataset-file", metavar="<file>", help="Your own JSON files, merged in (repeatable)."),
    variants: bool = typer.Option(False, "--variants", help="Apply the paper's four stylistic variations (seeded)."),
    seed: int = typer.Option(0, help="Seed for --variants."),
    fix_articles: bool = typer.Option(False, "--fix-articles", help="Correct 'a 80-year-old' -> 'an 80-year-old' etc. (deviates from the reference)."),
):
    """Write the HolisticBias sentence table."""
    guard(_dataset_holistic, out, dataset_dir, extra_dataset_file, variants, seed, fix_articles)


def _dataset_holistic(out, dataset_dir, extra, variants, seed, fix_articles):
    from biaslens.config import ConfigError
    from biaslens.datasets.holistic import (
        add_variants,
        build_sentence_table,
        build_sentences,
        load_holistic_dataset,
        write_table,
    )

    if not out.name.lower().endswith((".csv", ".csv.gz", ".parquet", ".pq")):
        raise ConfigError(f"--out {out}: unsupported format; use a .csv, .csv.gz or .parquet file name")
    ds = load_holistic_dataset(dataset_dir, extra_files=list(extra or []))
    if variants:
        df = add_variants(build_sentences(ds, fix_articles=fix_articles), seed=seed)
        n, n_unique = len(df), df["text"].nunique()
    else:
        # the Arrow path never builds a pandas frame: a third of the memory
        df = build_sentence_table(ds, fix_articles=fix_articles)
        n, n_unique = df.num_rows, len(df.column("text").unique())
    out.parent.mkdir(parents=True, exist_ok=True)
    write_table(df, out)
    typer.echo(f"wrote {n:,} sentences ({n_unique:,} unique texts) to {out}")  # a result: standard output


@cache_app.command("info")
def cache_info(cache_dir: Optional[Path] = typer.Option(None, help="Cache folder (default ~/.cache/biaslens).")):
    """Where the cache is and how many calls it holds."""
    from biaslens.engine.cache import CallCache
    from biaslens.paths import cache_dir as default_cache

    path = (cache_dir or default_cache()) / "calls.sqlite"
    if not path.exists():
        typer.echo(f"{path}: empty (no cache yet)")
        return
    c = CallCache(path)
    typer.echo(f"{path}: {len(c):,} cached calls, {path.stat().st_size / 1e6:.1f} MB")


@cache_app.command("check")
def cache_check(cache_dir: Optional[Path] = typer.Option(None, help="Cache folder (default ~/.cache/biaslens).")):
    """Run SQLite's integrity check on the cache (read-only); exit 1 if it is damaged."""
    guard(_cache_check, cache_dir)


def _cache_check(cache_dir: Optional[Path]) -> None:
    from biaslens.engine.cache import check_integrity
    from biaslens.paths import cache_dir as default_cache

    path = (cache_dir or default_cache()) / "calls.sqlite"
    if not path.exists():
        typer.echo(f"{path}: empty (no cache yet)")
        return
    problems = check_integrity(path)
    if not problems:
        typer.echo(f"{path}: ok")
        return
    lines = [line for p in problems for line in p.splitlines() if not line.startswith("***")] or problems
    fail(f"{path} is damaged ({lines[0]}; {len(lines)} finding(s) in all): the next run moves it aside and "
          "computes again what it held; or delete it", code=1)


@cache_app.command("clear")
def cache_clear(cache_dir: Optional[Path] = typer.Option(None, help="Cache folder (default ~/.cache/biaslens).")):
    """Delete every cached call."""
    from biaslens.engine.cache import CallCache
    from biaslens.paths import cache_dir as default_cache

    path = (cache_dir or default_cache()) / "calls.sqlite"
    if path.exists():
        CallCache(path).clear()
    typer.echo(f"cleared {path}")


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
