"""``biaslens debias {cda,lmd,add,hd}``: RedditBias debiasing, one command per method."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from biaslens.cli.options import generated_command, load_config
from biaslens.methods.redditbias.options import DebiasConfig
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
