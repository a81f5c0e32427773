"""Readers for a community's posts and comments: CSV, JSONL or Parquet, one file
(a row per comment, or a list of comments per post) or a posts file and a comments file
joined on a post id. Every problem is reported with the file (and line) before any
training starts; posts without comments and empty/deleted comments are counted skips.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.errors import DatasetError
from biaslens.fileio import json_object_line
from biaslens.methods.community.dataset.cleaning import DELETED_MARKERS, TextCleaner


class CommunityDataError(DatasetError):
    """Community data cannot be read; the message names the file, the line or the columns."""


#: column names tried in order when the user does not name one
TITLE_CANDIDATES = ("title", "post_title")
TEXT_CANDIDATES = ("text", "selftext", "post_text", "body", "content", "post")
COMMENT_CANDIDATES = ("comment", "comments", "body", "comment_text", "reply", "text")
POST_ID_CANDIDATES = ("post_id", "id", "submission_id", "thread_id")
COMMENT_POST_ID_CANDIDATES = ("post_id", "link_id", "submission_id", "thread_id")
AUTHOR_CANDIDATES = ("author", "user", "username", "user_name")


@dataclass
class Columns:
    """Column names; ``None`` means: the first candidate present in the file.

    Attributes:
        title: post title (optional if ``text`` exists).
        text: post body (optional if ``title`` exists).
        comment: the comment text (a string, or a list of strings per post in JSONL/Parquet).
        post_id: posts file (two-file mode): the post's id.
        comment_post_id: comments file: the id of the post it answers (Reddit's
            ``link_id`` works: its ``t3_`` prefix is dropped).
        author: author column(s); its values are removed from texts as user names.
            ``""`` turns that off.
    """

    title: str | None = None
    text: str | None = None
    comment: str | None = None
    post_id: str | None = None
    comment_post_id: str | None = None
    author: str | None = None


@dataclass
class CommunityExample:
    """One post/comment pair after cleaning."""

    post: str
    comment: str
    post_id: str


@dataclass
class CommunityData:
    """Cleaned pairs and the counts of what was read, removed and skipped."""

    examples: list[CommunityExample]
    counts: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    columns: dict[str, str | None] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"sources": self.sources, "columns": self.columns, "counts": self.counts, "removed": self.removed}


# -- low-level reading -------------------------------------------------------

def _decode(path: Path) -> str:
    from biaslens.fileio import read_text

    return read_text(path, CommunityDataError)


def _format_of(path: Path) -> str:
    name = path.name.lower()
    for suffix, fmt in ((".csv", "csv"), (".tsv", "tsv"), (".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "jsonl"),
                        (".parquet", "parquet"), (".pq", "parquet")):
        if name.endswith(suffix):
            return fmt
    raise CommunityDataError(f"{path}: unsupported file type; use .csv, .tsv, .jsonl or .parquet")


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV/TSV/JSONL/Parquet file as a DataFrame of objects (no type guessing).

    Raises:
        CommunityDataError: missing/empty file, non-UTF-8 bytes (with the line), bad
            JSON (with the line), malformed CSV.
    """
    path = Path(path)
    if not path.is_file():
        raise CommunityDataError(f"{path}: no such file")
    fmt = _format_of(path)
    if fmt == "parquet":
        try:
            df = pd.read_parquet(path)
        except Exception as e:  # noqa: BLE001 - pyarrow raises many types; one clear message
            raise CommunityDataError(f"{path}: cannot read Parquet: {type(e).__name__}: {str(e)[:200]}") from None
    elif fmt == "jsonl":
        text = _decode(path)
        records = []
        # "\n" only: str.splitlines() also splits at U+2028, U+0085, ... which JSON allows inside strings
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            records.append(json_object_line(line, f"{path}:{lineno}", CommunityDataError))
        df = pd.DataFrame.from_records(records)
    else:
        text = _decode(path)
        try:
            df = pd.read_csv(io.StringIO(text), sep="\t" if fmt == "tsv" else ",", dtype=object,
                             keep_default_na=False, na_values=[], quoting=csv.QUOTE_MINIMAL)
        except pd.errors.EmptyDataError:
            df = pd.DataFrame()
        except (pd.errors.ParserError, csv.Error) as e:
            raise CommunityDataError(f"{path}: malformed CSV: {' '.join(str(e).split())[:200]}") from None
    if df.empty:
        raise CommunityDataError(f"{path}: the file has no rows")
    df.columns = [str(c) for c in df.columns]
    return df


def _pick(df: pd.DataFrame, path: Path, role: str, given: str | None, candidates: tuple[str, ...],
          required: bool, exclude: tuple[str | None, ...] = ()) -> str | None:
    if given == "":
        return None
    if given is not None:
        if given not in df.columns:
            raise CommunityDataError(f"{path}: no {role} column {given!r}; columns found: {list(df.columns)}")
        return given
    for c in candidates:
        if c in df.columns and c not in exclude:
            return c
    if required:
        raise CommunityDataError(f"{path}: no {role} column (tried {list(candidates)}; name it with "
                                 f"--{role.replace(' ', '-')}-column); columns found: {list(df.columns)}")
    return None


def _as_text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v != v:  # NaN
        return ""
    return str(v)


def _norm_id(v: Any) -> str:
    s = _as_text(v).strip()
    if s.endswith(".0") and s[:-2].isdigit():  # ids read as floats by Parquet/JSON
        s = s[:-2]
    return s[3:] if s[:3] in ("t3_", "t1_") else s  # Reddit fullnames -> ids


def _comment_list(v: Any) -> list[str]:
    if isinstance(v, (list, tuple)) or (hasattr(v, "tolist") and not isinstance(v, str)):
        items = v.tolist() if hasattr(v, "tolist") else list(v)
        return [_as_text(c.get("body", c.get("text", "")) if isinstance(c, dict) else c) for c in items]
    return [_as_text(v)]


# -- the public reader -------------------------------------------------------

def read_community(
    data: str | Path,
    *,
    comments: str | Path | None = None,
    columns: Columns | None = None,
    clean: bool = True,
    limit: int | None = None,
) -> CommunityData:
    """Read, join and clean a community's posts and comments.

    Args:
        data: one file with a row per comment (post columns repeated) or a row per post
            with a list of comments; with ``comments``, the posts file.
        comments: a separate comments file, joined to ``data`` on the post id.
        columns: column names (defaults: the first known name present, see :class:`Columns`).
        clean: apply :class:`~biaslens.methods.community.dataset.cleaning.TextCleaner`.
        limit: keep at most this many examples (in file order), e.g. for a quick trial.

    Returns:
        The cleaned post/comment pairs with counts: ``rows``, ``posts``, ``comments``,
        ``examples``, and skips: ``posts_without_comments``, ``empty_comments``,
        ``deleted_comments``, ``orphan_comments`` (post id not in the posts file),
        ``empty_posts`` (kept: the comment is still learned).

    Raises:
        CommunityDataError: unreadable file, missing columns, or no example left.
    """
    cols = columns or Columns()
    data = Path(data)
    posts_df = read_table(data)
    counts: Counter[str] = Counter()
    sources = [str(data)]
    if comments is None:
        # in one file "text" is the post's text, never the comment
        comment_col = _pick(posts_df, data, "comment", cols.comment,
                            tuple(c for c in COMMENT_CANDIDATES if c != "text"), True)
        title_col = _pick(posts_df, data, "title", cols.title, TITLE_CANDIDATES, False, exclude=(comment_col,))
        text_col = _pick(posts_df, data, "text", cols.text, TEXT_CANDIDATES, False, exclude=(comment_col, title_col))
        id_col = _pick(posts_df, data, "post id", cols.post_id, POST_ID_CANDIDATES, False)
        author_cols = [c for c in [_pick(posts_df, data, "author", cols.author, AUTHOR_CANDIDATES, False)] if c]
        comments_df = None
        link_col = None
    else:
        comments = Path(comments)
        sources.append(str(comments))
        comments_df = read_table(comments)
        comment_col = _pick(comments_df, comments, "comment", cols.comment, COMMENT_CANDIDATES, True)
        link_col = _pick(comments_df, comments, "comment post id", cols.comment_post_id,
                         COMMENT_POST_ID_CANDIDATES, True)
        title_col = _pick(posts_df, data, "title", cols.title, TITLE_CANDIDATES, False)
        text_col = _pick(posts_df, data, "text", cols.text, TEXT_CANDIDATES, False, exclude=(title_col,))
        id_col = _pick(posts_df, data, "post id", cols.post_id, POST_ID_CANDIDATES, True)
        author_cols = [c for c in (_pick(posts_df, data, "author", cols.author, AUTHOR_CANDIDATES, False),
                                   _pick(comments_df, comments, "author", cols.author, AUTHOR_CANDIDATES, False)) if c]
    if title_col is None and text_col is None:
        raise CommunityDataError(f"{data}: no post title or text column (tried {list(TITLE_CANDIDATES + TEXT_CANDIDATES)};"
                                 f" name one with --title-column/--text-column); columns found: {list(posts_df.columns)}")
    names: set[str] = set()
    for df in (posts_df, comments_df):
        if df is None:
            continue
        for c in author_cols:
            if c in df.columns:
                names.update(_as_text(v) for v in df[c].tolist())
    cleaner = TextCleaner(names) if clean else None

    def tidy(s: str) -> str:
        return cleaner.clean(s) if cleaner is not None else s.strip()

    def post_text(row: dict[Hashable, Any]) -> str:
        parts = [tidy(_as_text(row.get(c))) for c in (title_col, text_col) if c]
        return "\n".join(p for p in parts if p)

    examples: list[CommunityExample] = []

    def add(post: str, raw_comment: str, pid: str) -> bool:
        counts["comments"] += 1
        if raw_comment.strip().lower() in DELETED_MARKERS:
            counts["deleted_comments"] += 1
            return False
        comment = tidy(raw_comment)
        if not comment:
            counts["empty_comments"] += 1
            return False
        if not post:
            counts["empty_posts"] += 1
        examples.append(CommunityExample(post=post, comment=comment, post_id=pid))
        return True

    if comments_df is None:
        counts["rows"] = len(posts_df)
        seen_posts: dict[str, bool] = {}
        for i, row in enumerate(posts_df.to_dict("records")):
            pid = _norm_id(row.get(id_col)) if id_col else f"row{i + 1}"
            key = pid if id_col else f"{_as_text(row.get(title_col))}\x00{_as_text(row.get(text_col))}"
            post = post_text(row)
            any_kept = False
            for c in _comment_list(row.get(comment_col)):
                any_kept |= add(post, c, pid)
            seen_posts[key] = seen_posts.get(key, False) or any_kept
            if limit is not None and len(examples) >= limit:
                break
        counts["posts"] = len(seen_posts)
        counts["posts_without_comments"] = sum(1 for v in seen_posts.values() if not v)
    else:
        counts["rows"] = len(posts_df) + len(comments_df)
        posts: dict[str, str] = {}
        for row in posts_df.to_dict("records"):
            pid = _norm_id(row.get(id_col))
            if pid in posts:
                counts["duplicate_post_ids"] += 1
                continue
            posts[pid] = post_text(row)
        counts["posts"] = len(posts)
        with_comments: set[str] = set()
        for row in comments_df.to_dict("records"):
            pid = _norm_id(row.get(link_col))
            if pid not in posts:
                counts["orphan_comments"] += 1
                continue
            for c in _comment_list(row.get(comment_col)):
                if add(posts[pid], c, pid):
                    with_comments.add(pid)
            if limit is not None and len(examples) >= limit:
                break
        counts["posts_without_comments"] = len(set(posts) - with_comments)
    if limit is not None:
        examples = examples[:limit]
    counts["examples"] = len(examples)
    for k in ("posts_without_comments", "empty_comments", "deleted_comments", "orphan_comments", "empty_posts"):
        counts.setdefault(k, 0)
    if not examples:
        raise CommunityDataError(f"{', '.join(sources)}: no post/comment pair left after joining and cleaning "
                                 f"(counts: {dict(counts)})")
    used = {"title": title_col, "text": text_col, "comment": comment_col, "post_id": id_col,
            "comment_post_id": link_col, "author": ",".join(dict.fromkeys(author_cols)) or None}
    return CommunityData(examples=examples, counts=dict(counts), removed=dict(cleaner.counts) if cleaner else {},
                         sources=sources, columns=used)
