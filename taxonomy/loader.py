"""Read a taxonomy YAML file (and its variants file), check every rule, build a `Taxonomy`.

A broken file is rejected as a whole with one `TaxonomyError` that names the file, the code and
the field, e.g. ``taxonomy-v1.yaml: code LG-GR9: parent 'LG-XX' does not exist``.
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from taxonomy.models import (
    _ACCURACY_ALIASES,
    ACCURACY_LABELS,
    CRITERIA_FIELDS,
    LANGUAGES,
    LEVELS,
    META_CATEGORY,
    TEXT_FIELDS,
    Cluster,
    Code,
    Taxonomy,
    TaxonomyError,
    Variant,
    _fold,
    normalise_code,
)

DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_PATH = DATA_DIR / "taxonomy-v1.yaml"
VARIANTS_NAME = "variants.yaml"
MAX_CLUSTER_SIZE = 9

_CODE_KEYS = {"id", "level", "parent", *TEXT_FIELDS, *CRITERIA_FIELDS}
_CLUSTER_KEYS = {"id", "codes", *TEXT_FIELDS}
_ACCURACY_KEYS = {"id", "aliases", *TEXT_FIELDS}
_TOP_KEYS = {"version", "accuracy", "clusters", "codes"}


@lru_cache(maxsize=1)
def default_taxonomy() -> Taxonomy:
    """The shipped taxonomy (with its variants), loaded and validated once per process."""
    return load_taxonomy()


def load_taxonomy(path: str | Path | None = None,
                  variants_path: str | Path | None = None) -> Taxonomy:
    """Load and validate a taxonomy file; the shipped one when `path` is None.

    Variant mappings come from `variants_path`, else from a `variants.yaml` beside the file
    (if there is one); they are validated against the loaded taxonomy too.
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    taxonomy = _build(_read_yaml(path), path.name, str(path))
    if variants_path is None and (path.parent / VARIANTS_NAME).is_file():
        variants_path = path.parent / VARIANTS_NAME
    if variants_path is not None:
        variants_path = Path(variants_path)
        taxonomy.variants = _build_variants(_read_yaml(variants_path), variants_path.name,
                                            taxonomy)
    return taxonomy


# ------------------------------------------------------------------------- YAML

class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loader that refuses a key given twice in one mapping (a silent overwrite else)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaxonomyError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TaxonomyError(f"{path.name}: not UTF-8 text: {exc}") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if mark is None:
            raise TaxonomyError(f"{path.name}: invalid YAML: {problem}") from None
        where = _locate(text.splitlines(), mark.line)
        raise TaxonomyError(f"{path.name}: line {mark.line + 1}, column {mark.column + 1}"
                            f"{where}: invalid YAML: {problem}") from None


_ENTRY = re.compile(r"^(\s*)-\s+id:\s*['\"]?([^'\"#\s]+)")
_KEY = re.compile(r"^(\s*)([A-Za-z_]+):")


def _locate(lines: list[str], line_no: int) -> str:
    """' (code X, field Y)' for the entry and field a YAML error line sits in, if findable."""
    line_no = min(line_no, len(lines) - 1)
    for i in range(line_no, -1, -1):
        entry = _ENTRY.match(lines[i])
        if not entry:
            continue
        column = lines[i].index("id:")
        field = next((key.group(2) for key in (_KEY.match(lines[j])
                                               for j in range(line_no, i, -1))
                      if key and len(key.group(1)) == column), None)
        kind = "code" if _looks_like_code(entry.group(2)) else "entry"
        return f" ({kind} {entry.group(2)}" + (f", field {field})" if field else ")")
    return ""


def _looks_like_code(text: str) -> bool:
    return re.fullmatch(r"[A-Z]+(-[A-Z]+\d*)?", text) is not None


# ------------------------------------------------------------------------- taxonomy

def _build(doc: Any, fname: str, source: str) -> Taxonomy:
    def fail(where: str, message: str) -> TaxonomyError:
        return TaxonomyError(f"{fname}: {where}: {message}")

    if not isinstance(doc, dict):
        raise TaxonomyError(f"{fname}: top level must be a mapping with {sorted(_TOP_KEYS)}")
    _check_keys(doc, _TOP_KEYS, "top level", fail, required=_TOP_KEYS)
    version = doc["version"]
    if not isinstance(version, str) or not version.strip():
        raise fail("version", "must be a non-empty string")

    codes = _build_codes(doc["codes"], fail)
    clusters = _build_clusters(doc["clusters"], codes, fail)
    for cluster in clusters.values():
        for cid in cluster.codes:
            codes[cid] = replace(codes[cid], cluster=cluster.name)
    accuracy = _build_accuracy(doc["accuracy"], fail)
    return Taxonomy(version.strip(), codes, clusters, accuracy, source=source)


def _canonical(code_id: str) -> str | None:
    try:
        return normalise_code(code_id)
    except TaxonomyError:
        return None


def _check_keys(entry: dict, allowed: set, where: str, fail, required=("id",)) -> None:
    for key in entry:
        if key not in allowed:
            raise fail(where, f"{key}: unknown field (expected {', '.join(sorted(allowed))})")
    for key in required:
        if key not in entry:
            raise fail(where, f"{key}: missing")


def _per_language(entry: dict, key: str, where: str, fail, what: str) -> dict:
    """entry[key] as a mapping with exactly the project's languages, each present."""
    value = entry.get(key)
    if not isinstance(value, dict):
        raise fail(where, f"{key}: missing or not a mapping of language -> {what}")
    for lang in value:
        if lang not in LANGUAGES:
            raise fail(where, f"{key}.{lang}: unknown language (expected {', '.join(LANGUAGES)})")
    for lang in LANGUAGES:
        if value.get(lang) is None:
            raise fail(where, f"{key}.{lang}: translation missing")
    return value


def _texts(entry: dict, key: str, where: str, fail) -> dict[str, str]:
    value = _per_language(entry, key, where, fail, "text")
    out = {}
    for lang in LANGUAGES:
        text = value[lang]
        if not isinstance(text, str) or not text.strip():
            raise fail(where, f"{key}.{lang}: must be non-empty text")
        out[lang] = " ".join(text.split())
    return out


def _criteria(entry: dict, key: str, where: str, fail, required: bool
              ) -> dict[str, tuple[str, ...]]:
    if entry.get(key) is None and not required:
        return {lang: () for lang in LANGUAGES}
    value = _per_language(entry, key, where, fail, "list of criteria")
    out = {}
    for lang in LANGUAGES:
        items = value[lang]
        if not isinstance(items, list) or not all(isinstance(s, str) and s.strip()
                                                  for s in items):
            raise fail(where, f"{key}.{lang}: must be a list of non-empty sentences")
        if required and not items:
            raise fail(where, f"{key}.{lang}: must list at least one criterion")
        out[lang] = tuple(" ".join(s.split()) for s in items)
    for lang in LANGUAGES[1:]:
        if len(out[lang]) != len(out["en"]):
            raise fail(where, f"{key}.{lang}: has {len(out[lang])} criteria but {key}.en has "
                              f"{len(out['en'])}")
    return out


def _build_codes(entries: Any, fail) -> dict[str, Code]:
    if not isinstance(entries, list) or not entries:
        raise fail("codes", "must be a non-empty list")
    raw: dict[str, dict] = {}
    for i, entry in enumerate(entries):
        where = f"codes[{i}]"
        if not isinstance(entry, dict):
            raise fail(where, "entry must be a mapping")
        cid = entry.get("id")
        if not isinstance(cid, str) or not cid.strip():
            raise fail(where, "id: missing or not a string")
        where = f"code {cid}"
        canonical = _canonical(cid)
        if canonical != cid:
            raise fail(where, f"id: not in canonical form (write {canonical!r})" if canonical
                       else "id: not a code id (letters and digits joined by '-')")
        if cid in raw:
            raise fail(where, f"id: duplicated (entries {list(raw).index(cid)} and {i})")
        _check_keys(entry, _CODE_KEYS, where, fail, required=("id", "level"))
        if entry["level"] not in LEVELS:
            raise fail(where, f"level: {entry['level']!r} is not one of {', '.join(LEVELS)}")
        raw[cid] = entry

    codes: dict[str, Code] = {}
    for cid, entry in raw.items():
        where, level, parent = f"code {cid}", entry["level"], entry.get("parent")
        if level in ("category", "meta"):
            if parent is not None:
                raise fail(where, f"parent: a {level} has no parent (found {parent!r})")
            category = cid if level == "category" else META_CATEGORY
        else:
            if parent is None:
                raise fail(where, f"parent: missing; a {level} needs one")
            if parent not in raw:
                raise fail(where, f"parent {parent!r} does not exist")
            parent_level = raw[parent]["level"]
            allowed = ("category",) if level == "group" else ("category", "group")
            if parent_level not in allowed:
                raise fail(where, f"parent {parent!r} is a {parent_level}; the parent of a "
                                  f"{level} must be a {' or '.join(allowed)}")
            category = parent if parent_level == "category" else raw[parent]["parent"]
        labelable = level in ("leaf", "meta")
        codes[cid] = Code(
            id=cid, level=level, parent=parent, category=category, cluster=None,
            name=_texts(entry, "name", where, fail),
            description=_texts(entry, "description", where, fail),
            inclusion=_criteria(entry, "inclusion", where, fail, required=labelable),
            exclusion=_criteria(entry, "exclusion", where, fail, required=labelable),
        )
    for code in codes.values():
        if code.level in ("category", "group") and not any(c.parent == code.id
                                                           for c in codes.values()):
            raise fail(f"code {code.id}", f"level: a {code.level} must have at least one child")
    if not any(c.level == "leaf" for c in codes.values()):
        raise fail("codes", "no leaf codes")
    return codes


def _build_clusters(entries: Any, codes: dict[str, Code], fail) -> dict[str, Cluster]:
    if not isinstance(entries, list) or not entries:
        raise fail("clusters", "must be a non-empty list")
    clusters: dict[str, Cluster] = {}
    home: dict[str, str] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise fail(f"clusters[{i}]", "entry must be a mapping with a string id")
        name = entry["id"]
        where = f"cluster {name}"
        if name in clusters:
            raise fail(where, "id: duplicated")
        _check_keys(entry, _CLUSTER_KEYS, where, fail, required=("id", "codes"))
        members = entry["codes"]
        if not isinstance(members, list) or not members:
            raise fail(where, "codes: must be a non-empty list of code ids")
        if len(members) > MAX_CLUSTER_SIZE:
            raise fail(where, f"codes: {len(members)} codes, at most {MAX_CLUSTER_SIZE} allowed")
        for cid in members:
            code = codes.get(cid)
            if code is None:
                raise fail(where, f"codes: {cid!r} does not exist")
            if not code.labelable:
                raise fail(f"code {cid}", f"cluster: a {code.level} cannot be in a cluster "
                                          f"(found in {name}); clusters hold leaves and meta codes")
            if cid in home:
                raise fail(f"code {cid}", f"cluster: in more than one cluster "
                                          f"({home[cid]} and {name})")
            home[cid] = name
        clusters[name] = Cluster(name=name, codes=tuple(members),
                                 names=_texts(entry, "name", where, fail),
                                 descriptions=_texts(entry, "description", where, fail))
    for code in codes.values():
        if code.labelable and code.id not in home:
            raise fail(f"code {code.id}", f"cluster: in no cluster; add it to one of "
                                          f"{', '.join(clusters)}")
    return clusters


def _build_accuracy(entries: Any, fail) -> dict:
    where = "accuracy"
    ids = [e.get("id") if isinstance(e, dict) else None for e in entries] \
        if isinstance(entries, list) else None
    if ids != list(ACCURACY_LABELS):
        raise fail(where, f"id: must list {', '.join(ACCURACY_LABELS)} in this order "
                          f"(found {ids})")
    builtin = {alias: label for label, aliases in _ACCURACY_ALIASES.items()
               for alias in aliases}
    seen: dict[str, str] = dict(builtin)
    out = {}
    for entry in entries:
        label, where = entry["id"], f"accuracy {entry['id']}"
        _check_keys(entry, _ACCURACY_KEYS, where, fail, required=("id", *TEXT_FIELDS))
        names = _texts(entry, "name", where, fail)
        descriptions = _texts(entry, "description", where, fail)
        aliases_raw = entry.get("aliases") or {}
        if not isinstance(aliases_raw, dict):
            raise fail(where, "aliases: must be a mapping of language -> list of spellings")
        aliases: dict[str, tuple[str, ...]] = {}
        for lang, items in aliases_raw.items():
            if lang not in LANGUAGES:
                raise fail(where, f"aliases.{lang}: unknown language")
            if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
                raise fail(where, f"aliases.{lang}: must be a list of strings")
            aliases[lang] = tuple(items)
        for lang in LANGUAGES:
            for text in (names[lang], *aliases.get(lang, ())):
                other = seen.setdefault(_fold(text), label)
                if other != label:
                    raise fail(where, f"name/aliases.{lang}: {text!r} already means {other!r}")
        out[label] = (names, descriptions, aliases)
    return out


# ------------------------------------------------------------------------- variants

def _build_variants(doc: Any, fname: str, taxonomy: Taxonomy) -> dict[str, Variant]:
    def fail(where: str, message: str) -> TaxonomyError:
        return TaxonomyError(f"{fname}: {where}: {message}")

    if not isinstance(doc, dict) or set(doc) != {"target", "variants"}:
        raise TaxonomyError(f"{fname}: top level must be a mapping with target and variants")
    if doc["target"] != taxonomy.version:
        raise fail("target", f"{doc['target']!r} does not match taxonomy version "
                             f"{taxonomy.version!r}")
    if not isinstance(doc["variants"], dict):
        raise fail("variants", "must be a mapping of variant name -> mapping")
    out = {}
    for name, spec in doc["variants"].items():
        where = f"variant {name}"
        if not isinstance(spec, dict) or not isinstance(spec.get("map"), dict):
            raise fail(where, "map: missing or not a mapping of variant code -> code")
        _check_keys(spec, {"description", "carry_over", "map"}, where, fail,
                    required=("description", "map"))
        mapping = {}
        for source, target in spec["map"].items():
            if not isinstance(source, str) or _canonical(source) != source:
                raise fail(where, f"map.{source}: variant code not in canonical form")
            code = taxonomy.codes.get(target) if isinstance(target, str) else None
            if code is None or not code.labelable:
                raise fail(where, f"map.{source}: target {target!r} is not a labelable code of "
                                  f"{taxonomy.version}")
            mapping[source] = target
        carry_over = spec.get("carry_over", False)
        if not isinstance(carry_over, bool):
            raise fail(where, "carry_over: must be true or false")
        out[name] = Variant(name=name, description=" ".join(str(spec["description"]).split()),
                            mapping=mapping, carry_over=carry_over)
    return out
