"""The key/value cache argument under the name the installed transformers wants.

transformers 5.24 renamed ``past_key_values`` to ``cache`` (inputs and outputs); the old
name still works there but raises a FutureWarning and logs a deprecation line on every
run. Older versions only know ``past_key_values``. biaslens asks the model's own
``forward`` which name it takes, so neither version sees a deprecated call.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


@functools.cache
def _name_for(cls: Any) -> str:
    try:
        params = inspect.signature(cls.forward).parameters  # follows the deprecation wrapper to the new signature
    except (TypeError, ValueError):  # pragma: no cover - a forward without a signature
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def cache_arg(model, cache) -> dict[str, Any]:
    """``{name: cache}`` to pass to ``model(...)`` or ``model.generate(...)``."""
    model = getattr(model, "_orig_mod", model)  # torch.compile's wrapper takes (*args, **kwargs)
    return {_name_for(type(model)): cache}  # type: ignore[arg-type]  # a class is hashable


def output_cache(output):
    """The key/value cache a forward pass returned (``use_cache=True``)."""
    if "cache" in output:  # ModelOutput is a mapping of the fields that are set
        return output["cache"]
    return output["past_key_values"]
