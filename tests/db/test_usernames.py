"""Account names are told apart by `db.models.username_key` (Unicode NFKC and str.casefold, in
Python), on every backend the same: SQLite's lower() folds ASCII only, so before issue 41.2
'Łukasz' and 'Ελένη' were created on SQLite and then could not sign in, and their case twins
were accepted. A name in each language of the project, on SQLite and PostgreSQL."""
from __future__ import annotations

import unicodedata

import pytest
from db_testkit import write_jsonl
from sqlalchemy import create_engine, select, text
from sqlmodel import Session

from annotate import service
from annotate.__main__ import main as annotate_main
from annotate.service.signin import throttle_key
from db import get_engine
from db import models as m
from db.__main__ import main as _db_main
from db.migrate import current_revision, head_revision, schema_differences, upgrade
from db.passwords import hash_password
from db.usernames import account_named
from testing.cli import as_command

PASSWORD = "a-long-password"
db_main = as_command(_db_main, "python -m db")

# language -> (the name as created, other spellings that sign in, a case twin to refuse)
NAMES = {
    "en": ("Anna", ["anna", "ANNA", " anna "], "aNNA"),
    # the Dutch IJ is one letter: its ligature (U+0132) is the same name after NFKC
    "nl": ("IJsbrand", ["ijsbrand", "IJSBRAND", "\u0132sbrand"], "ijsBrand"),
    # Chinese names have no case, but input methods type full-width Latin letters
    "zh": ("王Fang", ["王fang", "王ＦＡＮＧ", "王Ｆａｎｇ"], "王FANG"),
    # final sigma: 'Σ' folds to 'σ' wherever it stands; a name typed decomposed (NFD)
    "el": ("Ελένη", ["ελένη", "ΕΛΈΝΗ", unicodedata.normalize("NFD", "ελένη")], "ΕΛΈΝΗ"),
    "pl": ("Łukasz", ["łukasz", "ŁUKASZ", "ŁuKaSz"], "łukasz"),
}
MORE = {"el": ("Νίκος", ["ΝΊΚΟΣ", "νίκοσ"]), "pl": ("Żaneta", ["ŻANETA", "żaneta"])}


@pytest.fixture
def session(any_db_url):
    with Session(get_engine(any_db_url)) as session:
        yield session
    get_engine(any_db_url).dispose()
    get_engine.cache_clear()


def _create(session, username: str, lang: str):
    user = service.create_annotator(session, acting=service.OPERATOR, username=username,
                                    password=PASSWORD, languages=[lang])
    session.commit()
    return user


@pytest.mark.parametrize("lang", NAMES)
def test_a_name_signs_in_in_any_case_and_its_twin_is_refused(session, lang):
    name, spellings, twin = NAMES[lang]
    created = _create(session, name, lang)
    extra = MORE.get(lang)
    if extra:
        _create(session, extra[0], lang)
    for typed in [name, *spellings, *(extra[1] if extra else [])]:
        user = service.authenticate(session, typed, PASSWORD)
        assert user.username == (extra[0] if extra and typed in extra[1] else name), typed
    assert account_named(session, spellings[0]).id == created.id
    with pytest.raises(service.AnnotateError) as refused:
        _create(session, twin, lang)
    assert f"{twin!r} differs only in case from the account {name!r}" in str(refused.value)
    session.rollback()
    assert [u.username for u in service.all_annotators(session)] == sorted(
        [name, *([extra[0]] if extra else [])])


def test_sign_in_failures_of_one_name_count_together_in_any_case():
    """The lockout counts every spelling of a name as one: str.lower gave 'νίκος' for 'ΝΊΚΟΣ'
    (final sigma) but 'νίκοσ' for 'νίκοσ', two counters for one account."""
    keys = {throttle_key(typed, None) for typed in ("Νίκος", "ΝΊΚΟΣ", "νίκοσ", " νίκος")
}
    assert len(keys) == 1
    assert throttle_key("ΝΊΚΟΣ", "ip:203.0.113.9") == throttle_key("νίκοσ", "ip:203.0.113.9")


def test_add_user_refuses_a_case_twin(db_url, monkeypatch, capsys):
    main = as_command(annotate_main, "python -m annotate")
    monkeypatch.setenv("NLCE_NEW_PASSWORD", PASSWORD)
    assert db_main(["upgrade", "--db", db_url]) == 0
    assert main(["--db", db_url, "--add-user", "Ελένη", "--languages", "el"]) == 0
    capsys.readouterr()
    assert main(["--db", db_url, "--add-user", "ελένη", "--languages", "el"]) == 2
    assert "'ελένη' differs only in case from the account 'Ελένη'" in capsys.readouterr().err
    with Session(get_engine(db_url)) as session:
        assert session.execute(select(m.Annotator.username)).scalars().all() == ["Ελένη"]
        assert service.authenticate(session, "ΕΛΈΝΗ", PASSWORD).username == "Ελένη"


def test_an_import_refuses_a_case_twin(tmp_path, any_db_url, capsys):
    path = write_jsonl(tmp_path / "team.jsonl", [
        {"type": "annotator", "username": "Łukasz", "languages": ["pl"]},
        {"type": "annotator", "username": "ŁUKASZ", "languages": ["pl"]}])
    assert db_main(["import", "--accounts", str(path), "--db", any_db_url]) == 2
    assert "team.jsonl, line 2, field 'username': account 'ŁUKASZ' differs only in case from " \
           "the account 'Łukasz'" in capsys.readouterr().err
    path = write_jsonl(tmp_path / "one.jsonl", [
        {"type": "annotator", "username": "Łukasz", "languages": ["pl"]}])
    assert db_main(["import", "--accounts", str(path), "--db", any_db_url]) == 0
    path = write_jsonl(tmp_path / "twin.jsonl", [
        {"type": "annotator", "username": "łukasz", "languages": ["pl"]}])
    assert db_main(["import", "--accounts", str(path), "--db", any_db_url]) == 2
    with Session(get_engine(any_db_url)) as session:
        assert session.execute(select(m.Annotator.username)).scalars().all() == ["Łukasz"]
    get_engine(any_db_url).dispose()
    get_engine.cache_clear()


def test_upgrade_gives_existing_accounts_their_key_and_keeps_twins_signing_in(any_db_url,
                                                                              caplog):
    """A database of the previous release may hold twins SQLite let in ('Ελένη' and 'ελένη'):
    the upgrade keys the first, and the other still signs in by its exact name."""
    old = create_engine(any_db_url)
    upgrade(old, "0008_judges_batch")
    hashed = hash_password(PASSWORD)
    with old.begin() as connection:
        for i, name in enumerate(["Łukasz", "Ελένη", "ελένη"], 1):
            connection.execute(text(
                "INSERT INTO annotator (id, username, display_name, languages, "
                "interface_language, role, password_hash, active, created_at) VALUES "
                "(:id, :name, '', '[\"pl\"]', 'en', 'annotator', :hash, true, '2026-01-01')"),
                {"id": i, "name": name, "hash": hashed})
    old.dispose()
    engine = get_engine(any_db_url)  # opening it upgrades it
    assert current_revision(engine) == head_revision()
    assert schema_differences(engine) == []
    assert "'ελένη' differs only in case from the account 'Ελένη'" in caplog.text
    with Session(engine) as session:
        assert service.authenticate(session, "ŁUKASZ", PASSWORD).username == "Łukasz"
        assert service.authenticate(session, "ΕΛΈΝΗ", PASSWORD).username == "Ελένη"
        assert service.authenticate(session, "ελένη", PASSWORD).username == "ελένη"
        with pytest.raises(service.AnnotateError, match="differs only in case"):
            _create(session, "ΕΛΈΝΗ", "el")
    engine.dispose()
    get_engine.cache_clear()
