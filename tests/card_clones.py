"""Synthetic bias cards for the leaderboard tests: copies of one real (fake-model) card with
other headline numbers, as if other models had been measured with the same settings.

Not a test module (no ``test_`` prefix); tests import it like ``conftest``. Only what a card
folder keeps and the leaderboard reads is copied: card.json and each method's run.json,
metrics.json and (where the method writes one) headline_items.parquet.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any


def clone_card(src: Path, dst: Path, model: str, shift: float | dict[str, float] = 0.0, *,
               edit_card=None, edit_run=None, edit_items=None) -> Path:
    """``dst``: ``src`` measured on "model", each headline (value and interval) moved by
    ``shift`` (one number, or per suite). ``edit_card(card)`` / ``edit_run(suite, record)`` change
    the JSON before it is written, ``edit_items(suite, table)`` returns the per-item table to write."""
    import pandas as pd

    dst = Path(dst)
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    card = json.loads((Path(src) / "card.json").read_text(encoding="utf-8"))
    old = card["model"]
    card["model"] = model
    for row in card["methods"]:
        suite = row["suite"]
        (dst / suite).mkdir()
        for name in ("run.json", "metrics.json"):
            data: Any = json.loads((Path(src) / suite / name).read_text(encoding="utf-8"))
            if name == "run.json" and edit_run:
                edit_run(suite, data)
            if name == "metrics.json" and isinstance(data.get("models"), list):
                data["models"] = [model if m == old else m for m in data["models"]]
            (dst / suite / name).write_text(json.dumps(data), encoding="utf-8")
        items = Path(src) / suite / "headline_items.parquet"
        if items.is_file():
            table = pd.read_parquet(items)
            (edit_items(suite, table) if edit_items else table).to_parquet(dst / suite / items.name, index=False)
        d = shift.get(suite, 0.0) if isinstance(shift, dict) else shift
        for k in ("value", "ci_low", "ci_high"):
            if row.get(k) is not None:
                row[k] += d
        if isinstance(row.get("headline"), str) and row["headline"].endswith(f".{old}"):
            row["headline"] = row["headline"][: -len(old)] + model  # community names the model
    if edit_card:
        edit_card(card)
    (dst / "card.json").write_text(json.dumps(card), encoding="utf-8")
    return dst
