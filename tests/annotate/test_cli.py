"""`python -m annotate --add-user`: the first lead of a new database, without the app."""
from __future__ import annotations

from sqlmodel import Session

from annotate import service
from annotate.__main__ import main
from db import get_engine


def test_add_user_creates_a_hashed_account_and_refuses_bad_input(db_url, monkeypatch, capsys):
    monkeypatch.setenv("NLCE_NEW_PASSWORD", "first-lead-pw")
    assert main(["--db", db_url, "--add-user", "lead@example.org", "--role", "lead",
                 "--languages", "nl,pl"]) == 0
    assert "created lead@example.org (lead; nl, pl)" in capsys.readouterr().out
    with Session(get_engine(db_url)) as session:
        assert service.authenticate(session, "lead@example.org", "first-lead-pw").is_lead
    assert main(["--db", db_url, "--add-user", "lead@example.org"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["--db", db_url, "--add-user", "x", "--languages", "de"]) == 2
    assert "unknown language 'de'" in capsys.readouterr().err
    get_engine(db_url).dispose()
    get_engine.cache_clear()
