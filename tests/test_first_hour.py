"""What a new user meets first (#17): offline means no download attempt, errors name the flag
and the fix, an input mistake leaves no run folder, `--help` reads at 80 columns."""

import os
import re
import subprocess
import sys

import pytest


def _cli(*args: str, cwd, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("BIASLENS_ONLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update({"COLUMNS": "80", **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "biaslens.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def _error(res: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith(("error:", "Error:"))]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    return lines[0]


def test_a_hub_name_offline_is_one_line_without_a_download_attempt(tmp_path):
    res = _cli("run", "--model", "gpt2", "--out", str(tmp_path / "run"), cwd=tmp_path)
    line = _error(res)
    assert "not a local folder" in line and "BIASLENS_ONLINE=1" in line and "nothing was downloaded" in line
    assert "huggingface.co" not in res.stderr and "Retrying" not in res.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


def test_a_missing_model_folder_says_so_plainly(tmp_path):
    line = _error(_cli("run", "--model", "./models/nope", cwd=tmp_path))
    assert line.endswith("cannot load model './models/nope': no such folder")
    assert not (tmp_path / "runs").exists()


def test_a_path_under_an_existing_folder_is_a_missing_folder_not_a_hub_id(tmp_path, monkeypatch):
    """`--model models/nope` next to a models/ folder: plainly no such folder, not the offline-Hub
    message (which would send the user looking for a download switch)."""
    from biaslens.models.base import ModelError
    from biaslens.models.tokenized import check_model_location

    (tmp_path / "models").mkdir()
    line = _error(_cli("run", "--model", "models/nope", cwd=tmp_path))
    assert line.endswith("cannot load model 'models/nope': no such folder"), line
    assert "BIASLENS_ONLINE" not in line and not (tmp_path / "runs").exists()

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BIASLENS_ONLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("models/nope", "models/nope/", "nope/", "models\\nope", "a/b/c"):
        with pytest.raises(ModelError, match="no such folder$"):
            check_model_location(name)
    # "owner/name" with no such local folder is still read as a Hub id: the offline message
    with pytest.raises(ModelError, match="biaslens is offline"):
        check_model_location("someone/nope")
    check_model_location("models")  # an existing folder passes


def _cuda_message(version: str) -> str:
    from types import SimpleNamespace

    from biaslens.models.base import ModelError
    from biaslens.models.hf import check_device

    torch = SimpleNamespace(__version__=version, version=SimpleNamespace(cuda=None),
                            cuda=SimpleNamespace(is_available=lambda: False))
    with pytest.raises(ModelError) as err:
        check_device(torch, "cuda")
    return str(err.value)


def test_the_cuda_message_names_the_build_and_the_pip_command():
    line = _cuda_message("2.5.1+cpu")
    assert "this torch build (2.5.1+cpu) has no CUDA support" in line
    assert "a CUDA build of the same version is needed" in line and "pip install torch==2.5.1 " in line
    assert "GPU driver" in line and "--device cpu" in line
    assert "http" not in line and "download" not in line and ".org" not in line  # no download host named
    assert "pip install torch==2.4.0 " in _cuda_message("2.4.0")


def test_cuda_on_a_cpu_only_torch_says_what_to_install(tmp_path):
    import torch

    if torch.version.cuda is not None:
        pytest.skip("this torch build has CUDA")
    line = _error(_cli("run", "--device", "cuda", "--sample", "50", cwd=tmp_path))
    assert "this torch build" in line and "no CUDA support" in line and "--device cpu" in line
    assert f"pip install torch=={torch.__version__.split('+')[0]} " in line
    assert not (tmp_path / "runs").exists()


def test_a_misspelled_axis_gets_a_suggestion_and_no_folder(tmp_path):
    line = _error(_cli("run", "--model", "fake", "--axes", "abilty,age", cwd=tmp_path))
    assert "--axes" in line and "'abilty' (did you mean 'ability'?)" in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("args, flag", [(["fairpair", "--fairpair-perturber", "x"], "--fairpair-perturber"),
                                        (["--alpha", "2"], "--alpha"), (["--batch-size", "0"], "--batch-size"),
                                        (["holistic-generation", "--max-new-tokens", "0"], "--max-new-tokens")])
def test_an_invalid_value_names_the_flag_typed(tmp_path, args, flag):
    line = _error(_cli("run", *args, "--model", "fake", cwd=tmp_path))
    assert line.startswith(f"error: {flag}:") and "field '" not in line, line


def test_run_help_reads_at_80_columns(tmp_path):
    res = _cli("run", "--help", cwd=tmp_path)
    assert res.returncode == 0
    assert max(len(line) for line in res.stdout.splitlines()) <= 80
    assert "…" not in res.stdout and "<bool>" not in res.stdout and "\\[" not in res.stdout
    words = " ".join(res.stdout.split())
    assert "--no-identity-masking" in words and "median perplexity error 0.5%" in words


def _command_paths() -> list[list[str]]:
    import typer.main

    from biaslens.cli.app import app

    paths: list[list[str]] = []

    def walk(cmd, path):
        paths.append(path)
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_every_help_reads_at_80_columns():
    """Every command and subcommand: no line over 80 columns, none cut with "…" or "...", no
    <bool> argument on an on/off flag, no <list[...]> type on a repeatable option or argument."""
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    paths = _command_paths()
    assert ["run"] in paths and ["debias", "cda"] in paths and ["cache", "clear"] in paths and len(paths) > 20
    for path in paths:
        res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
        name = " ".join(["biaslens", *path])
        assert res.exit_code == 0, f"{name}: {res.output}"
        lines = res.output.splitlines()
        assert max(len(line) for line in lines) <= 80, f"{name}: a line over 80 columns"
        cut = [ln for ln in lines if "…" in ln or (ln.rstrip().endswith("...") and not ln.startswith("Usage:"))]
        assert not cut, f"{name}: lines cut short: {cut}"
        assert "<bool>" not in res.output and "list[" not in res.output, f"{name}:\n{res.output}"
    # the command lists show each command's first sentence in full
    res = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}, terminal_width=80)
    words = " ".join(res.output.split())
    assert "Run a bias suite and write a run folder (run.json, Parquet results, metrics.json, report.html)." in words
    res = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert "--extra-dataset-file <file>" in res.output and "--persona <line>" in res.output


def test_reports_open_with_the_verdict_and_read_right(tmp_path, style_encoder):
    import html

    import biaslens

    res = biaslens.run(model="fake", sample=1200, out=str(tmp_path / "lb"), cache_dir=str(tmp_path / "c"))
    page = (tmp_path / "lb" / "report.html").read_text(encoding="utf-8")
    headline = page.index('class="headline"')
    assert headline < page.index("<h2>") and html.escape(res.metrics["verdict"], quote=False) in page
    # love / hate: short template names, no template column that the run did not sample
    section = page[page.index("<h2>I love / I hate</h2>"):]
    header = re.search(r"<thead><tr>(.*?)</tr></thead>", section).group(1)
    header = " | ".join(re.sub(r"<[^>]+>", "", th) for th in re.findall(r"<th>(.*?)</th>", header))
    assert "{plural_noun_phrase}" not in header and "I love" in header
    lh = res.love_hate
    for template in [c for c in lh.columns if "{" in c and lh[c].isna().all()]:
        assert template.replace(" {plural_noun_phrase}", "").rstrip(".") not in header
    if lh["love_hate_diff"].notna().sum() >= 5:
        positive = section[section.index("Most positive love - hate"):]
        diffs = [float(v) for v in re.findall(r"<td(?: class=\"num\")?>(-?[0-9.]+)</td></tr>", positive)[:5]]
        assert len(diffs) == 5 and diffs == sorted(diffs, reverse=True), diffs
    else:  # no "I hate" sentences sampled: one table saying so (test_love_hate_without_i_hate_sentences...)
        assert "Most positive love - hate" not in section and "no love - hate difference" in section

    biaslens.run(suite="holistic-generation", model="fake", sample=20, out=str(tmp_path / "gen"),
                 cache_dir=str(tmp_path / "c"), generation={"n_permutations": 20, "n_bootstrap": 50})
    page = (tmp_path / "gen" / "report.html").read_text(encoding="utf-8")
    assert page.index('class="headline"') < page.index("<h2>")
    details = page[: page.index("<h2>")]
    assert "<td>decoding</td>" in details and "max new tokens 32" in details
    assert "<td>persona</td><td>none</td>" in details and "{&#39;" not in details and "[]" not in details


def test_love_hate_without_i_hate_sentences_is_one_table_that_says_why(tmp_path, style_encoder):
    import biaslens

    res = biaslens.run(model="fake", sample=120, axes=["ability", "age"], out=str(tmp_path / "lb"),
                       cache_dir=str(tmp_path / "c"))
    assert res.love_hate["love_hate_diff"].isna().all()  # the small sample has "I love" only
    page = (tmp_path / "lb" / "report.html").read_text(encoding="utf-8")
    section = page[page.index("<h2>I love / I hate</h2>"):]
    assert "Most positive love - hate" not in section and "Most negative love - hate" not in section
    assert "no love - hate difference to rank" in section and "<h3>Share per template</h3>" in section
    assert "love_<wbr>hate_<wbr>diff</th>" not in section


def test_a_finished_or_rerendered_folder_keeps_no_lock_file(tmp_path):
    import biaslens

    out = tmp_path / "run"
    biaslens.run(model="fake", sample=120, axes=["ability", "age"], out=str(out), cache_dir=str(tmp_path / "c"))
    assert not (out / ".biaslens.lock").exists() and (out / "run.json").is_file()
    biaslens.rerender(out)
    assert not (out / ".biaslens.lock").exists()


def test_without_a_terminal_lines_are_not_wrapped_mid_phrase(tmp_path):
    res = _cli("run", "--model", "fake", "--sample", "600", "--out", str(tmp_path / "run"),
               "--cache-dir", str(tmp_path / "c"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    # progress on standard error, the summary and the report path on standard output
    assert "scoring sentences:" in res.stderr and "report:" not in res.stderr
    assert "Likelihood Bias (" in res.stdout and "scoring sentences:" not in res.stdout
    lines = res.stderr.splitlines() + res.stdout.splitlines()
    start = next(ln for ln in lines if ln.startswith("holistic-likelihood:"))
    assert start.rstrip().endswith(")") and "13 axes" in start, start
    # progress and summary: each message is one line, however long (COLUMNS=80 is set), so every
    # line that is not a row of the summary table starts a message; a wrapped tail would not
    starts = ("note:", "holistic-likelihood:", "scoring sentences:", "Likelihood Bias (", "Likelihood Bias:", "k: descriptors",
              "warning:", "report:")
    table = "┏┃┡│└"
    stray = [ln for ln in lines if ln.strip() and not ln.startswith(starts) and ln[0] not in table]
    assert not stray, f"lines wrapped mid-phrase:\n{res.stderr}{res.stdout}"
    progress = [ln for ln in lines if ln.startswith("scoring sentences:")]
    assert progress and all(re.fullmatch(r"scoring sentences: \d+/\d+ \(.*left\)", ln.rstrip()) for ln in progress)
    footer = next(ln for ln in lines if ln.startswith("k: descriptors"))
    assert footer.rstrip().endswith("(see warnings)"), footer
    warning = next(ln for ln in lines if ln.startswith("warning:"))
    assert len(warning) > 80 and "intervals are unreliable" in warning and warning.rstrip().endswith("--full."), warning
    assert next(ln for ln in lines if ln.startswith("report:")).rstrip().endswith("report.html")
    # the table's rows stay whole too: each has its closing border
    rows = [ln for ln in lines if ln[:1] == "│"]
    assert len(rows) >= 14 and all(ln.rstrip().endswith("│") for ln in rows)


def test_the_readme_compare_example_works_for_any_suite(tmp_path):
    """`biaslens compare runs/before runs/after` with no --out, on a suite without a dedicated
    comparison: its headline with intervals, and a refusal when the runs measured different things."""
    import json

    import biaslens

    runs = tmp_path / "runs"
    for name, sample in (("before", 240), ("after", 240), ("other", 360)):
        biaslens.run(model="fake", sample=sample, axes=["ability", "age"], out=str(runs / name),
                     cache_dir=str(tmp_path / "c"))
    res = _cli("compare", "runs/before", "runs/after", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Missing option" not in res.stderr
    metrics = json.loads((runs / "compare-before-vs-after" / "metrics.json").read_text())
    head = metrics["headlines"]["holistic-likelihood"]
    assert head["headline"] == "likelihood_bias"
    (label_b, b), (label_a, a) = head["models"].items()
    assert b["verdict"] == "reference"
    # the same model and prompts: equal values, overlapping intervals, no change called
    assert a["value"] == b["value"] and a["verdict"] == "no detectable change", a
    assert "no detectable change" in res.stderr + res.stdout
    html = (runs / "compare-before-vs-after" / "report.html").read_text()
    assert "holistic-likelihood: headline" in html
    # a different prompt selection: refused, with the reason
    res = _cli("compare", "runs/before", "runs/other", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    other = json.loads((runs / "compare-before-vs-other" / "metrics.json").read_text())
    verdicts = [v for v in other["headlines"]["holistic-likelihood"]["models"].values() if v["verdict"] != "reference"]
    assert verdicts[0]["verdict"] == "not comparable" and "prompt selection" in verdicts[0]["reason"]
