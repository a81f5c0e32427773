"""report.html in a real headless Chromium (issue 8, parts 3 and 4).

- Security: model output with ``<script>`` and ``<img onerror>`` (precomputed generations, CLI
  ``--generations``) shows literally in the report and nothing runs.
- Every suite's report (fake backend, small sizes): no console errors, every ``<img>`` is an
  inline PNG, every ``<table>`` has rows, and a screenshot renders (saved under tmp_path).
- Layout (issue 17): at 1280 px wide no page scrolls sideways and every table fits its box;
  each report opens with its one-sentence verdict, right under the title, before any section.
- Tables and glossary (issue 25), measured in the laid-out page: no number (p-value "3.02e-11")
  and no header word is broken across lines, table boxes stay within the 1,100 px page and
  scroll a wider table, no machine column name (``ci_low``) is shown, and the page ends with a
  glossary holding an entry for every metric it shows (the card page too).

Skips with a reason when ``chromium`` is not installed (``scripts/setup.sh --test`` installs Debian's when run
as root, as ``.ci/run`` does; the reason says how).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from biaslens.api import run

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=(
    "chromium is not installed: 'sudo apt-get install chromium' (scripts/setup.sh --test does it when run as root, "
    "as .ci/run does)"))

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
# the brief's payloads, plus two that would leave a visible trace in the DOM if they ran
PAYLOADS = ['<script>window.__pwned=1</script>', '<img src=x onerror="window.__pwned=1">',
            "<script>document.body.setAttribute('data-pwned','1')</script>",
            "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"]


def chromium(args: list[str], tmp: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    profile = tmp / f"chromium-profile-{len(list(tmp.glob('chromium-profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=timeout)


def dump_dom(report: Path, tmp: Path) -> tuple[str, str]:
    """(DOM after load, console lines from stderr)."""
    res = chromium(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", report.as_uri()], tmp)
    assert res.returncode == 0 and "<html" in res.stdout.lower(), res.stderr[-2000:]
    console = [ln for ln in res.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    return res.stdout, "\n".join(console)


def screenshot(report: Path, tmp: Path) -> Path:
    png = tmp / f"{report.parent.name}.png"
    res = chromium([f"--screenshot={png}", "--window-size=1280,2400", "--hide-scrollbars", report.as_uri()], tmp)
    assert res.returncode == 0 and png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", res.stderr[-2000:]
    assert png.stat().st_size > 10_000, "screenshot looks blank"
    return png


# Measures the laid-out page: whether it (or any table, inside its scroll box) is wider than the
# window, and what comes first after the title. Put in a copy of the report without its CSP
# (which rightly forbids scripts); the result lands in an attribute read from --dump-dom.
LAYOUT_PROBE = r"""<script>
window.addEventListener('load', () => {
  const doc = document.documentElement;
  const wide = [...document.querySelectorAll('table')]
    .filter(t => t.scrollWidth > t.parentElement.clientWidth + 1 || t.getBoundingClientRect().right > doc.clientWidth + 1)
    .map(t => (t.closest('section')?.querySelector('h2')?.textContent || 'top') + ' / '
         + (t.parentElement.previousElementSibling?.textContent || '').trim().slice(0, 60)
         + ' (' + t.scrollWidth + ' px in ' + t.parentElement.clientWidth + ')');
  const order = [...document.querySelectorAll('.headline, h2, table, figure, .warning')]
    .map(e => e.classList.contains('headline') ? 'headline' : e.tagName.toLowerCase());
  const first = document.querySelector('h1').nextElementSibling;
  // a token (number, p-value, header word) laid out on more than one line is broken mid-token:
  // measured per token with a Range over its characters (headers, and every number in any cell)
  const NUM = /^[-+\u2212]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?%?[,;:]?$/i;
  const broken = [];
  const lines = (node, a, b) => {
    const r = document.createRange(); r.setStart(node, a); r.setEnd(node, b);
    return new Set([...r.getClientRects()].filter(q => q.width > 0).map(q => Math.round(q.top))).size;
  };
  for (const cell of document.querySelectorAll('th, td')) {
    const header = cell.tagName === 'TH';
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const m of n.data.matchAll(/\S+/g)) {
        if ((header || NUM.test(m[0])) && lines(n, m.index, m.index + m[0].length) > 1)
          broken.push((header ? 'header ' : 'cell ') + JSON.stringify(m[0]) + ' in ' + JSON.stringify(cell.textContent.slice(0, 60)));
      }
    }
  }
  const scrolls = [...document.querySelectorAll('.scroll')];
  const sections = [...document.querySelectorAll('body > section')];
  document.body.setAttribute('data-layout', JSON.stringify({
    scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, wide: wide, order: order, broken: broken,
    boxes: scrolls.map(b => Math.round(b.clientWidth)),
    unscrollable: scrolls.filter(b => getComputedStyle(b).overflowX !== 'auto').length,
    numericWrap: [...document.querySelectorAll('td.num')].filter(c => getComputedStyle(c).whiteSpace !== 'nowrap').length,
    glossary: [...document.querySelectorAll('#glossary dt')].map(e => e.textContent),
    glossaryLast: sections.length > 0 && sections[sections.length - 1].id === 'glossary',
    afterTitle: first ? (first.className || first.tagName) : null,
    headline: document.querySelector('.headline')?.textContent || null}));
});
</script>"""


def shown_names(page: str) -> list[str]:
    """The names a report shows numbers under: its sections' table headers and metric names
    (not the run details above the first section, nor the glossary itself)."""
    import html as _html

    body = page.split("<section", 1)[1].split('<section class="glossary"')[0]
    names = [re.sub(r"<[^>]+>", "", th) for th in re.findall(r"<th>(.*?)</th>", body, re.S)]
    for table in re.findall(r'<table class="metrics">(.*?)</table>', body, re.S):
        names += re.findall(r"<tr><td>(.*?)</td>", table, re.S)
    return [_html.unescape(n) for n in dict.fromkeys(names)]


def check_tables_and_glossary(report: Path, layout: dict, name: str, labels: tuple[str, ...] = ()) -> None:
    """Issue 25 on a laid-out report (1280 px window, the page's 1,100 px content box): nothing
    scrolls the page sideways, a table wider than its box would scroll inside it, no number or
    header word is broken across lines, headers have machine names nowhere, and the page ends
    with a glossary that has an entry for every metric it shows. ``labels``: names that are the
    page's own labels (model names as column headers)."""
    from biaslens.report.glossary import NOT_METRICS, lookup

    assert layout["scrollWidth"] <= layout["clientWidth"], f"{name}: the page scrolls sideways at 1280 px: {layout}"
    assert layout["boxes"] and max(layout["boxes"]) <= 1100 and not layout["unscrollable"], \
        f"{name}: table boxes wider than the page's 1,100 px or not scrollable: {layout['boxes']}"
    # at these sizes every table fits its box (issue 17); the box would scroll a wider one
    assert not layout["wide"], f"{name}: tables wider than their box (sideways scrolling): {layout['wide']}"
    assert not layout["broken"], f"{name}: numbers or header words broken across lines: {layout['broken'][:10]}"
    assert not layout["numericWrap"], f"{name}: numeric cells that may wrap"
    page = report.read_text(encoding="utf-8")
    assert "<wbr>" not in page, f"{name}: a header that breaks inside a word"
    names = shown_names(page)
    machine = [n for n in names if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", n)]
    assert not machine, f"{name}: machine column names shown: {machine}"
    assert layout["glossaryLast"] and layout["glossary"], f"{name}: no glossary at the end of the page"
    unknown = [n for n in names if lookup(n) is None and n not in NOT_METRICS and n not in labels]
    assert not unknown, (f"{name}: names that are neither a metric in the glossary nor a label "
                         f"(src/biaslens/report/words.yaml or the method's words.yaml): {unknown}")
    missing = sorted({lookup(n) for n in names if lookup(n)} - set(layout["glossary"]))
    assert not missing, f"{name}: metrics shown without their glossary entry: {missing}"
    assert len(layout["glossary"]) == len(set(layout["glossary"])), "a glossary entry twice"


def measure_layout(report: Path, tmp: Path, width: int = 1280) -> dict:
    page = report.read_text(encoding="utf-8")
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    probe = tmp / f"{report.parent.name}-layout.html"
    probe.write_text(page.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    res = chromium([f"--window-size={width},2400", "--hide-scrollbars", "--virtual-time-budget=3000", "--dump-dom",
                    probe.as_uri()], tmp)
    found = re.search(r'data-layout="([^"]*)"', res.stdout)
    assert res.returncode == 0 and found, res.stderr[-2000:]
    import html

    return json.loads(html.unescape(found.group(1)))


class _Structure(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs: list[dict] = []
        self.tables: list[int] = []  # rows per table
        self.scripts: list[str] = []
        self._in_script = False
        self._depth: list[int] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a)
        elif tag == "table":
            self.tables.append(0)
            self._depth.append(len(self.tables) - 1)
        elif tag == "tr" and self._depth:
            self.tables[self._depth[-1]] += 1
        elif tag == "script":
            self._in_script = True
            self.scripts.append("")
        for k, _v in attrs:
            assert not k.startswith("on") or tag != "img", f"event handler on an <img>: {a}"

    def handle_endtag(self, tag):
        if tag == "table" and self._depth:
            self._depth.pop()
        elif tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def check_structure(dom: str, console: str, name: str) -> _Structure:
    assert "Uncaught" not in console and "ERROR:CONSOLE" not in console, f"{name}: console errors:\n{console}"
    s = _Structure()
    s.feed(dom)
    assert s.tables, f"{name}: no table in the report"
    empty = [i for i, n in enumerate(s.tables) if n < 1]
    assert not empty, f"{name}: tables without rows: {empty}"
    for img in s.imgs:
        assert img.get("src", "").startswith("data:image/png"), f"{name}: <img> without an inline PNG: {str(img)[:200]}"
    return s


# -- the runs ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reports(tmp_path_factory, style_encoder) -> dict[str, Path]:
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    root = tmp_path_factory.mktemp("reports")
    out: dict[str, Path] = {}
    out["holistic-likelihood"] = run(suite="holistic-likelihood", model={"name": "fake"}, out=root / "likelihood",
                                     sample=120, use_cache=False).out
    gen = run(suite="holistic-generation", model={"name": "fake"}, out=root / "gen-fake", sample=30, use_cache=False,
              generation={"n_permutations": 0, "n_bootstrap": 0})  # only its prompts are needed
    resp = pd.read_parquet(gen.out / "responses.parquet")
    # every response carries every payload: the report shows only cluster examples the classifier is
    # sure of (p >= 0.5), and whichever it picks must still show each payload as text
    lines = [json.dumps({"prompt": r.text, "response": " ".join(PAYLOADS) + " I'm so sorry to hear that."})
             for r in resp.itertuples()]
    gens = root / "hostile.jsonl"
    gens.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "holistic-generation", "--model", "fake", "--generations", str(gens),
                                      "-o", str(root / "generation"), "--sample", "30", "--n-permutations", "10",
                                      # the zero-shot judge reads these replies as confidently Sympathetic, so
                                      # they are among the shown examples (the trained head's are flatter)
                                      "--style-classifier", "zero-shot", "--no-cache"])
    assert result.exit_code == 0, result.output
    out["holistic-generation"] = root / "generation"
    out["holistic-offensiveness"] = run(suite="holistic-offensiveness", model={"name": "fake"}, out=root / "offensiveness",
                                        axes=["ability"], sample=200, use_cache=False).out
    out["redditbias"] = run(suite="redditbias", model={"name": "fake"}, out=root / "redditbias", use_cache=False,
                            redditbias={"bias_types": ["gender"], "max_template_pairs": 40}).out
    out["community"] = run(suite="community", model={"name": "fake"}, out=root / "community", use_cache=False,
                           community={"n": 2, "n_bootstrap": 50, "max_new_tokens": 16, "min_new_tokens": 0,
                                      "dimensions": ["religion"]}).out
    out["fairpair"] = run(suite="fairpair", model="fake", out=root / "fairpair", use_cache=False,
                          # all three dissimilarities (the default): the per-model table once ran past 1280 px
                          fairpair={"n_occupations": 2, "samples": 6, "max_new_tokens": 12,
                                    "dissimilarities": ["jaccard", "sentiment", "embedding"], "k_folds": 3}).out
    # the five newer suites at small sizes (their wide per-category tables once scrolled the page)
    out["bbq"] = run(suite="bbq", model="fake", out=root / "bbq", use_cache=False,
                     bbq={"categories": ["Religion", "Age", "Sexual_orientation"], "sample": 24, "n_bootstrap": 50}).out
    out["bold"] = run(suite="bold", model="fake", out=root / "bold", use_cache=False,
                      bold={"sample": 40, "max_new_tokens": 6, "n_permutations": 20, "domains": ["gender", "race"]}).out
    out["crows-pairs"] = run(suite="crows-pairs", model="fake", out=root / "crows", use_cache=False,
                             crows_pairs={"sample": 200}).out
    out["winogender"] = run(suite="winogender", model="fake", out=root / "winogender", use_cache=False).out
    out["winobias"] = run(suite="winobias", model="fake", out=root / "winobias", use_cache=False,
                          winobias={"splits": ["dev"]}).out
    # the comparison page of two of them (no model call): its tables and glossary are checked too
    from biaslens.comparison.runs import compare_runs

    compare_runs([str(root / "gen-fake"), str(out["holistic-generation"])], root / "compare")
    out["compare"] = root / "compare"
    return {k: v / "report.html" for k, v in out.items()}


def test_model_output_is_escaped_and_nothing_runs(reports, tmp_path):
    report = reports["holistic-generation"]
    html = report.read_text(encoding="utf-8")
    assert "<script>window.__pwned" not in html and "onerror=\"window" not in html.replace("&quot;", "")
    dom, console = dump_dom(report, tmp_path)
    # shown literally: the serialised DOM escapes text nodes, so the payload appears as text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=" in dom and "window.__pwned=1" in dom
    # nothing ran: no element from the data, no trace left by the DOM-writing payloads
    assert not re.search(r"<script[^>]*>[^<]*__pwned", dom)
    assert not re.search(r"<img[^>]*onerror", dom, re.IGNORECASE)
    assert 'data-pwned="1"' not in dom
    s = _Structure()
    s.feed(dom)
    assert not any("pwned" in code for code in s.scripts)
    assert "Uncaught" not in console, console
    png = screenshot(report, tmp_path)
    assert png.parent == tmp_path


@pytest.mark.parametrize("suite", ["holistic-likelihood", "holistic-generation", "holistic-offensiveness", "redditbias",
                                   "community", "fairpair"])
def test_every_report_renders_in_chromium(reports, suite, tmp_path):
    report = reports[suite]
    dom, console = dump_dom(report, tmp_path)
    s = check_structure(dom, console, suite)
    # holistic-offensiveness has tables only (by design); the others have at least one plot
    assert s.imgs or suite == "holistic-offensiveness", f"{suite}: no plot in the report"
    if suite != "holistic-generation":  # its screenshot is taken by the security test
        screenshot(report, tmp_path)


@pytest.mark.parametrize("suite", ["holistic-likelihood", "holistic-generation", "holistic-offensiveness", "redditbias",
                                   "community", "fairpair", "compare", "bbq", "bold", "crows-pairs", "winogender",
                                   "winobias"])
def test_every_report_fits_the_width_and_opens_with_its_verdict(reports, suite, tmp_path):
    layout = measure_layout(reports[suite], tmp_path)
    # model labels head the columns of per-model tables (community, compare): the title names them
    title = re.search(r"<title>(.*?)</title>", reports[suite].read_text(encoding="utf-8")).group(1)
    labels = ("fake", *title.split(": ", 1)[-1].split(" vs "))
    check_tables_and_glossary(reports[suite], layout, suite, labels=labels)
    if suite == "compare":  # no one-sentence verdict on a comparison page (yet): its sections say it
        return
    # the verdict sentence comes right under the title, before any warning, table, figure or section
    assert layout["afterTitle"] == "headline", f"{suite}: the report does not open with its verdict: {layout}"
    assert layout["order"][0] == "headline" and layout["order"].count("headline") == 1, layout["order"]
    assert not re.search(r"<td>[\[{](&#39;|')", reports[suite].read_text(encoding="utf-8")), f"{suite}: a Python repr in a cell"
    verdict = layout["headline"]
    assert verdict.startswith("Verdict:") and len(verdict) > len("Verdict: ") + 20, verdict


def test_bias_card_page_renders_in_chromium(tmp_path, style_encoder):
    """The card's one page at 1280 px: the sentences and the picture first, then the table of
    headline numbers, a section per method with working links to each suite's report, the
    budget's sizes last; no console errors, nothing wider than the page; the screenshot is saved
    for a look."""
    from rich.console import Console

    from biaslens.bias_card import make_card

    out = tmp_path / "card"
    make_card({"model": "fake", "cache_dir": str(tmp_path / "c")}, out=out, budget="smoke",
              console=Console(stderr=True, quiet=True))
    page = out / "card.html"
    dom, console = dump_dom(page, tmp_path)
    s = check_structure(dom, console, "card")
    # tables[0]: the headline numbers (a header and one row per method); the last: the budget's sizes
    from biaslens.bias_card import card_methods

    assert s.tables[0] == 1 + len(card_methods()), "the headline table has a header and one row per method"
    assert len(s.imgs) == 1 and s.imgs[0]["alt"].startswith("Each method's headline"), s.imgs
    assert dom.index('class="sentences"') < dom.index("<img") < dom.index("One line per method") \
        < dom.index("HolisticBias Likelihood Bias</h2>") < dom.index("Budget and machine</h2>")
    assert dom.count("<li>") == len(card_methods())
    links = re.findall(r'<a href="([^"]+)"', dom)
    assert len(links) == len(card_methods()) and all((out / href).is_file() for href in links), links
    layout = measure_layout(page, tmp_path)
    assert layout["scrollWidth"] <= layout["clientWidth"], f"the card scrolls sideways at 1280 px: {layout}"
    assert not layout["wide"], f"tables wider than their box: {layout['wide']}"
    # what a reader sees first: the sentences' section, its picture, then the table
    assert layout["order"][:3] == ["h2", "figure", "h2"], layout["order"]
    check_tables_and_glossary(page, layout, "card")
    # the card names its metrics in rows: each has its glossary entry
    assert {"Likelihood Bias", "Cohen's d", "Full Gen Bias x1000", "F"} <= set(layout["glossary"]), layout["glossary"]
    png = screenshot(page, tmp_path)
    shutil.copy(png, tmp_path / "card-page.png")


def test_leaderboard_page_renders_and_fits_in_chromium(tmp_path, style_encoder):
    """The leaderboard of 3 and of 50 cards (copies of one fake-model card with other numbers,
    tests/card_clones.py): no console errors, the plot inline, no sideways scrolling at 1280 px,
    the verdict first; the screenshots are saved for a look."""
    import numpy as np
    from card_clones import clone_card
    from rich.console import Console

    from biaslens.bias_card import make_card
    from biaslens.card_leaderboard import leaderboard

    base = tmp_path / "card"
    make_card({"model": "fake", "cache_dir": str(tmp_path / "c")}, out=base, budget="smoke",
              methods=["holistic-likelihood", "redditbias", "holistic-generation", "community"],
              console=Console(stderr=True, quiet=True))

    def other_seed(suite, record):
        record["config"]["seed"] = 3

    rng = np.random.default_rng(1)
    few = [clone_card(base, tmp_path / "few" / "base-model", "base-model"),
           clone_card(base, tmp_path / "few" / "debiased", "debiased", {"holistic-likelihood": -0.5, "redditbias": -0.3}),
           clone_card(base, tmp_path / "few" / "other-seed", "community/fine-tune-with-a-long-name", 0.1,
                      edit_run=other_seed)]
    many = [clone_card(base, tmp_path / "many" / f"m{i:02d}", f"org/checkpoint-{i:02d}", float(rng.normal(0, 0.1)))
            for i in range(50)]
    for name, cards in (("leaderboard-3", few), ("leaderboard-50", many)):
        out = tmp_path / name
        leaderboard(cards, out=out)
        page = out / "leaderboard.html"
        dom, console = dump_dom(page, tmp_path)
        s = check_structure(dom, console, name)
        assert len(s.imgs) == 1, "one plot: every method, models on one axis"
        assert s.tables[0] == 1 + len(cards), "the overview has a header and one row per model"
        layout = measure_layout(page, tmp_path)
        assert layout["scrollWidth"] <= layout["clientWidth"], f"{name}: the page scrolls sideways: {layout}"
        assert not layout["wide"], f"{name}: tables wider than their box: {layout['wide']}"
        assert layout["afterTitle"] == "headline" and layout["order"][0] == "headline", layout
        png = tmp_path / f"{name}.png"
        res = chromium([f"--screenshot={png}", "--window-size=1280,2400", "--hide-scrollbars", page.as_uri()], tmp_path)
        assert res.returncode == 0 and png.stat().st_size > 10_000, res.stderr[-2000:]


def test_leaderboard_of_every_method_fits_1280(fake_smoke_card, tmp_path):
    """Two cards of every method (ten columns in the overview): no sideways scrolling at 1280 px,
    no table wider than its box, and the verdict one line per finding."""
    from card_clones import clone_card

    from biaslens.card_leaderboard import leaderboard

    src, _ = fake_smoke_card
    cards = [clone_card(src, tmp_path / "a", "base-model"), clone_card(src, tmp_path / "b", "org/debiased-model", 0.01)]
    leaderboard(cards, out=tmp_path / "lb")
    page = tmp_path / "lb" / "leaderboard.html"
    layout = measure_layout(page, tmp_path)
    assert layout["scrollWidth"] <= layout["clientWidth"], f"the leaderboard scrolls sideways: {layout}"
    assert not layout["wide"], f"tables wider than their box: {layout['wide']}"
    html = page.read_text(encoding="utf-8")
    headline = html.split('class="headline"', 1)[1].split("</div>", 1)[0]
    assert headline.count("<li>") < 10 and headline.count("no two of 2 models") <= 1, headline
