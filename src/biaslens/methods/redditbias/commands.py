"""RedditBias's commands: ``biaslens debias {cda,lmd,add,hd}`` (debiasing, one command per method),
``biaslens downstream {dst,generation}`` (dialog tasks that check a debiased model stays useful) and
``biaslens dataset redditbias``; registered by the CLI from :data:`biaslens.registry.COMMANDS`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from biaslens.cli.common import TABLE_FORMAT, TABLE_OUT

if TYPE_CHECKING:
    import pandas as pd

from biaslens.cli.options import generated_command, load_config
from biaslens.methods.redditbias.options import DebiasConfig, DownstreamConfig
from biaslens.options import flag_specs

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


#: the flags of every debias command: one per field of DebiasConfig (biaslens.options)
DEBIAS_FLAGS = flag_specs(DebiasConfig)


def _make_command(method: str):
    def command(**a):
        from biaslens.cli.common import guard

        guard(_debias, method, a)

    command.__doc__ = _HELP[method]
    command.__name__ = f"debias_{method}"
    return generated_command(command, [], DEBIAS_FLAGS, "debias", example="-S epochs=1")


for _method in ("cda", "lmd", "add", "hd"):
    debias_app.command(_method)(_make_command(_method))


def _debias(method: str, a: dict) -> None:
    from biaslens.cli.common import console
    from biaslens.config import ConfigError
    from biaslens.methods.redditbias.dataset import resolve_specs
    from biaslens.methods.redditbias.mitigation import DebiasOptions, debias, load_debias_data, load_grid, run_grid
    from biaslens.mitigation.training import TrainingConfig

    c = load_config(DebiasConfig, DEBIAS_FLAGS, a)
    if c.cda_mode is not None and method != "cda":
        raise ConfigError(f"--cda-mode is for `biaslens debias cda`, not {method}")
    if c.cda_sides != "one-sided" and method != "cda":
        raise ConfigError(f"--cda-sides is for `biaslens debias cda`, not {method}")
    if c.data_dir is not None and not c.data_dir.is_dir():
        raise ConfigError(f"--data-dir {c.data_dir}: not a folder")
    spec = resolve_specs([c.bias_type], list(c.spec_files))[c.bias_type]
    if c.data_dir is not None:
        load_debias_data(spec, c.data_dir)  # a missing file fails before the model loads
    from biaslens.models import model_folder

    model_path = model_folder(c.model)
    cfg = TrainingConfig(epochs=c.epochs, learning_rate=c.lr, batch_size=c.batch_size, grad_accum=c.grad_accum,
                         max_length=c.max_length, lm_weight=c.lm_weight, extra_weight=c.debias_weight,
                         save_steps=c.save_steps, seed=c.seed, max_steps=c.max_steps, device=c.device)
    opts = DebiasOptions(method=method, spec=spec, data_dir=c.data_dir, cda_mode=c.cda_mode or "targets",
                         counterfactual_mode=c.counterfactual_mode, max_template_pairs=c.max_template_pairs,
                         training=cfg, score_first_token=c.score_first_token, cda_sides=c.cda_sides)
    out: Path = c.out
    data_note = (f"text files under {c.data_dir}" if c.data_dir else
                 "phrases built from the specification (no --data-dir)")
    console.print(f"[bold]debias {method}[/bold] {model_path} on {spec.name}: training data = {data_note}")
    from biaslens.cli.output import results_console

    results = results_console()  # the outcome on standard output; progress stays on standard error
    if c.grid or c.grid_file:
        points = load_grid(c.grid_file, method)
        state = run_grid(model_path, out, opts, points, progress=console.print)
        best = state["best"]
        results.print(f"grid: {len(state['points'])} points; best {best['name']} (validation t={best['valid_t']:+.3f}, "
                      f"p={best['valid_p']:.3g}); every point in {out / 'grid.json'}")
    else:
        result, record = debias(model_path, out, opts, keep_checkpoints=c.keep_checkpoints)
        resumed = f", resumed from {Path(result.resumed_from).name}" if result.resumed_from else ""
        results.print(f"trained {result.steps} steps (train loss {result.train_loss:.4f}{resumed}); "
                      f"{record['n_train_texts']} texts from {record['data_source']}")
    if c.evaluate:
        run = evaluate_model(out, spec.name, c.data_dir, list(c.spec_files), c.max_reference_lines,
                             c.max_template_pairs, seed=c.seed, score_first_token=c.score_first_token,
                             device=c.device)
        results.print(f"evaluation: {run}", soft_wrap=True)
    results.print(f"model folder: [bold]{out}[/bold]", soft_wrap=True)


def evaluate_model(model_dir: Path, bias_type: str, data_dir: Optional[Path], spec_files: list[Path],
                   max_reference_lines: Optional[int], max_template_pairs: int, seed: int = 0,
                   score_first_token: bool = True, device: str = "cpu") -> Path:
    """The redditbias suite on a debiased model (its bias type, test split) into ``model_dir/eval``."""
    from biaslens.api import run as api_run
    from biaslens.cli.common import console
    from biaslens.config import RunConfig

    rb = {"bias_types": [bias_type], "spec_files": [str(p) for p in spec_files], "max_template_pairs": max_template_pairs}
    if data_dir is not None:
        rb["data_dir"] = str(data_dir)
    if max_reference_lines:
        rb["max_reference_lines"] = max_reference_lines
    cfg = RunConfig.validated({"suite": "redditbias", "out": str(model_dir / "eval"),
                               "model": {"name": str(model_dir), "score_first_token": score_first_token,
                                         "device": device},
                               "seed": seed, "redditbias": rb}, source="debias --evaluate")
    api_run(cfg, console=console)
    return model_dir / "eval"


downstream_app = typer.Typer(rich_markup_mode=None, help="Dialog tasks on your data (RedditBias paper 3.2): state tracking and response "
                                  "generation; results feed `biaslens compare`.", no_args_is_help=True)


def _out(model: str, out: Optional[Path], task: str) -> Path:
    if out is not None:
        return out
    if Path(model).is_dir():
        return Path(model) / f"downstream-{task}"  # found by `biaslens compare MODEL`
    raise typer.BadParameter("--out is needed when --model is not a local folder")


#: the flags of both downstream commands: one per field of DownstreamConfig (biaslens.options)
DOWNSTREAM_FLAGS = flag_specs(DownstreamConfig)


def _command(task: str, doc: str):
    def command(**a):
        from biaslens.cli.common import guard

        guard(_run, task, a)

    command.__doc__ = doc
    command.__name__ = task
    return generated_command(command, [], DOWNSTREAM_FLAGS, f"downstream {task}", example="-S epochs=2")


downstream_app.command("dst")(_command("dst", "Dialog state tracking: binary slot-value classification, F1."))
downstream_app.command("generation")(_command(
    "generation", "Response generation: BLEU-4, NIST-2, METEOR, Entropy-4, Dist-2."))


def _run(task: str, values: dict) -> None:
    from biaslens.cli.output import results_console
    from biaslens.methods.redditbias.downstream import DownstreamDataError, run_dst, run_generation
    from biaslens.models import model_folder

    c = load_config(DownstreamConfig, DOWNSTREAM_FLAGS, values)
    model, train, test = c.model, c.train, c.test
    for f in (train, test):
        if not f.is_file():
            raise DownstreamDataError(f"{f}: no such file")
    folder = _out(model, c.out, task)
    fn = run_dst if task == "dst" else run_generation
    metrics = fn(model_folder(model), train, test, folder, epochs=c.epochs, batch_size=c.batch_size, lr=c.lr,
                 max_steps=c.max_steps)
    console = results_console()  # the scores and the metrics path: standard output
    shown = ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} –" for k, v in metrics["scores"].items())
    console.print(f"{task}: {shown}")
    for k, why in (metrics.get("skipped") or {}).items():
        console.print(f"{k} skipped: {why}")
    console.print(f"metrics: [bold]{folder / 'metrics.json'}[/bold]")


def redditbias_table(bias_types: list[str] | None = None, *, max_pairs: int | None = 400, seed: int = 0) -> pd.DataFrame:
    """The spec-template phrase pairs of each bias type, as a run without --data-dir scores them."""
    from biaslens.methods.redditbias.dataset import resolve_specs, template_pairs

    specs = resolve_specs(bias_types, [])
    parts = [template_pairs(spec, max_pairs=max_pairs, seed=seed).assign(bias_type=name, view="target",
                                                                        source="templates")
             for name, spec in specs.items()]
    import pandas as pd

    df = pd.concat(parts, ignore_index=True)
    return df[["bias_type", "view", "source"] + [c for c in df.columns if c not in ("bias_type", "view", "source")]]


def register(app: typer.Typer, dataset_app: typer.Typer) -> None:
    """The CLI's RedditBias commands."""
    app.add_typer(debias_app, name="debias")
    app.add_typer(downstream_app, name="downstream")

    @dataset_app.command("redditbias")
    def dataset_redditbias(
        out: Path = TABLE_OUT,
        format: Optional[str] = TABLE_FORMAT,
        bias_types: Optional[str] = typer.Option(None, "--bias-types", help="Comma-separated bias types [default all five]."),
        max_pairs: int = typer.Option(400, "--max-pairs", help="Pairs per bias type, seeded sample (as a run without --data-dir)."),
        seed: int = typer.Option(0, help="Seed of the sample."),
    ):
        """Write the RedditBias phrase pairs built from the bias specifications."""
        from biaslens.cli.common import guard
        from biaslens.cli.export import write_dataset

        types = [s.strip() for s in bias_types.split(",") if s.strip()] if bias_types else None
        guard(write_dataset, "redditbias", lambda: redditbias_table(types, max_pairs=max_pairs, seed=seed), out, format,
              "biaslens.methods.redditbias.dataset.hf_card")
