"""lm-evaluation-harness, both ways: a method's texts as an lm-eval task folder, and lm-eval's
``--log_samples`` output read back into a per-text table (the methods name their tasks and
columns: HolisticBias sentences, RedditBias phrase pairs, lm-eval's own CrowS-Pairs task).

The task scores each sentence with ``loglikelihood_rolling``: the summed log-probability of
every token of the text, the first one conditioned on a single prefix token (lm-eval's HF
model: ``prefix_token_id`` from ``--model_args``, else the tokenizer's BOS, else its EOS).
Each document carries its row number in the export and the selection that made it, so the
reader can check that every sentence came back exactly once and is the one biaslens selects.

Pure: no model, no lm-eval import (the task is plain YAML + JSONL; the samples plain JSONL).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.errors import DatasetError


class LmEvalSamplesError(DatasetError):
    """lm-eval's samples file does not hold what the run needs; the message names file and line."""


def write_lm_eval_task(rows: pd.DataFrame, out: str | Path, *, selection: str, task: str,
                       columns: tuple[str, ...], what: str, suite: str) -> dict[str, Any]:
    """Write ``<task>.yaml`` and ``<task>.jsonl`` (one document per text: the method's ``columns``
    of it, plus ``row``, ``selection`` and ``n_rows``) and a README into ``out``; returns what was
    written. ``selection`` names the biaslens flags that chose ``rows`` (it travels in every
    document, so the reader can say which flags to repeat); ``what`` and ``suite`` name them in the
    README."""
    from biaslens.fileio import write_atomic

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise DatasetError(f"--out {out}: exists and is not a folder")
    missing = [c for c in columns if c not in rows.columns]
    if missing:
        raise DatasetError(f"cannot export: the sentence table lacks {missing}")
    out.mkdir(parents=True, exist_ok=True)
    data = out / f"{task}.jsonl"
    n = len(rows)
    lines = []
    for i, rec in enumerate(rows[list(columns)].astype(str).to_dict("records")):
        lines.append(json.dumps({"row": i, **rec, "selection": selection, "n_rows": n}, ensure_ascii=False))
    write_atomic(data, "\n".join(lines) + "\n")
    # dataset_path: json reads a local file; lm-eval resolves data_files from the working
    # directory, not the YAML's, so the path is absolute (move the folder: export again)
    yaml_text = (
        f"# written by biaslens: {n:,} {what} ({selection})\n"
        f"task: {task}\n"
        "dataset_path: json\n"
        "dataset_kwargs:\n"
        "  data_files:\n"
        f"    test: {json.dumps(str(data.resolve()))}\n"
        "test_split: test\n"
        "output_type: loglikelihood_rolling\n"
        'doc_to_text: ""\n'
        'doc_to_target: "{{text}}"\n'
        "metric_list:\n"
        "  - metric: word_perplexity\n"
        "  - metric: byte_perplexity\n"
        "  - metric: bits_per_byte\n"
        "metadata:\n"
        "  version: 1.0\n"
    )
    write_atomic(out / f"{task}.yaml", yaml_text)
    write_atomic(out / "README.md", _readme(task, n, selection, out, what, suite))
    return {"task": task, "yaml": out / f"{task}.yaml", "data": data, "n_rows": n}


def _readme(task: str, n: int, selection: str, out: Path, what: str, suite: str) -> str:
    return f"""# {task}

{n:,} {what} exported by biaslens ({selection}), as an lm-evaluation-harness
task with `output_type: loglikelihood_rolling`.

Score them with any model lm-eval reaches, keeping the per-sentence samples:

    lm_eval --model hf --model_args pretrained=MODEL,prefix_token_id=ID \\
        --include_path {out.resolve().as_posix()} --tasks {task} --log_samples --output_path OUT

`prefix_token_id` is the token the first word of each sentence is conditioned on. biaslens uses
a document-start token (`<|endoftext|>` for GPT-2, SmolLM2, Qwen, Pythia; `<|begin_of_text|>` for
Llama 3; `<s>` for Llama 2); lm-eval's default is the tokenizer's BOS, which for chat models such
as SmolLM2 is a chat-role marker (`<|im_start|>`) that shifts sentence log-likelihoods by about
4 nats. Pass the id of biaslens's start token as ID (SmolLM2's `<|endoftext|>` is 0). Then analyse
them with no model calls, using the same selection flags:

    biaslens run {suite} --from-lm-eval OUT/<model>/samples_{task}_<time>.jsonl \\
        --tokenizer MODEL {selection}

The data file's path in `{task}.yaml` is absolute: after moving this folder, export it again.
"""


def _fail(path: Path, lineno: int | None, msg: str) -> LmEvalSamplesError:
    return LmEvalSamplesError(f"{path}{f':{lineno}' if lineno else ''}: {msg}")


def _samples(path: Path) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(line, record, its ``doc``) of each non-empty line of an lm-eval samples file; a line that is
    not a JSON object with a ``doc`` raises LmEvalSamplesError naming it."""
    from biaslens.fileio import read_text

    for lineno, line in enumerate(read_text(path, LmEvalSamplesError).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            raise _fail(path, lineno, f"invalid JSON ({getattr(e, 'msg', 'nested too deeply')})") from None
        if not isinstance(obj, dict):
            raise _fail(path, lineno, "not a JSON object; expected one lm-eval sample per line")
        doc = obj.get("doc")
        if not isinstance(doc, dict):
            raise _fail(path, lineno, "no 'doc': not an lm-eval --log_samples record")
        yield lineno, obj, doc


def read_lm_eval_samples(path: str | Path, *, task: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """One row per logged sample of an lm-eval ``--log_samples`` file of the exported task:
    ``row``, the document's columns, ``loglikelihood`` (lm-eval's rolling log-likelihood, nats),
    ``selection``, ``n_rows`` and ``line``.

    Raises LmEvalSamplesError naming the line for: invalid JSON, a record that is not a
    sample of ``task`` (no document, another task's document, another request type), a
    scored text that differs from its document's, a log-likelihood that is not a finite
    number <= 0, and a document logged twice.
    """

    path = Path(path)
    if path.is_dir():
        raise LmEvalSamplesError(f"{path}: is a folder; pass the samples_{task}_<time>.jsonl file lm_eval wrote "
                                 "with --log_samples")
    records: list[dict[str, Any]] = []
    seen: dict[Any, int] = {}
    for lineno, obj, doc in _samples(path):
        missing = [c for c in ("row", "selection", "n_rows", *columns) if c not in doc]
        if missing:
            raise _fail(path, lineno, f"the document lacks {', '.join(missing)}: a sample of another task, not "
                                      f"{task} as `biaslens export lm-eval` writes it")
        args = obj.get("arguments")
        scored = _scored_text(args)
        if scored is None:
            raise _fail(path, lineno, "no scored text in 'arguments': not a loglikelihood_rolling sample")
        if scored != doc["text"]:
            raise _fail(path, lineno, f"the scored text {scored!r} differs from the document's {doc['text']!r} "
                                      "(was the task's doc_to_target edited?)")
        ll = _loglikelihood(obj.get("filtered_resps", obj.get("resps")))
        if ll is None or not math.isfinite(ll) or ll > 1e-9:
            raise _fail(path, lineno, f"log-likelihood {obj.get('filtered_resps', obj.get('resps'))!r} is not a "
                                      "finite number <= 0")
        try:
            row, n_rows = int(doc["row"]), int(doc["n_rows"])
        except (TypeError, ValueError):
            raise _fail(path, lineno, f"row {doc['row']!r} / n_rows {doc['n_rows']!r} are not integers") from None
        if row in seen:
            raise _fail(path, lineno, f"sentence row {row} was already logged at line {seen[row]}: samples of two "
                                      "runs in one file?")
        seen[row] = lineno
        records.append({"row": row, **{c: str(doc[c]) for c in columns}, "loglikelihood": float(ll),
                        "selection": str(doc["selection"]), "n_rows": n_rows, "line": lineno})
    if not records:
        raise LmEvalSamplesError(f"{path}: no samples")
    return pd.DataFrame.from_records(records)


def _scored_text(args: Any) -> str | None:
    """The string lm-eval scored: ``arguments`` is {"gen_args_0": {"arg_0": text}} (lm-eval
    0.4.x) or [[text]] (older)."""
    if isinstance(args, dict):
        first = next(iter(args.values()), None)
        if isinstance(first, dict):
            first = first.get("arg_0")
        return first if isinstance(first, str) else None
    if isinstance(args, list) and args:
        first = args[0][0] if isinstance(args[0], list) and args[0] else args[0]
        return first if isinstance(first, str) else None
    return None


def _loglikelihood(resp: Any) -> float | None:
    """lm-eval logs a rolling log-likelihood as a number, [number] or [[number]]; its file
    writer (--log_samples) turns the number into a string: "-37.93"."""
    while isinstance(resp, list) and len(resp) == 1:
        resp = resp[0]
    if isinstance(resp, str):
        try:
            return float(resp)
        except ValueError:
            return None
    if isinstance(resp, bool) or not isinstance(resp, (int, float)):
        return None
    return float(resp)


def match_selection(samples: pd.DataFrame, rows: pd.DataFrame, *, path: str | Path, selection: str) -> pd.DataFrame:
    """``rows`` (the sentences this run selects, in order) with lm-eval's ``loglikelihood``
    from ``samples``, after checking that the samples are of this selection, one per sentence,
    with the same texts. Raises LmEvalSamplesError naming the line or the missing rows."""
    path = Path(path)
    first = samples.iloc[0]
    if first["selection"] != selection or int(first["n_rows"]) != len(rows):
        raise _fail(path, int(first["line"]),
                    f"exported with {first['selection']} ({int(first['n_rows']):,} sentences); this run selects "
                    f"{selection} ({len(rows):,} sentences): pass the export's selection flags")
    odd = samples[(samples["selection"] != selection) | (samples["n_rows"] != len(rows))]
    if len(odd):
        r = odd.iloc[0]
        raise _fail(path, int(r["line"]), f"from another export ({r['selection']}) than line {int(first['line'])}")
    out_of_range = samples[(samples["row"] < 0) | (samples["row"] >= len(rows))]
    if len(out_of_range):
        r = out_of_range.iloc[0]
        raise _fail(path, int(r["line"]), f"row {int(r['row'])} is outside the export's {len(rows):,} sentences")
    by_row = samples.set_index("row").sort_index()
    absent = sorted(set(range(len(rows))) - set(by_row.index))
    if absent:
        shown = ", ".join(str(i) for i in absent[:5]) + (" ..." if len(absent) > 5 else "")
        raise LmEvalSamplesError(
            f"{path}: {len(absent):,} of {len(rows):,} sentences have no sample (rows {shown}): lm_eval ran with "
            "--limit, or the file is cut; biaslens needs every sentence of the selection")
    texts = rows["text"].astype(str).to_numpy()
    bad = by_row.index[by_row["text"].to_numpy() != texts]
    if len(bad):
        r = by_row.loc[bad[0]]
        raise _fail(path, int(r["line"]), f"row {int(bad[0])} is {r['text']!r}, but this run's sentence "
                                          f"{int(bad[0])} is {texts[bad[0]]!r}: the export used another dataset "
                                          "(--dataset-dir/--extra-dataset-file) or biaslens version")
    return rows.reset_index(drop=True).assign(loglikelihood=by_row["loglikelihood"].to_numpy(),
                                              lm_eval_line=by_row["line"].to_numpy())


def lm_eval_run_info(samples_path: str | Path) -> dict[str, Any]:
    """What lm-eval's results file beside a samples file says about the run (``results_<time>.json``
    for ``samples_<task>_<time>.jsonl``): model, model_args, lm-eval version, the prefix token
    ``prefix_token_id`` asked for, the tokenizer's BOS/EOS. Empty when there is no such file."""
    path = Path(samples_path)
    stem = path.name.removesuffix(".jsonl")
    date = stem.rsplit("_", 1)[-1] if stem.startswith("samples_") else None
    results = path.with_name(f"results_{date}.json") if date else None
    if results is None or not results.is_file():
        return {}
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LmEvalSamplesError(f"{results}: unreadable lm-eval results file ({e})") from None
    cfg = data.get("config") or {}
    kv = _model_args(cfg.get("model_args"))
    args = ",".join(f"{k}={v}" for k, v in kv.items())
    prefix = kv.get("prefix_token_id")

    def token(key: str) -> tuple[str, int] | None:  # lm-eval logs [token, "id"]
        v = data.get(key)
        return (str(v[0]), int(v[1])) if isinstance(v, list) and len(v) == 2 and v[1] not in (None, "None") else None

    return {"results_file": str(results), "model": cfg.get("model"), "model_args": args,
            "pretrained": None if kv.get("pretrained") is None else str(kv["pretrained"]), "model_dtype": cfg.get("model_dtype"),
            "lm_eval_version": data.get("lm_eval_version"), "limit": cfg.get("limit"),
            "prefix_token_id": int(prefix) if prefix not in (None, "", "None") else None,
            "add_bos_token": None if kv.get("add_bos_token") is None else str(kv["add_bos_token"]),
            "bos": token("tokenizer_bos_token"), "eos": token("tokenizer_eos_token")}


def _model_args(args: Any) -> dict[str, Any]:
    """lm-eval's ``config.model_args``: a mapping, its Python repr (the CLI writes
    "{'pretrained': ..., 'prefix_token_id': 0}") or the "key=value,key=value" string."""
    import ast

    if isinstance(args, str) and args.strip().startswith("{"):
        try:
            args = ast.literal_eval(args)
        except (ValueError, SyntaxError):
            return {}
    if isinstance(args, dict):
        return {str(k): v for k, v in args.items()}
    return dict(p.split("=", 1) for p in str(args or "").split(",") if "=" in p)


def _choice_loglikelihood(resp: Any) -> float | None:
    """One choice's log-likelihood from lm-eval's ``[ll, is_greedy]`` (numbers or strings)."""
    if isinstance(resp, list) and len(resp) == 2 and not isinstance(resp[0], list):
        resp = resp[0]
    return _loglikelihood(resp)


def read_two_choice_samples(path: str | Path, *, task: str, columns: tuple[str, ...], choices: tuple[str, str],
                            scores: tuple[str, str]) -> pd.DataFrame:
    """One row per document of an lm-eval ``--log_samples`` file of a two-choice ``multiple_choice``
    task (the choices scored after the same context): ``doc_id``, the document's ``columns``, the two
    choices' log-likelihoods under the names ``scores`` and ``line``. ``choices``: the document
    fields whose texts the two scored choices must be, in that order.

    Raises LmEvalSamplesError naming the line for: invalid JSON, a record without the document
    fields, choices that are not those fields in that order, a log-likelihood that is not a finite
    number <= 0, and a document logged twice.
    """

    path = Path(path)
    if path.is_dir():
        raise LmEvalSamplesError(f"{path}: is a folder; pass the samples_{task}_<time>.jsonl file lm_eval "
                                 "wrote with --log_samples")
    records: list[dict[str, Any]] = []
    seen: dict[Any, int] = {}
    for lineno, obj, doc in _samples(path):
        missing = [c for c in columns if c not in doc]
        if missing:
            raise _fail(path, lineno, f"the document lacks {', '.join(missing)}: not a sample of {task}")
        args = obj.get("arguments")
        scored = [a.get("arg_1") for a in args.values() if isinstance(a, dict)] if isinstance(args, dict) else \
            [a[1] if isinstance(a, list) and len(a) == 2 else None for a in args] if isinstance(args, list) else []
        if scored != [doc[choices[0]], doc[choices[1]]]:
            raise _fail(path, lineno, f"the scored choices are not ({choices[0]}, {choices[1]}) of the document: not "
                                      f"{task} as lm-eval defines it")
        resps = obj.get("filtered_resps", obj.get("resps"))
        lls = [_choice_loglikelihood(r[0] if isinstance(r, list) and len(r) == 1 and isinstance(r[0], list) else r)
               for r in resps] if isinstance(resps, list) and len(resps) == 2 else []
        if len(lls) != 2 or any(v is None or not math.isfinite(v) or v > 1e-9 for v in lls):
            raise _fail(path, lineno, f"log-likelihoods {resps!r} are not two finite numbers <= 0")
        key = obj.get("doc_id", lineno)
        if key in seen:
            raise _fail(path, lineno, f"doc_id {key} was already logged at line {seen[key]}: samples of two runs in "
                                      "one file?")
        seen[key] = lineno
        records.append({"doc_id": key, **{c: str(doc[c]) for c in columns},
                        scores[0]: float(lls[0]), scores[1]: float(lls[1]), "line": lineno})  # type: ignore[arg-type]
    if not records:
        raise LmEvalSamplesError(f"{path}: no samples")
    return pd.DataFrame.from_records(records)
