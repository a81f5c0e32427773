"""``biaslens debias {cda,lmd,add,hd}``: RedditBias debiasing, one command per method."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

debias_app = typer.Typer(rich_markup_mode=None,
    help="Debias a causal LM for one RedditBias bias type (paper section 4): CDA, LMD, ADD or HD. "
         "The output folder is a model folder every suite can evaluate (--model DIR).",
    no_args_is_help=True,
)

_HELP = {
    "cda": "Counterfactual data augmentation: train on the phrases plus their target-swapped (CTDA, default) "
           "or attribute-swapped (CADA, --cda-mode attributes) copies, plain LM loss.",
    "lmd": "Language-model debiasing loss: equalize the probabilities of paired target terms where a target occurs.",
    "add": "Attribute distance debiasing: equalize the cosine of stereotypical attributes to paired target terms.",
    "hd": "Hard debiasing: remove the attributes' component in the target pairs' bias subspace.",
}


def _make_command(method: str):
    def command(
        model: str = typer.Option("smollm2-135m", "--model", "-m", help="'smollm2-135m' (embedded), a local model folder or a Hugging Face id."),
        bias_type: str = typer.Option(..., "--bias-type", "-b", help="religion1, religion2, race, gender, orientation or the name in --spec-file."),
        out: Path = typer.Option(..., "--out", "-o", help="Output model folder (re-run the same command to resume)."),
        data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="A RedditBias checkout: trains on text_files/<type>/<type>_bias_manual_train.txt; without it, on phrases built from the specification."),
        spec_file: Optional[list[Path]] = typer.Option(None, "--spec-file", help="Your own bias specification, YAML or JSON (repeatable)."),
        lm_weight: float = typer.Option(0.01, "--lm-weight", help="Weight of the LM loss (lmd/add/hd; CDA always uses 1)."),
        debias_weight: float = typer.Option(10.0, "--debias-weight", help="Weight of the debiasing loss (lmd/add/hd)."),
        epochs: float = typer.Option(2.0, "--epochs", help="Training epochs (paper: 2)."),
        batch_size: int = typer.Option(8, "--batch-size", help="Texts per step."),
        grad_accum: int = typer.Option(1, "--grad-accum", help="Gradient accumulation steps."),
        lr: float = typer.Option(5e-5, "--lr", help="AdamW learning rate (paper: 5e-5)."),
        max_steps: int = typer.Option(-1, "--max-steps", help="Stop after N optimizer steps (-1: run the epochs)."),
        max_length: int = typer.Option(128, "--max-length", help="Tokens per text, the start token included (longer texts are cut)."),
        save_steps: int = typer.Option(50, "--save-steps", help="Checkpoint every N steps (resume point)."),
        seed: int = typer.Option(0, "--seed", help="Training seed."),
        cda_mode: Optional[str] = typer.Option(None, "--cda-mode", help="cda: targets (CTDA, default) or attributes (CADA)."),
        counterfactual_mode: str = typer.Option("default", "--counterfactual-mode", help="cda: default (shared term matcher: whole words with plural/possessive forms, case kept) or reference (the authors' lowercase substring swap)."),
        cda_sides: str = typer.Option("one-sided", "--cda-sides", help="cda targets: one-sided (the paper: minoritized -> dominant copies) or two-sided (copies in both directions)."),
        max_template_pairs: int = typer.Option(400, "--max-template-pairs", help="Without --data-dir: at most this many template phrases."),
        grid: bool = typer.Option(False, "--grid", help="Run the reference grid (batch 4/8/16, grad. accum. 1/5/8, lm 0.001/0.01, debias 10/50/100) and keep the model with the highest validation p-value."),
        grid_file: Optional[Path] = typer.Option(None, "--grid-file", help="Your own grid, YAML: hyperparameter -> list of values (implies --grid)."),
        evaluate: bool = typer.Option(True, "--evaluate/--no-evaluate", help="Afterwards, run the redditbias suite (test split, LM perplexity) on the result into OUT/eval for `biaslens compare`."),
        max_reference_lines: Optional[int] = typer.Option(None, "--max-reference-lines", help="Evaluation: LM perplexity on the first N lines of the reference text only."),
        no_start_token: bool = typer.Option(False, "--no-start-token", help="Grid validation and --evaluate score phrases the authors' way: exp(mean loss over tokens 2..n), no start token (recorded; `compare` will not mix definitions)."),
        keep_checkpoints: bool = typer.Option(False, "--keep-checkpoints", help="Keep OUT/checkpoints after success (optimizer state: large)."),
    ):
        from biaslens.cli.app import guard

        guard(_debias, method, dict(locals()))

    command.__doc__ = _HELP[method]
    command.__name__ = f"debias_{method}"
    return command


for _method in ("cda", "lmd", "add", "hd"):
    debias_app.command(_method)(_make_command(_method))


def _debias(method: str, a: dict) -> None:
    from biaslens.cli.app import console
    from biaslens.cli.output import results_console
    from biaslens.config import ConfigError
    from biaslens.datasets.redditbias import resolve_specs
    from biaslens.mitigation.redditbias import CDA_MODES, DebiasOptions, debias, load_debias_data, load_grid, run_grid
    from biaslens.mitigation.training import TrainingConfig

    if a["cda_mode"] is not None and method != "cda":
        raise ConfigError(f"--cda-mode is for `biaslens debias cda`, not {method}")
    cda_mode = a["cda_mode"] or "targets"
    if cda_mode not in CDA_MODES:
        raise ConfigError(f"--cda-mode {cda_mode!r}: choose targets or attributes")
    if a["cda_sides"] not in ("one-sided", "two-sided"):
        raise ConfigError(f"--cda-sides {a['cda_sides']!r}: choose one-sided or two-sided")
    if a["cda_sides"] != "one-sided" and method != "cda":
        raise ConfigError(f"--cda-sides is for `biaslens debias cda`, not {method}")
    if a["counterfactual_mode"] not in ("default", "reference"):
        raise ConfigError(f"--counterfactual-mode {a['counterfactual_mode']!r}: choose default or reference")
    for key in ("batch_size", "grad_accum", "max_length", "save_steps", "max_template_pairs"):
        if a[key] < 1:
            raise ConfigError(f"--{key.replace('_', '-')} must be at least 1, got {a[key]}")
    for key in ("lm_weight", "debias_weight", "lr", "epochs"):
        if a[key] < 0 or (key in ("lr", "epochs") and a[key] == 0):
            raise ConfigError(f"--{key.replace('_', '-')} must be positive, got {a[key]}")
    if a["data_dir"] is not None and not a["data_dir"].is_dir():
        raise ConfigError(f"--data-dir {a['data_dir']}: not a folder")
    spec = resolve_specs([a["bias_type"]], list(a["spec_file"] or []))[a["bias_type"]]
    if a["data_dir"] is not None:
        load_debias_data(spec, a["data_dir"])  # a missing file fails before the model loads
    from biaslens.models import model_folder

    model_path = model_folder(a["model"])
    cfg = TrainingConfig(epochs=a["epochs"], learning_rate=a["lr"], batch_size=a["batch_size"], grad_accum=a["grad_accum"],
                         max_length=a["max_length"], lm_weight=a["lm_weight"], extra_weight=a["debias_weight"],
                         save_steps=a["save_steps"], seed=a["seed"], max_steps=a["max_steps"])
    opts = DebiasOptions(method=method, spec=spec, data_dir=a["data_dir"], cda_mode=cda_mode,
                         counterfactual_mode=a["counterfactual_mode"], max_template_pairs=a["max_template_pairs"],
                         training=cfg, score_first_token=not a["no_start_token"], cda_sides=a["cda_sides"])
    out: Path = a["out"]
    results = results_console()  # the outcome on standard output; progress stays on standard error
    data_note = (f"text files under {a['data_dir']}" if a["data_dir"] else
                 "phrases built from the specification (no --data-dir)")
    console.print(f"[bold]debias {method}[/bold] {model_path} on {spec.name}: training data = {data_note}")
    if a["grid"] or a["grid_file"]:
        points = load_grid(a["grid_file"], method)
        state = run_grid(model_path, out, opts, points, progress=console.print)
        best = state["best"]
        results.print(f"grid: {len(state['points'])} points; best {best['name']} (validation t={best['valid_t']:+.3f}, "
                      f"p={best['valid_p']:.3g}); every point in {out / 'grid.json'}")
    else:
        result, record = debias(model_path, out, opts, keep_checkpoints=a["keep_checkpoints"])
        resumed = f", resumed from {Path(result.resumed_from).name}" if result.resumed_from else ""
        results.print(f"trained {result.steps} steps (train loss {result.train_loss:.4f}{resumed}); "
                      f"{record['n_train_texts']} texts from {record['data_source']}")
    if a["evaluate"]:
        run = evaluate_model(out, spec.name, a["data_dir"], list(a["spec_file"] or []), a["max_reference_lines"],
                             a["max_template_pairs"], seed=a["seed"], score_first_token=not a["no_start_token"])
        results.print(f"evaluation: {run}", soft_wrap=True)
    results.print(f"model folder: [bold]{out}[/bold]", soft_wrap=True)


def evaluate_model(model_dir: Path, bias_type: str, data_dir: Optional[Path], spec_files: list[Path],
                   max_reference_lines: Optional[int], max_template_pairs: int, seed: int = 0,
                   score_first_token: bool = True) -> Path:
    """The redditbias suite on a debiased model (its bias type, test split) into ``model_dir/eval``."""
    from biaslens.api import run as api_run
    from biaslens.cli.app import console
    from biaslens.config import RunConfig

    rb = {"bias_types": [bias_type], "spec_files": [str(p) for p in spec_files], "max_template_pairs": max_template_pairs}
    if data_dir is not None:
        rb["data_dir"] = str(data_dir)
    if max_reference_lines:
        rb["max_reference_lines"] = max_reference_lines
    cfg = RunConfig.validated({"suite": "redditbias", "out": str(model_dir / "eval"),
                               "model": {"name": str(model_dir), "score_first_token": score_first_token},
                               "seed": seed, "redditbias": rb}, source="debias --evaluate")
    api_run(cfg, console=console)
    return model_dir / "eval"
