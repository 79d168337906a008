"""Imports refuse what a database cannot hold or what would stall the app (NUL, oversized texts),
never change accounts or roles unless asked; exports write no file through a planted link and
leave no part behind; a move keeps the times labels were made, and, when asked, the passwords."""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pytest
from db_testkit import small_records, write_jsonl
from sqlalchemy import select, text, update

from annotate.service.errors import AuthError
from annotate.service.signin import authenticate, start_session
from db import models as m
from db import session_scope
from db.__main__ import main as db_main
from db.__main__ import table_counts
from db.exporter import export_jsonl
from db.importer import ImportFailed, import_jsonl
from db.passwords import hash_password
from testing.cli import as_command

main = as_command(db_main, "python -m db")

MOVE = ("--accounts", "--account-privileges")  # the flags of a whole database's records
NOTE_AT = 12  # index of anna's first annotation in small_records()


def _import(url, path, accounts="create", privileges=True):
    with session_scope(url) as session:
        return import_jsonl(session, [path], accounts=accounts,
                            privileges=privileges).as_dict()


def _with(records, index, **changes):
    records = [dict(r) for r in records]
    records[index].update(changes)
    return records


# ------------------------------------------------------------------------------ text fields

@pytest.mark.parametrize("changes, field", [
    ({"note": "stopt\x00te vroeg"}, "note"),
    ({"history": [{"accuracy": "partial", "note": "eerst\x00"}]}, "history[0].note"),
    ({"codes": ["MS-ET"], "note": "ok", "seconds_spent": 1.0,
      "history": [{"accuracy": "partial", "codes": ["MS-ET"], "note": "\ud800"}]},
     "history[0].note"),
])
def test_unstorable_text_is_refused_naming_file_line_and_field(tmp_path, any_db_url, changes,
                                                               field):
    path = tmp_path / "nul.jsonl"  # JSON escapes (\u0000, \ud800), as other tools write them
    path.write_text("".join(json.dumps(r) + "\n" for r in _with(small_records(), NOTE_AT,
                                                                 **changes)), encoding="utf-8")
    with pytest.raises(ImportFailed) as caught:
        _import(any_db_url, path)
    error = caught.value
    assert (error.source, error.location, error.field) == (str(path), f"line {NOTE_AT + 1}",
                                                           field)
    assert "cannot store" in error.message
    assert table_counts(any_db_url)["annotation"] == 0  # nothing of the import was written


def test_nul_in_a_pairs_row_names_the_row_and_column(tmp_path, db_url, capsys):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"item_id": "a", "language": "en", "model": "m",
                                "reference": "x", "prediction": "y\x00"}) + "\n",
                    encoding="utf-8")
    assert main(["import", "--format", "pairs", str(path), "--db", db_url]) == 2
    assert "p.jsonl, line 1, field 'prediction': contains a NUL character" in \
        capsys.readouterr().err


def test_size_limits_flag_environment_and_check(tmp_path, db_url, capsys, monkeypatch):
    long_note = "x" * 10_001  # one over the default
    records = _with(small_records(), NOTE_AT, note=long_note)
    records[NOTE_AT + 1] = {**records[NOTE_AT + 1], "note": "a\x00b"}
    path = write_jsonl(tmp_path / "big.jsonl", records)
    assert main(["import", *MOVE, str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert f"big.jsonl, line {NOTE_AT + 1}, field 'note': 10001 characters, over the limit of " \
           f"10000 (set with --max-text-chars or $NLCE_IMPORT_MAX_TEXT)" in err
    assert table_counts(db_url)["annotation"] == 0
    # --check lists every problem at once
    assert main(["import", "--check", *MOVE, str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert f"line {NOTE_AT + 1}, field 'note': 10001 characters" in err
    assert f"line {NOTE_AT + 2}, field 'note': contains a NUL character" in err
    # a higher limit lets the long note in
    fine = write_jsonl(tmp_path / "fine.jsonl", _with(small_records(), NOTE_AT, note=long_note))
    assert main(["import", *MOVE, "--max-text-chars", "20000", str(fine),
                 "--db", db_url]) == 0
    # the environment sets the default; a file's content has the larger document limit
    monkeypatch.setenv("NLCE_IMPORT_MAX_TEXT", "10")
    monkeypatch.setenv("NLCE_IMPORT_MAX_DOCUMENT", "50")
    assert main(["import", "--check", *MOVE, str(fine), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "line 1, field 'description': 11 characters, over the limit of 10" in err
    assert "line 2, field 'content': 100 characters, over the limit of 50 (set with " \
           "--max-document-chars or $NLCE_IMPORT_MAX_DOCUMENT)" in err
    monkeypatch.setenv("NLCE_IMPORT_MAX_TEXT", "lots")
    assert main(["import", str(fine), "--db", db_url]) == 2
    assert "$NLCE_IMPORT_MAX_TEXT must be a whole number" in capsys.readouterr().err


def test_a_check_creates_no_database(tmp_path, capsys):
    """`--check` writes nothing: a database that is not there yet is not created (the check
    runs against a throwaway one with the schema), an existing empty file stays empty."""
    path = write_jsonl(tmp_path / "small.jsonl", small_records())
    missing = tmp_path / "new.db"
    assert main(["import", "--check", *MOVE, str(path), "--db", f"sqlite:///{missing}"]) == 0
    out = capsys.readouterr().out
    assert "check: no problems in 1 source(s); an import would write:" in out
    assert "annotation" in out and not missing.exists()
    bad = write_jsonl(tmp_path / "bad.jsonl", _with(small_records(), NOTE_AT, note="a\x00b"))
    assert main(["import", "--check", *MOVE, str(bad), "--db", f"sqlite:///{missing}"]) == 2
    assert "contains a NUL character" in capsys.readouterr().err and not missing.exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    assert main(["import", "--check", *MOVE, str(path), "--db", f"sqlite:///{empty}"]) == 0
    assert empty.stat().st_size == 0


# ------------------------------------------------------------------------------ accounts

def _accounts(url):
    with session_scope(url) as session:
        return {a.username: (a.role, a.password_hash is not None, a.active)
                for a in session.execute(select(m.Annotator)).scalars()}


@pytest.mark.parametrize("record, flags, field", [
    ({"username": "anna", "role": "lead"}, [], "role"),  # promote
    ({"username": "anna", "role": "lead"}, ["--accounts"], "role"),
    ({"username": "lead", "role": "annotator"}, ["--trust-accounts"], "role"),  # demote
    ({"username": "eve", "role": "lead"}, [], "username"),  # a new account
    ({"username": "eve", "role": "lead", "password_hash": "scrypt$x"}, ["--accounts"],
     "password_hash"),
])
def test_an_import_never_changes_roles_or_adds_accounts_unasked(tmp_path, db_url, small_jsonl,
                                                              capsys, record, flags, field):
    _import(db_url, small_jsonl)
    before = _accounts(db_url)
    path = write_jsonl(tmp_path / "roles.jsonl", [{"type": "annotator", **record}])
    assert main(["import", *flags, str(path), "--db", db_url]) == 2
    assert f"roles.jsonl, line 1, field '{field}'" in capsys.readouterr().err
    assert _accounts(db_url) == before


def test_records_of_existing_accounts_are_left_as_stored_without_a_flag(tmp_path, db_url,
                                                                         small_jsonl, capsys):
    _import(db_url, small_jsonl)
    path = write_jsonl(tmp_path / "a.jsonl", [
        {"type": "annotator", "username": "lead", "role": "lead", "active": False}])
    assert main(["import", str(path), "--db", db_url]) == 0
    assert _accounts(db_url)["lead"] == ("lead", False, True)  # still active
    capsys.readouterr()
    assert main(["import", "--accounts", str(path), "--db", db_url]) == 2  # not without asking
    assert "field 'active'" in capsys.readouterr().err
    assert _accounts(db_url)["lead"] == ("lead", False, True)
    assert main(["import", "--accounts", "--account-privileges", str(path), "--db", db_url]) == 0
    assert _accounts(db_url)["lead"] == ("lead", False, False)  # asked for: deactivated


def test_an_import_re_activates_nobody_and_creates_no_lead_without_privileges(
        tmp_path, db_url, small_jsonl, capsys):
    """Issue 26.4: a file from before a deactivation must not let the old password in again,
    and `--accounts` must not bring in new leads."""
    _import(db_url, small_jsonl)
    with session_scope(db_url) as session:
        session.execute(update(m.Annotator).where(m.Annotator.username == "anna")
                        .values(active=False, password_hash=hash_password("old password")))
    before = _accounts(db_url)
    for flags in (["--accounts"], ["--trust-accounts"]):
        for record, field in (({"username": "anna", "role": "annotator", "active": True},
                               "active"),
                              ({"username": "mallory", "role": "lead", "languages": ["nl"]},
                               "role")):
            path = write_jsonl(tmp_path / "old.jsonl", [{"type": "annotator", **record}])
            assert main(["import", *flags, str(path), "--db", db_url]) == 2
            err = capsys.readouterr().err
            assert f"line 1, field '{field}'" in err and "--account-privileges" in err
            assert _accounts(db_url) == before
    with pytest.raises(AuthError):
        with session_scope(db_url) as session:
            authenticate(session, "anna", "old password")
    path = write_jsonl(tmp_path / "new.jsonl", [  # what --accounts may still do
        {"type": "annotator", "username": "nina", "role": "annotator", "languages": ["nl"]},
        {"type": "annotator", "username": "ed", "role": "expert", "active": False},
        {"type": "annotator", "username": "bas", "display_name": "Bas B."}])
    assert main(["import", "--accounts", str(path), "--db", db_url]) == 0
    after = _accounts(db_url)
    assert after["nina"] == ("annotator", False, True) and after["ed"] == ("expert", False, False)
    assert main(["import", "--account-privileges", str(path), "--db", db_url]) == 2
    assert "--account-privileges goes with --accounts" in capsys.readouterr().err


@pytest.mark.parametrize("record, flags, twin", [
    ({"username": "ANNA", "languages": ["nl"]}, ["--accounts"], "'anna' (active)"),
    ({"username": "Bas", "languages": ["nl"]}, ["--accounts"], "'bas' (deactivated)"),
    ({"username": "Lead", "role": "lead"}, ["--trust-accounts", "--account-privileges"],
     "'lead' (active)"),
    ({"username": "BAS"}, [], "'bas' (deactivated)"),  # only referred to: said as plainly
])
def test_an_import_creates_no_name_that_differs_only_in_case(tmp_path, db_url, small_jsonl,
                                                              capsys, record, flags, twin):
    """Issue 34.7: sign-in does not tell 'ANNA' from 'anna', and the Team page refuses such a
    name; so does an import, naming file, line and field, and writing nothing."""
    _import(db_url, small_jsonl)
    path = write_jsonl(tmp_path / "team.jsonl", [{"type": "annotator", "username": "bas",
                                                  "languages": ["nl"], "active": False}])
    assert main(["import", *MOVE, str(path), "--db", db_url]) == 0
    before = _accounts(db_url)
    path = write_jsonl(tmp_path / "twins.jsonl", [{"type": "annotator", "username": "anna"},
                                                  {"type": "annotator", **record}])
    capsys.readouterr()
    assert main(["import", *flags, str(path), "--db", db_url]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"twins.jsonl, line 2, field 'username': account {record['username']!r} differs " \
           f"only in case from the account {twin}" in err, err
    assert _accounts(db_url) == before


def test_one_file_cannot_bring_two_names_that_differ_only_in_case(tmp_path, db_url, capsys):
    path = write_jsonl(tmp_path / "twins.jsonl", [
        {"type": "annotator", "username": "anna", "languages": ["nl"]},
        {"type": "annotator", "username": "Anna", "languages": ["zh"]}])
    assert main(["import", "--accounts", "--check", str(path), "--db", db_url]) == 2
    assert "twins.jsonl, line 2, field 'username': account 'Anna' differs only in case from " \
           "the account 'anna'" in capsys.readouterr().err
    assert "anna" not in _accounts(db_url)


def test_a_table_imports_annotator_may_not_differ_only_in_case(tmp_path, db_url, small_jsonl,
                                                               capsys):
    _import(db_url, small_jsonl)
    before = _accounts(db_url)
    path = tmp_path / "pairs.csv"
    path.write_text("item_id,language,model,reference,prediction,label\n"
                    "a,en,m,The cat sat.,A cat sat.,partial\n", encoding="utf-8")
    assert main(["import", "--format", "pairs", str(path), "--dataset", "p",
                 "--annotator", "Anna", "--db", db_url]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--annotator, option: account 'Anna' differs only in case from the account 'anna'" \
        in err and "internal error" not in err, err
    assert _accounts(db_url) == before


def test_trusted_accounts_give_no_password_to_an_existing_account(tmp_path, db_url,
                                                                  small_jsonl, capsys):
    """Issue 34.8: an existing lead without a password (single sign-on) stays without one, and
    a password sign-in is refused; only new accounts take a hash from the file."""
    _import(db_url, small_jsonl)
    assert _accounts(db_url)["lead"] == ("lead", False, True)
    hashed = hash_password("taken over")
    path = write_jsonl(tmp_path / "hashes.jsonl", [
        {"type": "annotator", "username": "lead", "role": "lead", "password_hash": hashed},
        {"type": "annotator", "username": "anna", "password_hash": hashed},
        {"type": "annotator", "username": "nina", "languages": ["nl"], "password_hash": hashed}])
    assert main(["import", "--trust-accounts", "--account-privileges", str(path),
                 "--db", db_url]) == 0
    accounts = _accounts(db_url)
    assert accounts["lead"] == ("lead", False, True) and accounts["anna"][1] is False
    assert accounts["nina"] == ("annotator", True, True)  # a new account takes its hash
    with session_scope(db_url) as session:
        assert authenticate(session, "nina", "taken over").username == "nina"
    for username in ("lead", "anna"):
        with pytest.raises(AuthError), session_scope(db_url) as session:
            authenticate(session, username, "taken over")


# ------------------------------------------------------------------------------ export files

def test_export_never_writes_through_a_planted_link(tmp_path, db_url, small_jsonl):
    _import(db_url, small_jsonl)
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious\n", encoding="utf-8")
    (out / "export.jsonl.part").symlink_to(victim)
    assert main(["export", "--out", str(out), "--db", db_url]) == 0
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert (out / "export.jsonl").read_text(encoding="utf-8").count("\n") == len(small_records())
    # the old folder, link included, was replaced whole by the new one (the link not followed)
    assert sorted(p.name for p in out.iterdir()) == ["export.jsonl"]


def test_a_failed_export_leaves_no_part_file(tmp_path, db_url, small_jsonl):
    _import(db_url, small_jsonl)
    with session_scope(db_url) as session:  # a damaged row, read after half the export
        session.execute(text("UPDATE judge_verdict SET codes = '[broken'"))
    out = tmp_path / "out"
    with pytest.raises(ValueError), session_scope(db_url) as session:
        export_jsonl(session, out)
    assert not out.exists() and not list(tmp_path.glob(".out*"))  # no folder, no part


# ------------------------------------------------------------------------------ moves

OLD = datetime(2021, 3, 4, 5, 6, 7, tzinfo=timezone.utc)


def _times(url):
    with session_scope(url) as session:
        events = [(e.revision, e.created_at.replace(tzinfo=None), e.seconds_spent)
                  for e in session.execute(select(m.AnnotationEvent)
                                           .order_by(m.AnnotationEvent.id)).scalars()]
        labels = [(a.created_at.replace(tzinfo=None), a.updated_at.replace(tzinfo=None))
                  for a in session.execute(select(m.Annotation).order_by(m.Annotation.id))
                  .scalars()]
        gold = [g.created_at.replace(tzinfo=None)
                for g in session.execute(select(m.GoldLabel)).scalars()]
    return events, labels, gold


def test_a_move_keeps_the_times_labels_were_made(tmp_path, any_db_url, small_jsonl):
    _import(any_db_url, small_jsonl)
    with session_scope(any_db_url) as session:
        for model in (m.AnnotationEvent, m.GoldLabel, m.Assignment):
            session.execute(update(model).values(created_at=OLD))
        session.execute(update(m.Annotation).values(created_at=OLD, updated_at=OLD))
        path, _ = export_jsonl(session, tmp_path / "out")
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    _import(copy, path)
    events, labels, gold = _times(copy)
    plain = OLD.replace(tzinfo=None)
    assert [t for _, t, _ in events] == [plain] * 3 and [s for *_, s in events] == \
        [s for *_, s in _times(any_db_url)[0]]
    assert labels == [(plain, plain)] * 2 and gold == [plain]


def test_a_trusted_move_keeps_passwords_and_not_sessions(tmp_path, db_url, small_jsonl, capsys):
    _import(db_url, small_jsonl)
    with session_scope(db_url) as session:
        session.execute(update(m.Annotator).where(m.Annotator.username == "anna")
                        .values(password_hash=hash_password("correct horse")))
        anna = authenticate(session, "anna", "correct horse")
        token = start_session(session, anna.id)
    plain, trusted = tmp_path / "plain", tmp_path / "trusted"
    assert main(["export", "--out", str(plain), "--db", db_url]) == 0
    assert "password_hash" not in (plain / "export.jsonl").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["export", "--include-password-hashes", "--out", str(trusted),
                 "--db", db_url]) == 0
    assert "holds the accounts' password hashes" in capsys.readouterr().err
    exported = (trusted / "export.jsonl").read_text(encoding="utf-8")
    assert "password_hash" in exported and token not in exported
    assert oct(os.stat(trusted / "export.jsonl").st_mode & 0o777) == "0o600"

    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    assert main(["import", "--accounts", str(trusted / "export.jsonl"), "--db", copy]) == 2
    assert "field 'password_hash': password hashes are imported only with --trust-accounts" \
        in capsys.readouterr().err
    assert main(["import", "--trust-accounts", str(trusted / "export.jsonl"),
                 "--db", copy]) == 2  # the export has a lead: privileges are asked for apart
    assert "--account-privileges" in capsys.readouterr().err
    assert main(["import", "--trust-accounts", "--account-privileges",
                 str(trusted / "export.jsonl"), "--db", copy]) == 0
    assert "--trust-accounts" in capsys.readouterr().err  # the warning
    with session_scope(copy) as session:
        assert authenticate(session, "anna", "correct horse").username == "anna"
        assert session.execute(select(m.AnnotatorSession)).first() is None
    assert _accounts(copy) == {**_accounts(db_url)}
