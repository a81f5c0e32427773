"""The model registry: backend name -> ``"module:function"``, imported only when used.

A backend module may need packages the core install lacks (torch, vLLM, httpx);
naming it here costs nothing until a run asks for it, and a missing package is
reported with the pip extra that brings it. Adding a backend is one new module plus
one line in :data:`MODEL_REGISTRY` (see ``docs/architecture.md``, "Add a backend").
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from biaslens.environment import applies_environment_policy
from biaslens.models.base import Backend, ModelError

#: backend name -> "module:function"; the function is called as ``fn(name, **options)``
MODEL_REGISTRY: dict[str, str] = {
    "hf": "biaslens.models.hf:load_hf",
    "embedded": "biaslens.models.embedded:load_embedded",
    "vllm": "biaslens.models.vllm_backend:load_vllm",
    "openai": "biaslens.models.openai_compat:load_openai",
    "fake": "biaslens.models.fake:load_fake",
}


@dataclass(frozen=True)
class Extra:
    """The pip extra that installs a backend's dependencies."""

    name: str
    needs: str  # what to say it needs, e.g. "torch and transformers"
    modules: frozenset[str]  # top-level modules whose ImportError means the extra is missing


_HF_MODULES = frozenset({"torch", "transformers", "safetensors", "accelerate", "tokenizers", "huggingface_hub"})

#: backend name -> the extra its module's imports come from (none: the core is enough)
BACKEND_EXTRAS: dict[str, Extra] = {
    "hf": Extra("hf", "torch and transformers", _HF_MODULES),
    "embedded": Extra("embedded", "torch, transformers and gguf", _HF_MODULES | {"gguf"}),
    "vllm": Extra("vllm", "vLLM", _HF_MODULES | {"vllm"}),
    "openai": Extra("openai", "httpx", frozenset({"httpx", "httpcore"})),
}


@dataclass(frozen=True)
class LoadOptions:
    """The keywords every loader may take, declared once (``load_model``, a RunConfig's
    model section and a Ray worker's replica all go through here). A loader receives the
    ones its signature names, plus every backend-specific option.

    Attributes:
        device, dtype, kind, start_token, score_first_token, trust_remote_code, compile:
            see :class:`biaslens.config.ModelConfig`.
        backend_options: options of one backend only (the openai server's ``base_url``,
            vLLM's engine options); a loader that does not take one fails naming it.
    """

    device: str = "cpu"
    dtype: str = "float32"
    kind: str = "auto"
    start_token: str | None = None
    score_first_token: bool = True
    trust_remote_code: bool = False
    compile: bool = False
    backend_options: dict[str, Any] = field(default_factory=dict)

    #: ModelConfig fields that only the openai backend reads
    OPENAI_FIELDS = ("base_url", "api_key_env", "api", "max_concurrency", "requests_per_second",
                     "request_timeout", "max_retries")

    @classmethod
    def common_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name != "backend_options")

    @classmethod
    def from_model_config(cls, m) -> LoadOptions:
        """The load options of a :class:`~biaslens.config.ModelConfig`."""
        if m.backend == "openai":
            extra = {f: getattr(m, f) for f in cls.OPENAI_FIELDS}
        elif m.backend not in ("auto", "hf"):  # vllm and registered backends: their own loader options
            extra = dict(m.engine_options)
        else:
            extra = {}
        return cls(**{n: getattr(m, n) for n in cls.common_names()}, backend_options=extra)

    def replace(self, **changes) -> LoadOptions:
        return LoadOptions(**{**asdict(self), **changes})

    def as_kwargs(self) -> dict[str, Any]:
        """``load_model`` keywords (common options and backend options side by side)."""
        return {**{n: getattr(self, n) for n in self.common_names()}, **self.backend_options}


def resolve_backend(name: str, backend: str = "auto") -> str:
    """The registry key for model ``name``: ``auto`` (and ``hf``, which always meant the same
    set of models) picks ``fake`` for "fake" and "fake-unbiased", ``embedded`` for the embedded model's name,
    else ``hf``."""
    if backend in ("auto", "hf"):
        from biaslens.models.embedded import EMBEDDED_NAME
        from biaslens.models.fake import FAKE_NAMES

        return "fake" if name in FAKE_NAMES else "embedded" if name == EMBEDDED_NAME else "hf"
    if backend not in MODEL_REGISTRY:
        raise ModelError(f"unknown backend {backend!r}: use auto or one of {', '.join(sorted(MODEL_REGISTRY))}")
    return backend


def missing_extra_error(backend: str, error: ImportError) -> ModelError | None:
    """The error naming the pip extra to install, when ``error`` is a missing dependency of ``backend``."""
    extra = BACKEND_EXTRAS.get(backend)
    missing = (error.name or "").split(".")[0]
    if extra is None or missing not in extra.modules:
        return None
    return ModelError(f"the {backend} backend needs {extra.needs}: pip install 'biaslens[{extra.name}]' "
                      f"(cannot import {missing!r})")


def _loader(backend: str) -> Callable[..., Backend]:
    target = MODEL_REGISTRY[backend]
    module_name, _, function = target.partition(":")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, function)
    except AttributeError:
        raise ModelError(f"MODEL_REGISTRY[{backend!r}] = {target!r}: {module_name} has no {function!r}") from None


def _call_arguments(backend: str, loader: Callable, options: LoadOptions) -> dict[str, Any]:
    """The common options the loader's signature names, and every backend option."""
    params = inspect.signature(loader).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    common = {n: getattr(options, n) for n in options.common_names() if takes_any or n in params}
    if not takes_any:
        unknown = sorted(set(options.backend_options) - set(params))
        if unknown:
            raise ModelError(f"the {backend} backend takes no option {', '.join(map(repr, unknown))}")
    return {**common, **options.backend_options}


@applies_environment_policy
def load_model(name: str | None = None, *, backend: str = "auto", **options: Any) -> Backend:
    """Load model ``name`` through the backend the registry names.

    ``options`` are :class:`LoadOptions` fields (device, dtype, kind, start_token,
    score_first_token, trust_remote_code, compile) and backend options (the openai
    backend's ``base_url``, vLLM engine options, ...).
    """
    from biaslens.models.embedded import EMBEDDED_NAME

    name = EMBEDDED_NAME if name is None else name
    common = {k: options.pop(k) for k in LoadOptions.common_names() if k in options}
    load_options = LoadOptions(**common, backend_options=options)
    key = resolve_backend(name, backend)
    try:
        loader = _loader(key)
        return loader(name, **_call_arguments(key, loader, load_options))
    except ImportError as e:
        friendly = missing_extra_error(key, e)
        if friendly is None:
            raise
        raise friendly from e
