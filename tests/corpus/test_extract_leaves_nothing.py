"""`corpus.extract` runs that keep nothing leave no trace in the database: no empty dataset row
(a later `db info` or the app would list a dataset with nothing in it)."""
from __future__ import annotations

from sqlalchemy import select

from corpus.extract import main as extract_command
from db import session_scope
from db.models import Dataset
from testing.cli import as_command

extract_main = as_command(extract_command, "python -m corpus.extract")


def _datasets(url) -> list[str]:
    with session_scope(url) as session:
        return list(session.execute(select(Dataset.name)).scalars())


def test_a_run_that_keeps_nothing_creates_no_dataset(tmp_path, db_url, capsys):
    (tmp_path / "kort").mkdir()
    (tmp_path / "kort" / "a.py").write_text("# kort\nx = 1\n", encoding="utf-8")
    assert extract_main([str(tmp_path / "kort"), "--lang", "nl", "--dataset", "leeg",
                         "--db", db_url]) == 1
    assert "nothing kept" in capsys.readouterr().err
    assert _datasets(db_url) == []


def test_a_run_that_keeps_a_file_creates_its_dataset(tmp_path, db_url, detector):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "som.py").write_text(
        "# Bereken de som van twee getallen en geef het resultaat terug aan de aanroeper\n"
        "def som(a, b):\n    return a + b\n", encoding="utf-8")
    assert extract_main([str(tmp_path / "src"), "--lang", "nl", "--dataset", "vol",
                         "--db", db_url]) == 0
    assert _datasets(db_url) == ["vol"]
