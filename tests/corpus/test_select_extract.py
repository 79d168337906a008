"""The selection report and the extract CLI on a folder, into a real database."""
from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

from corpus.extract import main as extract_main
from corpus.extract import run_extract
from corpus.select import FILTERS, SelectionConfig, SourceText, select_targets
from testing.cli import as_command

DUTCH_JAVA = """package nl.voorbeeld;

/*
 * Copyright (c) 2021 Jan Jansen. Alle rechten voorbehouden.
 */
public class Rekenen{n} {{
    private String pad = "// dit is geen commentaar";

    /**
     * Berekent de som van twee gehele getallen en geeft het resultaat terug aan de aanroeper.
     */
    public int som(int a, int b) {{
        // TODO: overloop controleren
        return a + b + {n};
    }}
}}
"""

DUTCH_PY = '''"""Hulpfuncties voor het inlezen van bestanden en het opschonen van de gegevens."""
import os


def lees(pad):
    """Leest het bestand in en geeft de regels terug zonder lege regels aan het einde."""
    return open(pad, encoding="utf-8").read().splitlines()
'''

MIXED_GO = """package main

// Geeft de naam van de gebruiker terug, zonder spaties aan het begin of het einde.
func Naam() string { return "" }

// Opens the configuration file and returns every line that it contains.
func Open() {}

// Closes the configuration file again and releases every handle it holds.
func Close() {}
"""


def write_tree(root):
    (root / "src").mkdir()
    (root / "src" / "Rekenen.java").write_text(DUTCH_JAVA.format(n=1), encoding="utf-8")
    (root / "src" / "Kopie.java").write_text(DUTCH_JAVA.format(n=1), encoding="utf-8")
    (root / "src" / "util.py").write_bytes(DUTCH_PY.replace("\n", "\r\n").encode("utf-8"))
    (root / "src" / "mixed.go").write_text(MIXED_GO, encoding="utf-8")
    (root / "src" / "blob.c").write_bytes(b"int x;\x00\x01\x02")
    (root / "src" / "latin1.php").write_bytes("<?php // caf\xe9\n".encode("latin-1"))
    (root / "src" / "README.txt").write_text("geen code", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "hidden.py").write_text("# verborgen\n", encoding="utf-8")


def test_select_counts_every_filter(detector):
    sources = [SourceText("a.java", DUTCH_JAVA.format(n=1), "java"),
               SourceText("b.java", DUTCH_JAVA.format(n=1), "java"),
               SourceText("m.go", MIXED_GO, "go"),
               SourceText("u.py", DUTCH_PY, "python")]
    selected, report = select_targets(sources, "nl", SelectionConfig(targets_per_file=0),
                                      detector=detector)
    assert report.removed["exact_duplicate"] == 1
    assert report.removed["licence"] == 1 and report.removed["todo"] == 1
    # two of its three comments are English: more than half, so the file is mixed
    assert report.removed["language_mismatch"] == 2 and report.removed["mixed_language"] == 1
    assert [(f.source.key, [t.kind for t in f.targets]) for f in selected] == [
        ("a.java", ["docblock"]), ("u.py", ["docstring", "docstring"])]
    assert report.files_out == 2 and report.targets_out == 3
    data = report.as_dict()
    assert [f["name"] for f in data["filters"]] == [name for name, _, _ in FILTERS]
    assert data["approximate_tokens"] is True and data["budgets"]["approx-bpe:v2"] > 0


def test_filters_switch_off_and_context_window(detector):
    sources = [SourceText("a.java", DUTCH_JAVA.format(n=1), "java"),
               SourceText("m.go", MIXED_GO, "go")]
    config = SelectionConfig(licence=False, todo=False, mixed_language=False, language_check=False,
                             targets_per_file=0)
    selected, report = select_targets(sources, "nl", config, detector=detector)
    assert report.removed["licence"] == 0 and report.removed["mixed_language"] == 0
    # licence and javadoc (java; the TODO is too short), the three go comments
    assert report.targets_out == 5 and report.removed["too_short"] == 1
    assert report.enabled["licence"] is False
    tiny = SelectionConfig(window_tokens=50)
    _, report = select_targets(sources, "nl", tiny, detector=detector)
    assert report.removed["context_window"] == 1 and report.files_out == 0


def test_too_short_uses_every_tokenizer(detector):
    class Long:
        name = "long"

        def count(self, text):
            return 100

    source = [SourceText("k.py", "x = 1\n# Bereken de som van twee getallen\n", "python")]
    _, report = select_targets(source, "nl", SelectionConfig(), detector=detector)
    assert report.removed["too_short"] == 1  # 7 approximate tokens < 10
    _, report = select_targets(source, "nl", SelectionConfig(), detector=detector,
                               counters=[Long()])
    assert report.removed["too_short"] == 0 and report.targets_out == 1


def test_extract_cli_on_a_folder_writes_the_database(tmp_path, any_db_url, capsys):
    """On SQLite and on PostgreSQL."""
    db_url = any_db_url
    write_tree(tmp_path)
    report_path = tmp_path / "report.json"
    code = extract_main([str(tmp_path), "--lang", "nl", "--dataset", "demo-nl", "--repo",
                         "jan/rekenen", "--licence", "MIT", "--db", db_url, "--targets-per-file",
                         "0", "--report-json", str(report_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "binary file" in out and "exact_duplicate" in out
    assert "latin1.php" not in out  # a Latin-1 file is decoded now, not skipped
    assert "approximation" in out
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["written_files"] == 2 and report["written_targets"] == 3
    assert report["ignored_extensions"] == 1  # README.txt; .git is skipped

    from db import get_engine
    from db.models import Dataset, SourceFile, Target

    with Session(get_engine(db_url)) as session:
        files = session.exec(select(SourceFile).order_by(SourceFile.path)).all()
        assert [(f.path, f.programming_language, f.natural_language, f.repo, f.licence)
                for f in files] == [("src/Kopie.java", "java", "nl", "jan/rekenen", "MIT"),
                                    ("src/util.py", "python", "nl", "jan/rekenen", "MIT")]
        assert "\r\n" in files[1].content  # stored exactly as read
        for target in session.exec(select(Target)).all():
            content = session.get(SourceFile, target.source_file_id).content
            assert content[target.span_start:target.span_end] == target.original_comment
        assert session.exec(select(Dataset.name)).all() == ["demo-nl"]

    # a re-run stores nothing twice
    again = run_extract([tmp_path], natural_language="nl", dataset="demo-nl", db_url=db_url,
                        repo="jan/rekenen", console=False)
    assert again.written_files == 0 and again.already_stored == 2


def test_a_file_that_fails_to_write_leaves_nothing(tmp_path, db_url, detector):
    (tmp_path / "a.py").write_text(DUTCH_PY, encoding="utf-8")
    from corpus.comments import Comment
    from corpus.extract import _get_or_create_dataset, write_selected_file
    from corpus.select import SelectedFile
    from db import get_engine
    from db.models import SourceFile, Target

    dataset_id = _get_or_create_dataset(db_url, "d")
    bad = SelectedFile(SourceText("a.py", DUTCH_PY, "python", path="a.py"),
                       [Comment(0, 5, "wrong", "line", 1)])
    with pytest.raises(ValueError, match="round-trip"):
        write_selected_file(db_url, dataset_id, bad, natural_language="nl", licence="")
    with Session(get_engine(db_url)) as session:
        assert session.exec(select(SourceFile)).all() == []
        assert session.exec(select(Target)).all() == []


def test_extract_cli_errors(tmp_path, db_url, capsys):
    extract = as_command(extract_main, "python -m corpus.extract")
    assert extract([str(tmp_path), "--lang", "dutch", "--dataset", "x", "--db", db_url]) == 2
    assert "ISO 639-1" in capsys.readouterr().err
    (tmp_path / "prog.cob").write_text("* hallo", encoding="utf-8")
    (tmp_path / "u.py").write_text(DUTCH_PY, encoding="utf-8")
    result = run_extract([tmp_path / "prog.cob", tmp_path / "u.py"], natural_language="nl",
                         dataset="x", db_url=db_url, console=False)
    problems = dict(result.report.problems)
    assert "unknown programming language" in problems[str(tmp_path / "prog.cob")]


def test_unreadable_file_is_reported_and_the_rest_goes_on(tmp_path, db_url):
    (tmp_path / "goed.py").write_text(DUTCH_PY, encoding="utf-8")
    (tmp_path / "weg.py").symlink_to(tmp_path / "bestaat-niet.py")  # unreadable, even for root
    result = run_extract([tmp_path], natural_language="nl", dataset="x", db_url=db_url,
                         console=False)
    assert "cannot read" in dict(result.report.problems)[str(tmp_path / "weg.py")]
    assert result.written_files == 1


@pytest.mark.slow
def test_model_tokenizer_counts_and_budget(tmp_path, db_url, smollm2):
    """--tokenizer resolves an offline id through models and replaces the approximation."""
    (tmp_path / "u.py").write_text(DUTCH_PY, encoding="utf-8")
    result = run_extract([tmp_path], natural_language="nl", dataset="tok", db_url=db_url,
                         tokenizers=["HuggingFaceTB/SmolLM2-135M-Instruct"], console=False,
                         config=SelectionConfig(targets_per_file=0))
    report = result.report
    assert report.approximate_tokens is False
    assert report.tokenizers == ["hf:HuggingFaceTB/SmolLM2-135M-Instruct"]
    _, tokenizer = smollm2
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in (
        '"""Hulpfuncties voor het inlezen van bestanden en het opschonen van de gegevens."""',
        '"""Leest het bestand in en geeft de regels terug zonder lege regels aan het einde."""')]
    from corpus.tokens import generation_budget

    assert report.budgets["hf:HuggingFaceTB/SmolLM2-135M-Instruct"] == generation_budget(lengths)


def test_dry_run_writes_nothing(tmp_path):
    (tmp_path / "u.py").write_text(DUTCH_PY, encoding="utf-8")
    db_file = tmp_path / "nooit.db"
    result = run_extract([tmp_path / "u.py"], natural_language="nl", dataset="x",
                         db_url=f"sqlite:///{db_file}", dry_run=True, console=False)
    assert result.report.targets_out == 1 and result.written_files == 0
    assert result.dataset_id is None and not db_file.exists()


HORSES = """int main() {
    // πλήθος αλόγων
    int n = 5;
    return n;
}
"""


def test_a_comment_the_prime_would_cover_is_refused_and_explained(tmp_path, db_url, capsys):
    """Issue 41: a comment of three words or fewer, primed with its first three words, would be
    handed to the model whole."""
    (tmp_path / "horses.cpp").write_text(HORSES, encoding="utf-8")
    report_path = tmp_path / "r.json"
    extract = as_command(extract_main, "python -m corpus.extract")
    base = [str(tmp_path), "--lang", "el", "--dataset", "oop", "--db", db_url, "--dry-run",
            "--min-tokens", "1"]
    assert extract(base + ["--explain", "--report-json", str(report_path)]) == 1
    out = capsys.readouterr().out
    assert "prime_covers [el (script, match)] [first 3 words: '// πλήθος αλόγων']" in out
    assert "prime check (a word must be left to generate): first 3 words (words: the token " \
           "estimate has no tokens to prime with; --tokenizer MODEL_ID checks the model's own)" \
           in " ".join(out.split())
    report = json.loads(report_path.read_text(encoding="utf-8"))
    (comment,) = report["comments"]
    assert (comment["reason"], comment["detail"]) == (
        "prime_covers", "first 3 words: '// πλήθος αλόγων'")
    assert report["primes"] == ["first 3 words"]
    assert extract(base + ["--no-prime-covers"]) == 0


def test_the_prime_check_counts_each_tokenizers_own_tokens(vocabs, detector):
    from corpus.tokens import VocabTokenCounter

    gemma, starcoder = (VocabTokenCounter(next(p for p in vocabs if p.name == name))
                        for name in ("ggml-vocab-gemma-4.gguf", "ggml-vocab-starcoder.gguf"))
    config = SelectionConfig(min_tokens=1)
    source = SourceText("horses.cpp", HORSES, "cpp")
    # StarCoder spells Greek letter by letter: `// πλή` leaves a word to write
    selected, report = select_targets([source], "el", config, detector=detector,
                                      counters=[starcoder])
    assert [t.line for t in selected[0].targets] == [2]
    # Gemma's third token ends inside `αλόγων`: refused, whatever the other tokenizer says
    selected, report = select_targets([source], "el", config, detector=detector,
                                      counters=[starcoder, gemma])
    assert selected == [] and report.removed["prime_covers"] == 1
    assert report.decisions[0]["detail"] == ("first 3 tokens of gguf:ggml-vocab-gemma-4.gguf: "
                                             "'// πλήθος α'")
    assert report.primes == ["first 3 tokens of gguf:ggml-vocab-starcoder.gguf",
                             "first 3 tokens of gguf:ggml-vocab-gemma-4.gguf"]
