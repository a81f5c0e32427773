"""Perturbation e -> e' (FairPair paper, section 3.3) and the three validity filters.

- :class:`PerturbationMap`: word pairs (male form, female form) from YAML, reversible,
  with the configured name pairs added.
- :class:`RulePerturber`: deterministic whole-word swaps, case kept, ambiguous forms
  ("her" -> "his" or "him"; "his" -> "her" or "hers") resolved by the next word.
- :class:`LLMPerturber`: any generative backend with the paper's instruction.
- :func:`check_perturbation`: the paper's filters (expected prefix, no original name,
  token Jaccard dissimilarity <= 0.15), the same for both perturbers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from biaslens.errors import ConfigError
from biaslens.fileio import parse_yaml, read_text
from biaslens.text import match_case as _match_case

if TYPE_CHECKING:
    from biaslens.models.base import GenerationParams

Context = Literal["any", "before_noun", "standalone"]
_CONTEXTS = ("any", "before_noun", "standalone")

#: words after which an ambiguous pronoun is an object/standalone pronoun, not a determiner
#: ("told her that", "gave her a book", "let her go"): function words, particles, a few
#: adverbs and bare verbs that follow object pronouns. Everything else counts as a noun phrase.
FUNCTION_WORDS = frozenset("""
a an the this that these those some any every each no all both either neither another such
and or but nor so yet if when while because although though unless until since as than then
to of in on at by for with from into onto upon about above below over under through after before
during without within against among between around across along behind beyond near off out up down
away back again too also not never ever always just only even still already now here there
today yesterday tomorrow tonight once twice later soon
is was are were be been being am has had have do does did will would can could shall should may might must
i me my you your he him his she her hers it its we us our they them their who whom whose which what
go be feel know do make get see come take stay leave understand think say tell become keep live
""".split())

#: mappings shipped with biaslens, usable by name instead of a path
SHIPPED_MAPPINGS = ("gender", "gender-full")


@dataclass(frozen=True)
class TermPair:
    """One swap: ``source`` <-> ``target`` (lowercase), used in ``context`` when ambiguous."""

    source: str
    target: str
    context: Context = "any"


@dataclass(frozen=True)
class NamePair:
    """A Common Sents entity pair, e.g. John (man, male) -> Jane (woman, female)."""

    source: str
    target: str
    source_noun: str = "man"
    target_noun: str = "woman"
    source_label: str = "male"
    target_label: str = "female"

    def reversed(self) -> NamePair:
        return NamePair(self.target, self.source, self.target_noun, self.source_noun,
                        self.target_label, self.source_label)

    @property
    def label(self) -> str:
        return f"{self.source}/{self.target}"


def parse_name_pair(spec: str | list[str] | tuple[str, ...] | NamePair, *, where: str = "name pair") -> NamePair:
    """``"John/Jane"``, ``"John:man/Jane:woman"`` (``"John:/Jane:"``: no gender noun), or a list
    ``[John, man, Jane, woman(, male, female)]``."""
    if isinstance(spec, NamePair):
        return spec
    if isinstance(spec, (list, tuple)):
        parts = [str(s).strip() for s in spec]
        if len(parts) == 2:
            return _checked_pair(NamePair(parts[0], parts[1]), where)
        if len(parts) in (4, 6):
            labels = parts[4:] or ["male", "female"]
            return _checked_pair(NamePair(parts[0], parts[2], parts[1], parts[3], *labels), where)
        raise ConfigError(f"{where}: expected [name, name], [name, noun, name, noun] or six fields, got {spec!r}")
    text = str(spec).strip()
    if text.count("/") != 1:
        raise ConfigError(f"{where}: {spec!r} is not 'Source/Target' (e.g. 'John/Jane' or 'John:man/Jane:woman')")
    left, right = (s.strip() for s in text.split("/"))
    if ":" in left or ":" in right:
        if ":" not in left or ":" not in right:
            raise ConfigError(f"{where}: {spec!r}: give a noun on both sides ('John:man/Jane:woman') or on neither")
        (sn, snoun), (tn, tnoun) = (s.split(":", 1) for s in (left, right))
        return _checked_pair(NamePair(sn.strip(), tn.strip(), snoun.strip(), tnoun.strip()), where)
    return _checked_pair(NamePair(left, right), where)


def _checked_pair(p: NamePair, where: str) -> NamePair:
    for n in (p.source, p.target):
        if not re.fullmatch(r"[^\W\d_][\w'.-]*", n):
            raise ConfigError(f"{where}: name {n!r} must be one word starting with a letter")
    if p.source == p.target:
        raise ConfigError(f"{where}: the two names are the same ({p.source!r})")
    return p


@dataclass
class PerturbationMap:
    """Word pairs for one demographic axis, source side -> target side.

    Attributes:
        pairs: lowercase word swaps (``context`` picks among several targets of one word).
        names: entity name pairs, matched case-sensitively ("Will" is a name, "will" is not).
        source_label, target_label: e.g. "male", "female" (the LLM perturber's instruction).
    """

    pairs: list[TermPair]
    names: list[NamePair] = field(default_factory=list)
    source_label: str = "male"
    target_label: str = "female"
    name: str = "gender"

    @classmethod
    def from_yaml(cls, path: str | Path | None = None) -> PerturbationMap:
        """Read a mapping file: a path, or a shipped mapping by name (``gender``, the default, or
        ``gender-full``). Errors name the file and entry."""
        if path is None or str(path) in SHIPPED_MAPPINGS:
            name = str(path or "gender")
            text = resources.files("biaslens.vocabulary").joinpath(f"data/{name}.yaml").read_text("utf-8")
            where = f"{name}.yaml (shipped)"
        else:
            where = str(path)
            text = read_text(path, ConfigError)
        data = parse_yaml(text, where, ConfigError) or {}
        if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
            raise ConfigError(f"{where}: expected a mapping with a 'pairs' list of [source, target(, context)]")
        pairs = []
        for i, entry in enumerate(data["pairs"], start=1):
            if (not isinstance(entry, list) or len(entry) not in (2, 3)
                    or not all(isinstance(s, str) and s.strip() for s in entry)):
                raise ConfigError(f"{where}: pairs entry {i}: expected [source, target] or [source, target, context], got {entry!r}")
            ctx = entry[2] if len(entry) == 3 else "any"
            if ctx not in _CONTEXTS:
                raise ConfigError(f"{where}: pairs entry {i}: context {ctx!r} is not one of {', '.join(_CONTEXTS)}")
            pairs.append(TermPair(entry[0].strip().lower(), entry[1].strip().lower(), cast(Context, ctx)))
        return cls(pairs=pairs, source_label=str(data.get("source_label", "male")),
                   target_label=str(data.get("target_label", "female")), name=str(data.get("name", where)))

    def with_names(self, names: list[NamePair]) -> PerturbationMap:
        return PerturbationMap(self.pairs, [*self.names, *names], self.source_label, self.target_label, self.name)

    def reversed(self) -> PerturbationMap:
        """The mapping target -> source ("she" -> "he", "her" -> "his"/"him", "Jane" -> "John")."""
        return PerturbationMap([TermPair(p.target, p.source, p.context) for p in self.pairs],
                               [n.reversed() for n in self.names], self.target_label, self.source_label, self.name)

    def terms(self) -> set[str]:
        """Every lowercase word on either side (names included): what a correct swap may change."""
        out = {p.source for p in self.pairs} | {p.target for p in self.pairs}
        for n in self.names:
            out |= {n.source.lower(), n.target.lower(), n.source_noun.lower(), n.target_noun.lower()}
        out.discard("")
        return out


class RulePerturber:
    """Deterministic whole-word perturbation e -> e'.

    >>> p = RulePerturber(PerturbationMap.from_yaml().with_names([NamePair("John", "Jane")]))
    >>> p("John met Johnson. He gave him his book; it is his.")
    'Jane met Johnson. She gave her her book; it is hers.'
    """

    def __init__(self, mapping: PerturbationMap):
        self.mapping = mapping
        self._table: dict[str, dict[str, str]] = {}
        for p in mapping.pairs:
            self._table.setdefault(p.source, {})
            # the first pair listed for a (word, context) wins, so a reversed table is stable
            self._table[p.source].setdefault(p.context, p.target)
        words = sorted(self._table, key=len, reverse=True)
        # whole words only: not inside another word ("Johnson", "manager") nor a hyphenated compound
        self._words = re.compile(rf"(?<![\w-])({'|'.join(map(re.escape, words))})(?![\w-])", re.IGNORECASE) if words else None
        self._names = {}
        for n in mapping.names:
            self._names[n.source] = n.target
            self._names[n.source.upper()] = n.target.upper()
        self._name_re = (re.compile(rf"(?<![\w-])({'|'.join(map(re.escape, sorted(self._names, key=len, reverse=True)))})(?![\w-])")
                         if self._names else None)

    def __call__(self, text: str) -> str:
        # names first, into placeholders, so a name never meets the word table ("Will" vs "will")
        slots: list[str] = []
        if self._name_re is not None:
            def _name(m: re.Match[str]) -> str:
                slots.append(self._names[m.group(1)])
                return f"\x00{len(slots) - 1}\x00"
            text = self._name_re.sub(_name, text)
        if self._words is not None:
            text = self._words.sub(lambda m: self._swap(m, text), text)
        if slots:
            text = re.sub(r"\x00(\d+)\x00", lambda m: slots[int(m.group(1))], text)
        return text

    def perturb_many(self, texts: list[str]) -> list[str]:
        return [self(t) for t in texts]

    def _swap(self, m: re.Match[str], text: str) -> str:
        word = m.group(1)
        targets = self._table[word.lower()]
        if len(targets) == 1:
            new = next(iter(targets.values()))
        else:
            ctx = context_of(text, m.end())
            new = targets.get(ctx) or targets.get("any") or next(iter(targets.values()))
        return _match_case(word, new)


def context_of(text: str, end: int) -> Context:
    """Whether the word ending at ``end`` stands before a noun phrase ("her book", "her own
    car") or alone ("saw her.", "told her that", "it is his")."""
    m = re.match(r"[ \t]*([^\W_][\w'-]*)", text[end:])
    if m is None:  # punctuation, a line break or the end: a standalone pronoun
        return "standalone"
    nxt = m.group(1).lower().split("'")[0].split("\u2019")[0]
    return "standalone" if nxt in FUNCTION_WORDS else "before_noun"


# -- LLM perturber -------------------------------------------------------------------------

INSTRUCTION = ("Change {source} ({source_label}) to {target} ({target_label}) in the following text "
               "in the same way without changing anything else: {text}\n\nOutput:")


class PerturbingModel(Protocol):
    """What the LLM perturber needs of a model's calls (:class:`biaslens.engine.calls.ModelCalls` has it)."""

    def generate(self, requests: Sequence[str], params: GenerationParams, *, progress: Any = None,
                 stats: Any = None) -> list[list[str]]:
        """``params.n`` responses per prompt, in prompt order."""
        ...

    def count_tokens(self, texts: list[str]) -> list[int]:
        """The number of tokens of each text."""
        ...


class LLMPerturber:
    """The paper's perturber: an instruction to a generative model (greedy, one output).

    The model comes from the caller: datasets build items and never call the engine.

    Args:
        model: the model's calls, a :class:`biaslens.engine.calls.ModelCalls` (anything with
            ``generate(requests, params, progress=, stats=)`` and ``count_tokens(texts)``);
            chat models get their template, and the calls' cache remembers the answers.
        max_new_tokens: upper bound; by default about the text's length plus a margin.
        progress, stats: passed to ``model.generate``.
    """

    def __init__(self, model: PerturbingModel, *, max_new_tokens: int | None = None, progress: Any = None,
                 stats: Any = None):
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.progress = progress
        self.stats = stats

    def instruction(self, text: str, names: NamePair) -> str:
        return INSTRUCTION.format(source=names.source, source_label=names.source_label, target=names.target,
                                  target_label=names.target_label, text=text)

    def perturb_many(self, texts: list[str], names: list[NamePair]) -> list[str]:
        """One perturbation per text; ``names[i]`` says which names text i swaps."""
        from biaslens.models.base import GenerationParams  # the torch-free interface: a parameter type only

        if not texts:
            return []
        prompts = [self.instruction(t, n) for t, n in zip(texts, names)]
        limit = self.max_new_tokens
        if limit is None:
            longest = max(self.model.count_tokens(list(texts)))
            limit = int(longest * 1.25) + 16
        params = GenerationParams(max_new_tokens=max(1, limit), do_sample=False)
        out = self.model.generate(prompts, params, progress=self.progress, stats=self.stats)
        return [o[0].strip().strip('"').strip() for o in out]


# -- filters -------------------------------------------------------------------------------

_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")


def token_set(text: str) -> frozenset[str]:
    """Lowercase word tokens (letters/digits, inner apostrophes kept): what Jaccard compares."""
    return frozenset(t.lower().replace("\u2019", "'") for t in _TOKEN.findall(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard dissimilarity 1 - |a & b| / |a | b| (0 for two empty sets)."""
    union = len(a | b)
    return 0.0 if union == 0 else 1.0 - len(a & b) / union


@dataclass(frozen=True)
class FilterResult:
    """Whether a perturbation is kept, and why not."""

    kept: bool
    reason: str | None
    jaccard: float


#: why a continuation is left out: ``ambiguous_reference`` (both sets, rule perturber: the
#: continuation mentions another person and a gendered pronoun, which may refer to that person),
#: then the paper's three filters of a perturbation (set A)
FILTER_REASONS = ("ambiguous_reference", "prefix", "original_mention", "jaccard")

#: words that name a person other than the entity (besides the relational nouns and titles of the
#: mapping files and the Common Sents occupations): a gendered pronoun may refer to them
OTHER_PERSON_WORDS = frozenset("""
friend friends colleague colleagues coworker coworkers co-worker boss bosses partner partners parent parents
child children kid kids baby babies customer customers client clients patient patients student students
teacher teachers neighbor neighbors neighbour neighbours manager managers someone somebody anyone anybody
person guy guys stranger strangers cousin cousins sibling siblings spouse roommate classmate classmates
employer employee employees officer doctor nurse lawyer mrs miss dr mr ms sir madam lady ladies gentleman
gentlemen man men woman women boy boys girl girls
""".split())

#: third-person singular gendered pronouns (either gender): what a rule perturber would swap
GENDERED_PRONOUNS = frozenset("he him his himself she her hers herself".split())


#: plural person words: a singular gendered pronoun does not refer to them ("his kids ... he" is
#: the entity). "parents" is left out: it names a father and a mother, each a possible "he"/"she"
PLURAL_PERSON_WORDS = frozenset("""
friends colleagues coworkers co-workers bosses partners children kids babies customers clients patients students
teachers neighbors neighbours managers guys strangers cousins siblings classmates employees men women boys girls
gentlemen ladies people fathers mothers dads moms sons daughters brothers sisters husbands wives boyfriends girlfriends
uncles aunts nephews nieces grandsons granddaughters kings queens
""".split())

_ADJECTIVES = frozenset({"male", "female", "males", "females"})


class ReferenceCheck:
    """Whether a continuation is one a rule perturber cannot perturb safely: it has a gendered
    pronoun and mentions another person that pronoun may refer to ("His brother said he was tired":
    swapping every "he" makes the brother a woman in set A only).

    The rule perturber swaps every source-gender word (he, his, man ... for John -> Jane). That is
    the intended swap of the entity's own words unless a source-gender word belongs to someone else,
    which needs another person who can be of the source gender: a source-gender person word the
    mapping does not swap (brother, father, husband, Mr), a person word of either gender (friend,
    boss, baby, an occupation), a person noun the mapping swaps (man/woman: the entity's or someone
    else's), or another configured name. Another person who can only be of the target gender (wife,
    mother, sister under the default mapping) or a plural (children, kids, friends) cannot take the
    entity's pronouns, so such continuations are kept: this is the family content the paper reports
    as the main John/Jane difference.

    The check is applied with the same rule to both sets and is unchanged when the entity's own
    words are swapped (it asks for a pronoun of either gender; its person words are not the
    entity's, or come as the pairs the mapping swaps), so under no difference in treatment it
    drops the same share of A and of B and the kept sets stay comparable.

    Args:
        mapping: the active word pairs (source -> target): the person nouns it swaps are ambiguous,
            and which side is the source decides which unswapped relational nouns are safe.
        names: the entity names of the configured pairs (a different name counts as another person).
        extra_words: more person words of either gender (the Common Sents occupations by default).
    """

    def __init__(self, mapping: PerturbationMap | None = None, names: list[NamePair] | None = None,
                 extra_words: frozenset[str] | set[str] | None = None):
        full = PerturbationMap.from_yaml("gender-full")
        active = mapping if mapping is not None else PerturbationMap.from_yaml()
        pronouns = GENDERED_PRONOUNS | {"himself", "herself"}
        flip = active.source_label != full.source_label  # a mapping written female -> male
        source_side = {p.target if flip else p.source for p in full.pairs}
        target_side = {p.source if flip else p.target for p in full.pairs}
        swapped = {w for p in active.pairs for w in (p.source, p.target)} - pronouns - _ADJECTIVES
        words = set(OTHER_PERSON_WORDS) | set(extra_words or ()) | source_side | target_side | swapped
        self.words = frozenset(words - pronouns - _ADJECTIVES)
        # safe: only of the target gender (and not swapped), or plural
        target_only = {"mrs", "miss", "ms", "madam", "lady", "ladies", "woman", "women", "girl", "girls"} if not flip \
            else {"mr", "sir", "gentleman", "gentlemen", "man", "men", "boy", "boys", "guy", "guys"}
        self.safe = frozenset((((target_side | target_only) - source_side) - swapped) | (PLURAL_PERSON_WORDS - swapped))
        self.names = {n for p in (names or []) for n in (p.source, p.target)}

    def others(self, text: str, entity_names: tuple[str, ...] = ()) -> bool:
        """Does ``text`` mention a person the entity's pronouns may refer to (a person word that is
        not target-gender-only or plural, or a configured name other than ``entity_names``)?"""
        toks = token_set(text)
        if (toks & self.words) - self.safe:
            return True
        other = self.names - set(entity_names)
        return any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in other)

    def __call__(self, text: str, entity_names: tuple[str, ...] = ()) -> bool:
        """True when ``text`` has a gendered pronoun and mentions another person it may refer to."""
        return bool(token_set(text) & GENDERED_PRONOUNS) and self.others(text, entity_names)


def check_perturbation(original: str, perturbed: str, *, expected_prefix: str, original_names: list[str],
                       max_jaccard: float = 0.15, masked_terms: set[str] | None = None) -> FilterResult:
    """The paper's three filters, in order.

    Args:
        original: the text before perturbation (prompt + continuation).
        perturbed: the perturber's output.
        expected_prefix: the perturbed prompt p(x) the output must begin with.
        original_names: names that must no longer appear (whole words, case-sensitive).
        max_jaccard: largest token Jaccard dissimilarity between original and perturbed.
        masked_terms: lowercase words mapped to one placeholder before Jaccard, so the
            intended swaps themselves do not count (``None``: the paper's raw comparison).
    """
    a, b = token_set(original), token_set(perturbed)
    if masked_terms:
        a = frozenset("<e>" if t.split("'")[0] in masked_terms else t for t in a)
        b = frozenset("<e>" if t.split("'")[0] in masked_terms else t for t in b)
    d = jaccard(a, b)
    if not perturbed.lstrip().startswith(expected_prefix):
        return FilterResult(False, "prefix", d)
    for name in original_names:
        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", perturbed):
            return FilterResult(False, "original_mention", d)
    if d > max_jaccard:
        return FilterResult(False, "jaccard", d)
    return FilterResult(True, None, d)
