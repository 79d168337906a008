"""Password hashes (db/passwords.py) at the real cost, and what sign-in and imports do with their
parameters: old hashes verify and are re-hashed at today's cost, weaker imported ones are
refused. The rest of the suite hashes at the test-only cost (tests/conftest.py); here it is unset
where the production path is meant."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from sqlmodel import Session

from annotate import service
from db import get_engine
from db import models as m
from db.passwords import (
    FAST_HASHES_ENV,
    OWASP_COST,
    TEST_COST,
    PasswordHashError,
    ScryptCost,
    check_importable,
    current_cost,
    hash_password,
    needs_rehash,
    parse_hash,
    verify_password,
)

OLD_COST = ScryptCost(2 ** 14, 8, 1)  # what the project stored before issue 26


@pytest.fixture
def production_cost(monkeypatch):
    monkeypatch.delenv(FAST_HASHES_ENV, raising=False)
    assert current_cost() == OWASP_COST


def test_scrypt_hash_round_trip_and_salt():
    stored = hash_password("demo")
    assert stored.startswith("scrypt$") and "demo" not in stored
    assert verify_password("demo", stored)
    assert not verify_password("Demo", stored)
    assert hash_password("demo") != stored  # a fresh salt every time


def test_malformed_or_missing_hash_never_matches():
    for stored in (None, "", "plain", "scrypt$1$2$3$@@@$@@@", "md5$x$y$z$a$b",
                   "scrypt$16384$8$1$$"):
        assert not verify_password("demo", stored)


def test_the_production_cost_is_owasps_minimum_and_stored_with_the_hash(production_cost):
    assert (OWASP_COST.n, OWASP_COST.r, OWASP_COST.p) == (2 ** 17, 8, 1)
    stored = hash_password("correct horse")  # 128 MiB: maxmem is raised to fit
    assert stored.startswith("scrypt$131072$8$1$")
    assert parse_hash(stored)[0] == OWASP_COST
    assert verify_password("correct horse", stored) and not needs_rehash(stored)
    old = hash_password("correct horse", cost=OLD_COST)
    assert verify_password("correct horse", old)  # old hashes still verify ...
    assert needs_rehash(old)  # ... and are raised at the next sign-in
    with pytest.raises(PasswordHashError, match=r"weaker than the minimum \(N=131072"):
        check_importable(old)
    check_importable(stored)


def test_the_test_cost_needs_the_explicit_setting(monkeypatch):
    monkeypatch.setenv(FAST_HASHES_ENV, "1")
    assert current_cost() == TEST_COST and TEST_COST.weaker_than(OWASP_COST)
    monkeypatch.setenv(FAST_HASHES_ENV, "")
    assert current_cost() == OWASP_COST


def test_sign_in_re_hashes_an_old_hash_at_todays_cost(app_db, production_cost):
    with Session(get_engine(app_db)) as session:
        anna = session.exec(select(m.Annotator).where(m.Annotator.username == "anna")).scalar_one()
        anna.password_hash = hash_password("old-password", cost=OLD_COST)
        session.commit()
        assert service.authenticate(session, "anna", "old-password").username == "anna"
        session.commit()
        stored = session.exec(select(m.Annotator.password_hash).where(
            m.Annotator.username == "anna")).scalar_one()
        assert parse_hash(stored)[0] == OWASP_COST
        assert service.authenticate(session, "anna", "old-password").username == "anna"
        with pytest.raises(service.AuthError):
            service.authenticate(session, "anna", "wrong-password")
        # a failed sign-in re-hashes nothing
        assert session.exec(select(m.Annotator.password_hash).where(
            m.Annotator.username == "anna")).scalar_one() == stored


def test_an_import_refuses_hashes_weaker_than_the_minimum(tmp_path, db_url, production_cost,
                                                          capsys):
    from db.__main__ import main as db_main
    from testing.cli import as_command

    main = as_command(db_main, "python -m db")
    path = tmp_path / "accounts.jsonl"
    weak = hash_password("correct horse", cost=OLD_COST)
    path.write_text(json.dumps({"type": "annotator", "username": "olga", "languages": ["el"],
                                "password_hash": weak}) + "\n", encoding="utf-8")
    assert main(["import", "--trust-accounts", str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "line 1" in err and "password_hash" in err and "N=16384" in err
    path.write_text(json.dumps({"type": "annotator", "username": "olga", "languages": ["el"],
                                "password_hash": "scrypt$x"}) + "\n", encoding="utf-8")
    assert main(["import", "--trust-accounts", str(path), "--db", db_url]) == 2
    assert "not a scrypt hash" in capsys.readouterr().err
    with Session(get_engine(db_url)) as session:
        assert session.exec(select(m.Annotator)).first() is None  # nothing imported
