"""The taxonomy as typed, immutable objects: codes, clusters, the accuracy scale.

Everything here is plain data plus small pure helpers; reading and checking the YAML file is
the job of `taxonomy.loader`.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Callable, Iterable

from nlce.cli import InputError

LANGUAGES: tuple[str, ...] = ("en", "zh", "nl", "el", "pl")
"""The natural languages every text of the taxonomy exists in; English first."""

ACCURACY_LABELS: tuple[str, ...] = ("incorrect", "partial", "correct")
"""The expert accuracy scale, in ordinal order, worst first. Pass it explicitly to kappa."""

LEVELS: tuple[str, ...] = ("category", "group", "leaf", "meta")
TEXT_FIELDS: tuple[str, ...] = ("name", "description")
CRITERIA_FIELDS: tuple[str, ...] = ("inclusion", "exclusion")
META_CATEGORY = "META"


class TaxonomyError(InputError):
    """A taxonomy file, code, label or language that is not valid; the message says which."""


def check_language(lang: str) -> str:
    if lang not in LANGUAGES:
        raise TaxonomyError(f"unknown language {lang!r}; expected one of {', '.join(LANGUAGES)}")
    return lang


_SEPARATORS = re.compile(r"[\s_\-\u2010-\u2015\u2212]+")


def normalise_code(code: str) -> str:
    """The canonical spelling of a code id: upper case, parts joined by '-', digits glued on.

    >>> normalise_code("lg_gr1"), normalise_code(" se ha 2 "), normalise_code("ms-me-3")
    ('LG-GR1', 'SE-HA2', 'MS-ME3')
    >>> normalise_code("misc")
    'MISC'
    """
    if not isinstance(code, str):
        raise TaxonomyError(f"taxonomy code must be a string, got {code!r}")
    parts = [part for part in _SEPARATORS.split(code.strip().upper()) if part]
    if not parts:
        raise TaxonomyError(f"empty taxonomy code {code!r}")
    out = parts[0]
    for part in parts[1:]:
        out += part if part.isdigit() else "-" + part
    return out


# ------------------------------------------------------------------------- accuracy

def _fold(text: str) -> str:
    """Case, width and spacing differences removed: 'Partially  Correct' == 'partially_correct'."""
    text = unicodedata.normalize("NFKC", text).casefold().strip()
    return " ".join(re.split(r"[\s_\-]+", text)).strip()


_ACCURACY_ALIASES = {
    "incorrect": ("incorrect", "wrong", "✗", "✘", "×", "✕"),
    "partial": ("partial", "partially correct", "partly correct", "partially", "~", "∼", "≈"),
    "correct": ("correct", "✓", "✔", "√"),
}


def accuracy_value(text: str, translated: Callable[[], dict[str, str]]) -> str:
    """The label value ('incorrect', 'partial', 'correct') a spelling means: a built-in spelling,
    else one of `translated()` (folded name or alias -> value; called only when needed, since it
    may load a taxonomy file). Anything else raises TaxonomyError."""
    if not isinstance(text, str):
        raise TaxonomyError(f"accuracy label must be a string, got {text!r}")
    folded = _fold(text)
    for value, aliases in _ACCURACY_ALIASES.items():
        if folded in aliases:
            return value
    value = translated().get(folded)
    if value is None:
        raise TaxonomyError(
            f"unknown accuracy label {text!r}; expected one of {', '.join(ACCURACY_LABELS)}")
    return value


# ------------------------------------------------------------------------- codes

@dataclass(frozen=True)
class Code:
    """One code of the taxonomy: a top category, a group, an error leaf or a meta code."""

    id: str
    level: str                      # "category" | "group" | "leaf" | "meta"
    parent: str | None              # None for categories and meta codes
    category: str                   # id of the top category, or "META"
    cluster: str | None             # judge cluster of a leaf or meta code, else None
    name: dict[str, str] = field(compare=False, repr=False)
    description: dict[str, str] = field(compare=False, repr=False)
    inclusion: dict[str, tuple[str, ...]] = field(compare=False, repr=False)
    exclusion: dict[str, tuple[str, ...]] = field(compare=False, repr=False)

    @property
    def labelable(self) -> bool:
        """True for the codes an annotator or judge may assign (leaves and meta codes)."""
        return self.level in ("leaf", "meta")

    def text(self, field_name: str, lang: str = "en") -> "str | tuple[str, ...]":
        """`name`/`description` (a string) or `inclusion`/`exclusion` (a tuple) in `lang`."""
        if field_name not in TEXT_FIELDS + CRITERIA_FIELDS:
            raise TaxonomyError(f"code {self.id}: unknown text field {field_name!r}; expected "
                                f"one of {', '.join(TEXT_FIELDS + CRITERIA_FIELDS)}")
        return getattr(self, field_name)[check_language(lang)]


@dataclass(frozen=True)
class Cluster:
    """A group of labelable codes that the hierarchical judge evaluates in one prompt."""

    name: str
    codes: tuple[str, ...]
    names: dict[str, str] = field(compare=False, repr=False)
    descriptions: dict[str, str] = field(compare=False, repr=False)

    def text(self, field_name: str, lang: str = "en") -> str:
        """The cluster's `name` or `description` in `lang`."""
        if field_name not in TEXT_FIELDS:
            raise TaxonomyError(f"cluster {self.name}: unknown text field {field_name!r}")
        texts = self.names if field_name == "name" else self.descriptions
        return texts[check_language(lang)]


@dataclass(frozen=True)
class Variant:
    """Another release of the taxonomy and how its codes map onto this version."""

    name: str
    description: str
    mapping: dict[str, str]          # variant code -> code of this version
    carry_over: bool                 # codes not in `mapping` mean the same here


# ------------------------------------------------------------------------- taxonomy

class Taxonomy:
    """A loaded, validated taxonomy. Build it with `load_taxonomy`; do not mutate it."""

    def __init__(self, version: str, codes: dict[str, Code], clusters: dict[str, Cluster],
                 accuracy: dict[str, tuple[dict[str, str], dict[str, str], dict[str, tuple]]],
                 variants: dict[str, Variant] | None = None, source: str = "") -> None:
        self.version = version
        self.codes = codes
        self.clusters = clusters
        self._accuracy = accuracy    # label -> (names, descriptions, aliases)
        self.variants = variants or {}
        self.source = source

    def __repr__(self) -> str:
        return f"Taxonomy({self.version!r}, {len(self.codes)} codes, {len(self.clusters)} clusters)"

    # navigation
    def code(self, code_id: str) -> Code:
        """The code with this id (any harmless spelling); unknown ids raise TaxonomyError."""
        code = self.codes.get(normalise_code(code_id))
        if code is None:
            raise TaxonomyError(f"unknown taxonomy code {code_id!r} (taxonomy {self.version})")
        return code

    def leaves(self) -> list[Code]:
        """The error leaves (meta codes not included), in file order."""
        return [c for c in self.codes.values() if c.level == "leaf"]

    def labelable(self) -> list[Code]:
        """Leaves and meta codes: every code an annotator or judge may assign."""
        return [c for c in self.codes.values() if c.labelable]

    def categories(self) -> list[Code]:
        return [c for c in self.codes.values() if c.level == "category"]

    def children(self, code_id: str) -> list[Code]:
        parent = self.code(code_id).id
        return [c for c in self.codes.values() if c.parent == parent]

    def ancestors(self, code_id: str) -> list[Code]:
        """Parent first, top category last; empty for categories and meta codes."""
        out, code = [], self.code(code_id)
        while code.parent is not None:
            code = self.codes[code.parent]
            out.append(code)
        return out

    def counted_codes(self, codes: Iterable[str]) -> set[str]:
        """The codes an item with `codes` counts under in the study's Table 1: each code and its
        ancestors, once (parents count their sub-codes once per item); a code this taxonomy does
        not know (an older release's) counts under its own name."""
        out: set[str] = set()
        for code_id in codes:
            try:
                out.add(self.code(code_id).id)
                out.update(a.id for a in self.ancestors(code_id))
            except TaxonomyError:
                out.add(code_id)
        return out

    def cluster_of(self, code_id: str) -> str:
        code = self.code(code_id)
        if code.cluster is None:
            raise TaxonomyError(f"code {code.id} is a {code.level}, not in any cluster; "
                                f"only leaves and meta codes are")
        return code.cluster

    # checking and mapping labels
    def validate_codes(self, codes: Iterable[str], *, labelable_only: bool = True
                       ) -> tuple[str, ...]:
        """Canonical ids of `codes` in input order, duplicates dropped.

        Unknown codes (and, unless `labelable_only=False`, categories and groups, which cannot be
        assigned) raise one TaxonomyError naming all of them.
        """
        if isinstance(codes, str):
            codes = [codes]
        out: list[str] = []
        bad: list[str] = []
        for raw in codes:
            try:
                cid = normalise_code(raw)
            except TaxonomyError:
                bad.append(f"{raw!r} (not a code)")
                continue
            code = self.codes.get(cid)
            if code is None:
                bad.append(f"{raw!r} (unknown)")
            elif labelable_only and not code.labelable:
                bad.append(f"{raw!r} (a {code.level}; assign one of its leaves)")
            elif cid not in out:
                out.append(cid)
        if bad:
            raise TaxonomyError(f"invalid taxonomy codes for {self.version}: {', '.join(bad)}")
        return tuple(out)

    def resolve_code(self, raw: str, variant: str | None = None, *,
                     other_releases: bool = False) -> tuple[str, str | None]:
        """One code as this version means it: (canonical id, name of the variant whose mapping
        gave it, or None). The one mapping of other releases' codes, for imports and judges.

        `variant`: the release `raw` was labelled with (None or this version: this one). With
        `other_releases`, an id this version does not have is looked up in every variant's
        mapping (the study's ST-IF1, LG-GR6, E): a judge answering in another release's codes.
        Raises TaxonomyError saying why: not a code, unknown, or a group or category ("assign
        one of its leaves").
        """
        try:
            cid = normalise_code(raw)
        except TaxonomyError:
            raise TaxonomyError(f"{raw!r} is not a code") from None
        spec = None if variant in (None, self.version) else self.variants.get(variant)
        if variant not in (None, self.version) and spec is None:
            known = ", ".join(sorted(self.variants)) or "none loaded"
            raise TaxonomyError(f"unknown taxonomy variant {variant!r} (known: {known})")
        if spec is not None and cid in spec.mapping:
            return spec.mapping[cid], spec.name
        code = self.codes.get(cid)
        if code is not None and (spec is None or spec.carry_over):
            if not code.labelable:
                raise TaxonomyError(f"{raw!r} is a {code.level}; assign one of its leaves")
            return cid, None
        if spec is None and other_releases:
            targets = {v.mapping[cid]: v.name for v in self.variants.values() if cid in v.mapping}
            if len(targets) == 1:
                return next(iter(targets.items()))
        where = f"variant {variant!r} (mapping onto {self.version})" if spec else self.version
        raise TaxonomyError(f"unknown code {raw!r} in {where}")

    def map_variant(self, codes: Iterable[str], variant: str = "variant-gr6") -> tuple[str, ...]:
        """Codes labelled with another release mapped onto this version (many-to-one).

        Input spellings are normalised; the result is canonical, in input order, without
        duplicates. A code the variant does not know, or a group, raises TaxonomyError naming
        it. Passing this taxonomy's own version as `variant` just validates the codes.
        """
        if isinstance(codes, str):
            codes = [codes]
        if variant == self.version:
            return self.validate_codes(codes)
        if variant not in self.variants:
            known = ", ".join(sorted(self.variants)) or "none loaded"
            raise TaxonomyError(f"unknown taxonomy variant {variant!r} (known: {known})")
        out: list[str] = []
        bad: list[str] = []
        for raw in codes:
            try:
                target, _ = self.resolve_code(raw, variant)
            except TaxonomyError as exc:
                group = str(exc).endswith("assign one of its leaves")
                bad.append(f"{raw!r} ({'a group; assign one of its leaves' if group else 'unknown'})")
                continue
            if target not in out:
                out.append(target)
        if bad:
            raise TaxonomyError(f"invalid code(s) {', '.join(bad)} in variant {variant!r} "
                                f"(mapping onto {self.version})")
        return tuple(out)

    # accuracy scale
    def accuracy_text(self, label: str, lang: str = "en") -> tuple[str, str]:
        """(name, description) of an accuracy label (a spelling or a `taxonomy.AccuracyLabel`,
        which is a str) in `lang`."""
        names, descriptions, _ = self._accuracy[accuracy_value(label, self.accuracy_aliases)]
        lang = check_language(lang)
        return names[lang], descriptions[lang]

    def accuracy_aliases(self) -> dict[str, str]:
        """Folded spelling -> label value, for every translated name and alias in the file."""
        out: dict[str, str] = {}
        for label, (names, _, aliases) in self._accuracy.items():
            for lang in LANGUAGES:
                for text in (names[lang], *aliases.get(lang, ())):
                    out[_fold(text)] = label
        return out
