"""``biaslens check-backend``: compare a backend's log-probabilities with the Hugging Face reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def check_backend_command(
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="Model name: the embedded 'smollm2-135m', a local folder or id (for openai: the served model's name)."),
    backend: str = typer.Option(..., "--backend", help="Backend to check: vllm, openai or hf."),
    reference: Optional[str] = typer.Option(None, "--reference", help="Reference model loaded through transformers (fp32) [default: --model]; 'none' checks batch invariance only."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="openai backend: server URL, e.g. http://127.0.0.1:8000/v1."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="openai backend: environment variable holding the API key."),
    device: str = typer.Option("cpu", help="Device for the candidate (vllm) and the reference."),
    dtype: str = typer.Option("float32", help="Candidate dtype (vllm); the reference is always float32."),
    tolerance: float = typer.Option(1e-3, help="Largest allowed per-token log-probability difference (nats)."),
    batch_size: int = typer.Option(8, help="Batch size compared with batch size 1 (batch invariance)."),
    texts: Optional[Path] = typer.Option(None, "--texts", help="Calibration texts, one per line [default: 24 HolisticBias sentences and 4 harder texts]."),
    json_out: Optional[Path] = typer.Option(None, "--json-out", help="Also write the result as JSON here."),
    cache_dir: Optional[Path] = typer.Option(None, help="Cache folder where the verdict is recorded (default ~/.cache/biaslens)."),
):
    """Check that a backend scores like the Hugging Face reference, and record the verdict.

    Scoring runs (`biaslens run`) with a vllm or openai backend refuse to start when the recorded check for that exact backend failed. Exit code 0: agrees; 1: disagrees.
    """
    args = dict(locals())
    from biaslens.cli.common import guard

    guard(_check, **args)


def _check(model, backend, reference, base_url, api_key_env, device, dtype, tolerance, batch_size, texts,
           json_out, cache_dir) -> None:
    from rich.table import Table

    from biaslens.cli.output import results_console

    console = results_console()  # the table and the verdict are results: standard output
    from biaslens.config import ConfigError
    from biaslens.engine.backend_check import check_backend, record_verdict
    from biaslens.fileio import read_text, write_atomic
    from biaslens.models import load_model

    if backend not in ("hf", "vllm", "openai"):
        raise ConfigError(f"--backend {backend!r}: choose vllm, openai or hf")
    if tolerance <= 0 or batch_size < 1:
        raise ConfigError("--tolerance must be > 0 and --batch-size >= 1")
    calibration = None
    if texts is not None:
        calibration = [line for line in read_text(texts, ConfigError).splitlines() if line.strip()]
        if not calibration:
            raise ConfigError(f"{texts}: no texts (one per line)")
    options = {"base_url": base_url, "api_key_env": api_key_env} if backend == "openai" else {}
    if backend == "openai" and not base_url:
        raise ConfigError("--backend openai needs --base-url")
    candidate = load_model(model, device=device, dtype=dtype, backend=backend, **options)
    ref_name = reference or model
    ref = None if ref_name.lower() == "none" else load_model(ref_name, device=device, dtype="float32")
    console.print(f"checking [bold]{backend}[/bold] ({candidate.info.name}) against "
                  f"{'no reference' if ref is None else ref.info.name + ' through transformers, float32'}")
    result = check_backend(candidate, ref, calibration, tolerance=tolerance, batch_size=batch_size)
    table = Table(title=f"check-backend: {result.n_texts} texts, {result.seconds:.1f} s")
    table.add_column("check")
    table.add_column("max difference (nats)", justify="right")
    table.add_column("tolerance", justify="right")
    table.add_column("ok")
    fmt = lambda v: "–" if v is None else f"{v:.3g}"  # noqa: E731
    if ref is not None:
        ok = result.max_token_diff is not None and result.max_token_diff <= tolerance and not result.token_count_mismatches
        table.add_row("per-token log-prob vs reference", fmt(result.max_token_diff), f"{tolerance:g}", "yes" if ok else "NO")
        table.add_row("sentence log-likelihood vs reference", fmt(result.max_sum_diff), "", "")
        table.add_row("texts tokenized differently", str(len(result.token_count_mismatches)), "0",
                      "yes" if not result.token_count_mismatches else "NO")
    table.add_row(f"batch 1 vs batch {batch_size}", fmt(result.max_batch_diff), f"{tolerance:g}",
                  "yes" if result.max_batch_diff <= tolerance else "NO")
    console.print(table)
    path = record_verdict(candidate, result, cache_dir)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(json_out, json.dumps(result.to_json(), indent=1, default=str))
    if result.passed:
        console.print(f"[green]agrees[/green]: scoring runs with this backend may proceed (verdict in {path})")
        return
    for p in result.problems():
        console.print(f"[red]disagrees[/red]: {p}")
    console.print(f"scoring runs with this backend will be refused (verdict in {path})")
    raise typer.Exit(1)
