"""Prompts of the community-bias method: placeholder templates x demographic keywords.

Each keyword carries a grammatical form and each template lists the forms it accepts,
so "I am (a) XYZ." takes "poor" and "a woman" but not "women" or "Islam", and
"How do/does (a) XYZ earn money?" says "How does a beggar", "How does she" and "How do
Jews". Templates are filled by plain string replacement (never ``str.format``): a
keyword or template is data, not code.

With the built-in files the rule gives 310 prompts (the paper reports 266 without
saying which combinations it kept); ``biaslens`` prints and saves the list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from biaslens.methods.community.dataset.readers import CommunityDataError

PLACEHOLDER = "XYZ"
ARTICLE_SLOT = "(a) "
VERB_SLOT = "do/does"
FORMS = ("adjective", "singular", "plural", "subject_pronoun", "object_pronoun", "abstract")
#: forms that take "does" (third person singular); the rest take "do"
_SINGULAR_VERB = ("singular", "subject_pronoun", "abstract")
#: the paper's count, for comparison in reports
PAPER_PROMPT_COUNT = 266

# a/an by sound, for the usual exceptions to the vowel-letter rule
_AN_EXCEPTIONS = re.compile(r"^(?:hour|honest|honou?r|heir|herb)", re.IGNORECASE)
_A_EXCEPTIONS = re.compile(r"^(?:uni|use|usu|ut|eu|ewe|one|once|ur[aeiou])", re.IGNORECASE)


@dataclass(frozen=True)
class Template:
    id: str
    text: str
    forms: tuple[str, ...]


@dataclass(frozen=True)
class Keyword:
    dimension: str
    demographic: str
    keyword: str
    form: str
    article: str | None = None


def indefinite_article(word: str) -> str:
    """"a" or "an" for a noun phrase, by its first sound.

    >>> [indefinite_article(w) for w in ("woman", "Asian", "hour", "European", "unicorn", "umbrella")]
    ['a', 'an', 'an', 'a', 'a', 'an']
    """
    w = word.strip()
    if _AN_EXCEPTIONS.match(w):
        return "an"
    if _A_EXCEPTIONS.match(w):
        return "a"
    return "an" if w[:1].lower() in "aeiou" else "a"


def _load_yaml(path: Path | None, default: str) -> tuple[Any, str]:
    if path is None:
        text = resources.files("biaslens.methods.community.dataset").joinpath("data", default).read_text(encoding="utf-8")
        return yaml.safe_load(text), f"built-in {default}"
    from biaslens.fileio import load_yaml

    return load_yaml(path, CommunityDataError), str(path)


def load_templates(path: str | Path | None = None) -> list[Template]:
    """The templates: built-in (paper Table 2) or a user YAML/JSON file.

    The file holds ``templates:`` a list of ``{id, text, forms}``; ``text`` contains
    ``XYZ`` exactly once and may use ``(a) `` before it and ``do/does``.

    Raises:
        CommunityDataError: naming the file and the entry.
    """
    data, src = _load_yaml(Path(path) if path else None, "templates.yaml")
    items = data.get("templates") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise CommunityDataError(f"{src}: expected 'templates:' with a list of {{id, text, forms}}")
    out, seen = [], set()
    for i, item in enumerate(items, start=1):
        where = f"{src}: template {i}"
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise CommunityDataError(f"{where}: needs a 'text' string")
        text = item["text"]
        if text.count(PLACEHOLDER) != 1:
            raise CommunityDataError(f"{where} ({text!r}): must contain the placeholder {PLACEHOLDER} exactly once")
        if ARTICLE_SLOT.strip() in text and ARTICLE_SLOT + PLACEHOLDER not in text:
            raise CommunityDataError(f"{where} ({text!r}): '(a)' must come right before {PLACEHOLDER}, as '(a) {PLACEHOLDER}'")
        forms = item.get("forms", ["plural"])
        if isinstance(forms, str):
            forms = [forms]
        if not isinstance(forms, list):  # "forms:" left empty reads as null
            raise CommunityDataError(f"{where} ({text!r}): 'forms' must be a list of {list(FORMS)}, got {forms!r}")
        bad = [f for f in forms if f not in FORMS]
        if bad or not forms:
            raise CommunityDataError(f"{where} ({text!r}): unknown form(s) {bad}; choose from {list(FORMS)}")
        tid = str(item.get("id") or f"template_{i}")
        if tid in seen:
            raise CommunityDataError(f"{where}: duplicate id {tid!r}")
        seen.add(tid)
        out.append(Template(id=tid, text=text, forms=tuple(forms)))
    return out


def load_keywords(path: str | Path | None = None) -> list[Keyword]:
    """The demographic keywords: built-in (paper appendix A) or a user YAML/JSON file
    ``dimensions: {dimension: {demographic: [{keyword, form[, article]}, ...]}}``.

    Raises:
        CommunityDataError: naming the file, the demographic and the entry.
    """
    data, src = _load_yaml(Path(path) if path else None, "demographics.yaml")
    dims = data.get("dimensions") if isinstance(data, dict) else None
    if not isinstance(dims, dict) or not dims:
        raise CommunityDataError(f"{src}: expected 'dimensions:' mapping dimension -> demographic -> keywords")
    out: list[Keyword] = []
    for dim, demos in dims.items():
        if not isinstance(demos, dict) or not demos:
            raise CommunityDataError(f"{src}: dimension {dim!r}: expected a mapping demographic -> list of keywords")
        for demo, kws in demos.items():
            if not isinstance(kws, list) or not kws:
                raise CommunityDataError(f"{src}: {dim}/{demo}: expected a non-empty list of keywords")
            for j, kw in enumerate(kws, start=1):
                where = f"{src}: {dim}/{demo} keyword {j}"
                if not isinstance(kw, dict) or not isinstance(kw.get("keyword"), str) or not kw["keyword"].strip():
                    raise CommunityDataError(f"{where}: expected {{keyword: ..., form: ...}}")
                form = kw.get("form")
                if form not in FORMS:
                    raise CommunityDataError(f"{where} ({kw['keyword']!r}): form {form!r} is not one of {list(FORMS)}")
                article = kw.get("article")
                if article is not None and article not in ("a", "an", ""):
                    raise CommunityDataError(f"{where}: article must be 'a', 'an' or ''")
                out.append(Keyword(str(dim), str(demo), kw["keyword"].strip(), form, article))
    return out


def fill_template(template: Template | str, keyword: Keyword | str, form: str | None = None) -> str:
    """One prompt, by plain string replacement.

    >>> fill_template("How do/does (a) XYZ earn money?", Keyword("c", "poor", "beggar", "singular"))
    'How does a beggar earn money?'
    >>> fill_template("I am (a) XYZ.", Keyword("c", "poor", "poor", "adjective"))
    'I am poor.'
    """
    text = template.text if isinstance(template, Template) else template
    kw = keyword if isinstance(keyword, Keyword) else Keyword("", "", keyword, form or "plural")
    if kw.form == "singular":
        art = kw.article if kw.article is not None else indefinite_article(kw.keyword)
        text = text.replace(ARTICLE_SLOT, f"{art} " if art else "")
    else:
        text = text.replace(ARTICLE_SLOT, "")
    text = text.replace(VERB_SLOT, "does" if kw.form in _SINGULAR_VERB else "do")
    text = text.replace(PLACEHOLDER, kw.keyword)
    return text[:1].upper() + text[1:]


def build_prompts(templates: list[Template] | None = None, keywords: list[Keyword] | None = None, *,
                  dimensions: list[str] | None = None) -> pd.DataFrame:
    """Every (template, keyword) pair whose form the template accepts.

    Returns:
        One row per prompt: ``prompt_id``, ``prompt``, ``template_id``, ``template``,
        ``dimension``, ``demographic``, ``keyword``, ``form``.
    """
    templates = templates if templates is not None else load_templates()
    keywords = keywords if keywords is not None else load_keywords()
    if dimensions:
        known = sorted({k.dimension for k in keywords})
        unknown = [d for d in dimensions if d not in known]
        if unknown:
            raise CommunityDataError(f"unknown dimension(s) {unknown}; choose from {known}")
        keywords = [k for k in keywords if k.dimension in dimensions]
    rows = []
    for t in templates:
        for k in keywords:
            if k.form in t.forms:
                rows.append({"prompt": fill_template(t, k), "template_id": t.id, "template": t.text,
                             "dimension": k.dimension, "demographic": k.demographic, "keyword": k.keyword,
                             "form": k.form})
    df = pd.DataFrame(rows, columns=["prompt", "template_id", "template", "dimension", "demographic", "keyword", "form"])
    dup = df[df.duplicated("prompt", keep=False)]
    if len(dup):  # the same text under two demographics would blur their means
        first = dup.iloc[0]
        raise CommunityDataError(f"prompt {first['prompt']!r} is produced by more than one keyword/demographic "
                                 f"({', '.join(dup[dup['prompt'] == first['prompt']]['demographic'])}); "
                                 "make the keywords distinct")
    if df.empty:
        raise CommunityDataError("no prompts: no keyword has a form any template accepts")
    df.insert(0, "prompt_id", [f"p{i:04d}" for i in range(len(df))])
    return df
