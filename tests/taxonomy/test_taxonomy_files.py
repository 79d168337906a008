"""Broken taxonomy and variant files are rejected with a message naming file, code and field.

Each test copies the shipped YAML into tmp_path, breaks one thing, and loads the copy.
"""
from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from taxonomy import TaxonomyError, load_taxonomy
from taxonomy.__main__ import main as taxonomy_main
from taxonomy.loader import DEFAULT_PATH
from testing.cli import as_command

main = as_command(taxonomy_main, "python -m taxonomy")

VARIANTS_PATH = DEFAULT_PATH.parent / "variants.yaml"
FILE = DEFAULT_PATH.name  # "taxonomy-v1.yaml"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def original() -> dict:
    return yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))


@pytest.fixture
def doc(original) -> dict:
    return copy.deepcopy(original)


def entry(doc: dict, code_id: str) -> dict:
    return next(e for e in doc["codes"] if e["id"] == code_id)


def cluster(doc: dict, name: str) -> dict:
    return next(c for c in doc["clusters"] if c["id"] == name)


def write(tmp_path: Path, doc: dict, name: str = FILE) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def rejection(path: Path, **kwargs) -> str:
    with pytest.raises(TaxonomyError) as info:
        load_taxonomy(path, **kwargs)
    return str(info.value)


def test_unchanged_copy_loads(tmp_path, doc):
    tax = load_taxonomy(write(tmp_path, doc))
    assert len(tax.leaves()) == 26 and tax.variants == {}  # no variants.yaml beside it


# ------------------------------------------------------------------------- one break each

def _duplicate_id(doc):
    doc["codes"].append(copy.deepcopy(entry(doc, "LG-GR1")))


def _missing_parent(doc):
    entry(doc, "LG-GR1")["parent"] = "LG-XX"


def _missing_translation(doc):
    del entry(doc, "SE-MD")["description"]["pl"]


def _empty_translation(doc):
    entry(doc, "MS-ET")["name"]["zh"] = "  "


def _missing_criteria_translation(doc):
    del entry(doc, "SE-TS")["exclusion"]["el"]


def _criteria_count_mismatch(doc):
    entry(doc, "LG-IS")["inclusion"]["nl"].pop()


def _leaf_without_criteria(doc):
    for lang in ("en", "zh", "nl", "el", "pl"):
        entry(doc, "MS-LT")["inclusion"][lang] = []


def _leaf_in_no_cluster(doc):
    cluster(doc, "model_behavior")["codes"].remove("MS-IG")


def _leaf_in_two_clusters(doc):
    cluster(doc, "meta")["codes"].append("SE-OI")


def _group_in_cluster(doc):
    cluster(doc, "semantic_accuracy")["codes"].append("SE-HA")


def _cluster_too_big(doc):
    moved = cluster(doc, "linguistic_grammar")["codes"]
    cluster(doc, "model_behavior")["codes"].extend(moved[:2])
    del moved[:2]


def _unknown_code_in_cluster(doc):
    cluster(doc, "syntax_format")["codes"].append("ST-IF9")


def _leaf_under_leaf(doc):
    entry(doc, "LG-GR2")["parent"] = "LG-GR1"


def _group_under_group(doc):
    entry(doc, "MS-RE")["parent"] = "MS-ME"


def _category_with_parent(doc):
    entry(doc, "ST")["parent"] = "SE"


def _group_without_children(doc):
    entry(doc, "MS-RE1")["parent"] = "MS"
    entry(doc, "MS-RE2")["parent"] = "MS"


def _bad_level(doc):
    entry(doc, "SE-OI")["level"] = "subleaf"


def _non_canonical_id(doc):
    entry(doc, "SE-OI")["id"] = "se_oi"


def _not_an_id(doc):
    entry(doc, "SE-OI")["id"] = "--"


def _unknown_language(doc):
    entry(doc, "MISC")["name"]["de"] = "Sonstiger Fehler"


def _unknown_field(doc):
    entry(doc, "EX")["notes"] = "typo for a field"


def _accuracy_out_of_order(doc):
    doc["accuracy"].reverse()


def _accuracy_alias_clash(doc):
    doc["accuracy"][0]["aliases"]["nl"].append("Juist")


BREAKS = [
    (_duplicate_id, ["code LG-GR1", "id", "duplicated"]),
    (_missing_parent, ["code LG-GR1: parent 'LG-XX' does not exist"]),
    (_missing_translation, ["code SE-MD", "description.pl", "missing"]),
    (_empty_translation, ["code MS-ET", "name.zh"]),
    (_missing_criteria_translation, ["code SE-TS", "exclusion.el", "missing"]),
    (_criteria_count_mismatch, ["code LG-IS", "inclusion.nl", "1 criteria", "inclusion.en has 2"]),
    (_leaf_without_criteria, ["code MS-LT", "inclusion.en", "at least one"]),
    (_leaf_in_no_cluster, ["code MS-IG", "cluster", "no cluster"]),
    (_leaf_in_two_clusters, ["code SE-OI", "cluster", "semantic_accuracy and meta"]),
    (_group_in_cluster, ["code SE-HA", "cluster", "group"]),
    (_cluster_too_big, ["cluster model_behavior", "codes", "10 codes, at most 9"]),
    (_unknown_code_in_cluster, ["cluster syntax_format", "codes", "'ST-IF9' does not exist"]),
    (_leaf_under_leaf, ["code LG-GR2", "parent 'LG-GR1' is a leaf"]),
    (_group_under_group, ["code MS-RE", "parent 'MS-ME' is a group"]),
    (_category_with_parent, ["code ST", "parent", "category has no parent"]),
    (_group_without_children, ["code MS-RE", "level", "at least one child"]),
    (_bad_level, ["code SE-OI", "level", "'subleaf'"]),
    (_non_canonical_id, ["code se_oi", "id", "'SE-OI'"]),
    (_not_an_id, ["code --", "id", "not a code id"]),
    (_unknown_language, ["code MISC", "name.de", "unknown language"]),
    (_unknown_field, ["code EX", "notes", "unknown field"]),
    (_accuracy_out_of_order, ["accuracy", "incorrect, partial, correct"]),
    (_accuracy_alias_clash, ["accuracy correct", "name/aliases.nl", "'Juist' already means 'incorrect'"]),
]


@pytest.mark.parametrize("break_it,expected", BREAKS, ids=[b.__name__[1:] for b, _ in BREAKS])
def test_broken_file_is_rejected_naming_file_code_and_field(tmp_path, doc, break_it, expected):
    break_it(doc)
    message = rejection(write(tmp_path, doc))
    assert message.startswith(f"{FILE}: "), message
    for part in expected:
        assert part in message, (part, message)


# ------------------------------------------------------------------------- raw text breaks

def _break_text(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    text = DEFAULT_PATH.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    line = text[: text.index(old)].count("\n") + 1
    path = tmp_path / FILE
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path, line


def test_bad_yaml_syntax_names_file_line_code_and_field(tmp_path):
    path, line = _break_text(tmp_path, '      en: "URL"\n', '      en: URL: no quotes\n')
    message = rejection(path)
    assert message.startswith(f"{FILE}: line {line}, column "), message
    assert "code MS-ME2" in message and "field name" in message and "invalid YAML" in message


def test_unclosed_quote_is_rejected(tmp_path):
    path, _ = _break_text(tmp_path, '      nl: "Onsamenhangende generatie"',
                          '      nl: "Onsamenhangende generatie')
    message = rejection(path)
    assert message.startswith(f"{FILE}: line ") and "invalid YAML" in message


def test_key_given_twice_is_rejected(tmp_path):
    path, line = _break_text(tmp_path, '      pl: "Kopiowanie kontekstu"\n',
                             '      pl: "Kopiowanie kontekstu"\n      pl: "Kopia"\n')
    message = rejection(path)
    assert f"line {line + 1}" in message and "code MS-CC" in message and "field name" in message
    assert "'pl' appears twice" in message


def test_missing_file_and_non_mapping(tmp_path):
    assert "cannot read" in rejection(tmp_path / "nope.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n", encoding="utf-8")
    assert rejection(tmp_path / "list.yaml").startswith("list.yaml: top level")


# ------------------------------------------------------------------------- variants file

def _variants(tmp_path: Path, mutate=None) -> Path:
    variants = yaml.safe_load(VARIANTS_PATH.read_text(encoding="utf-8"))
    if mutate:
        mutate(variants)
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump(variants, allow_unicode=True, sort_keys=False),
                    encoding="utf-8")
    return path


def test_variants_file_beside_a_copy_is_loaded(tmp_path, doc):
    _variants(tmp_path)
    tax = load_taxonomy(write(tmp_path, doc))
    assert tax.map_variant(["LG-GR6", "ST-IF1"]) == ("LG-GR4", "ST-IF")


def test_variant_mapping_onto_a_missing_code_is_rejected(tmp_path, doc):
    _variants(tmp_path, lambda v: v["variants"]["variant-gr6"]["map"].update({"ST-IF2": "ST-IF9"}))
    message = rejection(write(tmp_path, doc))
    assert message.startswith("variants.yaml: variant variant-gr6: map.ST-IF2")
    assert "'ST-IF9'" in message


def test_variant_mapping_onto_a_group_is_rejected(tmp_path, doc):
    _variants(tmp_path, lambda v: v["variants"]["variant-gr6"]["map"].update({"LG-GR6": "LG-GR"}))
    assert "map.LG-GR6: target 'LG-GR'" in rejection(write(tmp_path, doc))


def test_variants_for_another_version_are_rejected(tmp_path, doc):
    doc["version"] = "nlce-2026.1"
    _variants(tmp_path)
    message = rejection(write(tmp_path, doc))
    assert message.startswith("variants.yaml: target: 'nlce-2025.1'") and "nlce-2026.1" in message


# ------------------------------------------------------------------------- command line

def test_cli_validate(tmp_path, doc, capsys):
    assert main(["--validate", str(DEFAULT_PATH)]) == 0
    assert "26 leaves" in capsys.readouterr().out
    _missing_parent(doc)
    assert main(["--validate", str(write(tmp_path, doc))]) == 2  # input it cannot use
    assert "code LG-GR1: parent 'LG-XX' does not exist" in capsys.readouterr().err


def test_cli_tree_in_chosen_language(capsys):
    assert main(["--lang", "pl"]) == 0
    out = capsys.readouterr().out
    assert "MS-RE2" in out and "Dosłowne powtórzenie" in out and "Verbatim" not in out
    assert out.index("  MS-ME1") > out.index("MS-ME ")  # leaves indented under their group


def test_python_dash_m(tmp_path):
    shutil.copy(DEFAULT_PATH, tmp_path / FILE)
    run = subprocess.run([sys.executable, "-m", "taxonomy", "--lang", "zh", "--clusters"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "逐字重复" in run.stdout and "model_behavior" in run.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: [\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "taxonomy", "--validate", str(bad)],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "bad.yaml: line" in run.stderr
    assert run.stderr.startswith("python -m taxonomy: error: ") and run.stderr.count("\n") == 1
