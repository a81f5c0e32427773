"""Docs that hold in a clone (issue 25): every relative link in README.md and docs/*.md resolves
to a file the repository contains, and no doc points at the development machine's files
outside it (``../shared/...`` specs, seeds, reference data, benchmark inputs)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and [text]: target (reference definitions); images too
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
# paths of the machine the project was built on, not of a clone
OUTSIDE = re.compile(r"(?:\.\./)+shared/|/work/(?:shared|main)\b|\bshared/(?:specs|seeds|reference|bench)/")


def _tracked() -> set[str] | None:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None  # not a git checkout (an sdist): existence on disk is the check
    return set(out.splitlines())


def broken_links(doc: Path, text: str, tracked: set[str] | None) -> list[str]:
    """The relative links of ``doc`` whose target is outside the repository or not in it."""
    bad = []
    for m in LINK.finditer(text):
        href = (m.group(1) or m.group(2)).split("#")[0].split("?")[0]
        if not href or re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", href) or href.startswith("//"):
            continue  # an anchor on the page, or a URL (http:, https:, mailto:)
        target = (doc.parent / href).resolve() if not href.startswith("/") else Path(href)
        try:
            rel = target.relative_to(ROOT).as_posix()
        except ValueError:
            bad.append(f"{href} (outside the repository)")
            continue
        exists = target.exists() if tracked is None else (
            rel in tracked or any(t.startswith(rel.rstrip("/") + "/") for t in tracked) or rel == ".")
        if not exists:
            bad.append(f"{href} (not in the repository)")
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_doc_links_resolve_inside_the_repository(doc):
    text = doc.read_text(encoding="utf-8")
    bad = broken_links(doc, text, _tracked())
    assert not bad, f"{doc.relative_to(ROOT)}: links a clone cannot follow: {bad}"
    outside = sorted({m.group(0) for m in OUTSIDE.finditer(text)})
    assert not outside, (f"{doc.relative_to(ROOT)} names files a clone does not have ({outside}): link the public "
                         "source (the paper's arXiv/ACL page, the authors' GitHub repository) or say how to get it")


def test_the_checker_catches_what_it_should(tmp_path):
    """A missing file, a path out of the repository and a ../shared mention fail; a file the
    repository has, a URL and an anchor pass."""
    doc = ROOT / "docs" / "x.md"
    text = ("[ok](architecture.md) [ok2](../src/biaslens/api.py#L1) [url](https://arxiv.org/abs/2205.09209) "
            "[anchor](#top)\n[gone](nope.md) [out](../../etc/passwd)\n[ref]: ../missing/file.txt\n")
    bad = broken_links(doc, text, _tracked())
    assert bad == ["nope.md (not in the repository)", "../../etc/passwd (outside the repository)",
                   "../missing/file.txt (not in the repository)"]
    assert OUTSIDE.search("spec: `../shared/specs/fairpair.md`") and OUTSIDE.search("/work/shared/reference")
    assert not OUTSIDE.search("the shared term matcher; a shared cache /shared/biaslens-cache")
