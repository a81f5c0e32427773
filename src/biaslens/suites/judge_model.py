"""A run's language-model judge (issue #33): the model of the configuration's ``judge`` section,
loaded as ``--model`` is and called through the run's call cache, wrapped as a
:class:`~biaslens.scorers.model_judge.ModelJudge` of one role.

The scorers never load a model themselves (they turn text into numbers): a suite hands
:func:`model_judge_loader` to the scorer loaders (``choose_judge``, ``load_style_classifier``),
which call it when the configuration names ``judge`` or ``judge:<model>``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from biaslens.scorers.base import ScorerError
from biaslens.scorers.model_judge import ModelJudge, read_rubric


def judge_calls(judge: Any, config: Any = None):
    """The judge model with the run's call cache (``judge``: the run configuration's judge
    section, :class:`biaslens.config.JudgeConfig`)."""
    from biaslens.config import ModelConfig
    from biaslens.engine.calls import ModelCalls, open_cache
    from biaslens.models.registry import LoadOptions, load_model

    model = ModelConfig(name=judge.model, backend=judge.backend, device=judge.device, dtype=judge.dtype,
                        base_url=judge.base_url, api_key_env=judge.api_key_env, api=judge.api,
                        engine_options=dict(judge.engine_options), batch_size=judge.batch_size)
    backend = load_model(model.name, backend=model.backend, **LoadOptions.from_model_config(model).as_kwargs())
    return ModelCalls(backend, cache=open_cache(config) if config is not None else None, batch_size=model.batch_size)


def load_model_judge(role: str, spec: str = "judge", *, config: Any = None) -> ModelJudge:
    """The judge of ``role`` that ``spec`` names: ``"judge"`` (the model of the configuration's
    judge section, default the embedded model) or ``"judge:<model>"`` (that model, the section's
    other settings).

    Raises:
        ScorerError: the model cannot be loaded, the rubric file is unreadable or empty.
    """
    from biaslens.config import JudgeConfig
    from biaslens.models.base import ModelError

    judge = getattr(config, "judge", None) or JudgeConfig()
    if spec.startswith("judge:") and spec[len("judge:"):]:
        judge = judge.model_copy(update={"model": spec[len("judge:"):]})
    task = read_rubric(judge.rubric, role)
    try:
        calls = judge_calls(judge, config)
    except (ModelError, OSError, ValueError) as e:
        raise ScorerError(f"the judge model {judge.model!r} cannot be loaded: {str(e).splitlines()[0]}") from None
    return ModelJudge(role, calls, task, answers=judge.answers,
                      rubric_source="built-in" if judge.rubric is None else str(judge.rubric))


def model_judge_loader(config: Any = None) -> Callable[[str, str], ModelJudge]:
    """``(role, spec) -> judge`` for the scorer loaders, with this run's configuration."""
    return functools.partial(load_model_judge, config=config)
