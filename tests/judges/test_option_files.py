"""judges.run's option files (--prices, --secrets-file, --cache, --template) read as every
option file is (nlce.option_files): a file that cannot be used is one line naming it and the
problem, exit 2, before anything is stored or sent; and a run is stored only once something
came back to store (an endpoint that cannot be reached leaves no empty judge_run row)."""
from __future__ import annotations

import pytest
from judge_testkit import answer_from_request, dead_url, reply
from sqlalchemy.engine import make_url
from sqlmodel import select

from db import models
from db.engine import session_scope
from judges import run
from nlce.option_files import MAX_OPTION_FILE_BYTES
from testing.batch_server import BatchServer
from testing.cli import as_command

command = as_command(run.main, "python -m judges.run")


def stored_runs(db_url):
    with session_scope(db_url) as s:
        return ([r.id for r in s.exec(select(models.JudgeRun)).all()],
                [b.id for b in s.exec(select(models.JudgeBatch)).all()])


def argv(base_url, db_url, tmp_path, *extra):
    return ["--model", "judge-test", "--strategy", "standard", "--lang", "el", "--base-url",
            base_url, "--db", db_url, "--quiet", *extra]


BAD_FILES = {  # option -> (what the file holds, what the one line says)
    "prices-not-utf8": ("--prices", b"models:\n  m\xe9: {}\n", "price table {} is not UTF-8 text "
                        "(byte 11)"),
    "prices-a-list": ("--prices", b"- a\n- b\n", "price table {}: expected a mapping with "
                      "`models:`"),
    "prices-empty": ("--prices", b"", "price table {} is empty: it needs `models:`"),
    "prices-broken-yaml": ("--prices", b"models: [a,\n", "price table {} is not valid YAML at "
                           "line"),
    "secrets-not-utf8": ("--secrets-file", b"OPENAI_API_KEY=sk-\xff\n",
                         "secrets file {} is not UTF-8 text (byte 18)"),
    "cache-not-sqlite": ("--cache", b"a text file, not a cache\n", "response cache {} cannot be "
                         "used: file is not a database"),
    "template-not-utf8": ("--template", b"name: x\xff\n", "prompt template {} is not UTF-8 "
                          "text (byte 7)"),
    "template-too-big": ("--template", b"name: big\nbase: rubric\n# " + b"x" * (
        2 * MAX_OPTION_FILE_BYTES) + b"\n", "prompt template {} is 2.0 MiB; a prompt template "
                         "is a few kilobytes (at most 1 MiB is read)"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_an_option_file_that_cannot_be_used_is_one_line_and_nothing_is_stored(
        case, judge_db, chat_server, tmp_path, monkeypatch, capsys):
    option, content, message = BAD_FILES[case]
    if option != "--secrets-file":
        monkeypatch.setenv("OPENAI_API_KEY", "test")
    else:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "option-file"
    path.write_bytes(content)
    extra = [option, str(path)]
    if option == "--template":
        extra = ["--template", str(path)]
    args = argv(chat_server.base_url, judge_db, tmp_path, *extra)
    if option == "--template":
        args.remove("--strategy")
        args.remove("standard")
    assert command(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("python -m judges.run: error: ") and message.format(path) in err, err
    assert chat_server.calls == 0 and stored_runs(judge_db) == ([], [])


def test_the_project_database_given_as_cache_is_refused_untouched(judge_db, chat_server,
                                                                  tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    database = make_url(judge_db).database
    before = open(database, "rb").read()
    assert command(argv(chat_server.base_url, judge_db, tmp_path, "--cache", database)) == 2
    err = capsys.readouterr().err
    assert f"response cache {database} cannot be used: a SQLite database of something else " \
           "(tables: " in err and err.count("\n") == 1
    assert open(database, "rb").read() == before  # no `response` table written into it


def test_an_unreachable_endpoint_leaves_no_empty_run(judge_db, chat_server, tmp_path,
                                                     monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    cache = ["--cache", str(tmp_path / "cache.sqlite3")]
    assert command(argv(dead_url(), judge_db, tmp_path, *cache)) == 1
    captured = capsys.readouterr()
    assert "cannot reach http://127.0.0.1:" in captured.err
    assert "run: none stored (no answer came)" in captured.out
    assert stored_runs(judge_db) == ([], [])
    chat_server.responder = lambda request: reply(answer_from_request(request, "el"))
    assert command(argv(chat_server.base_url, judge_db, tmp_path, *cache)) == 0
    assert "run 1  prompt version" in capsys.readouterr().out  # the first run is run 1
    assert stored_runs(judge_db) == ([1], [])


def test_a_batch_endpoint_that_takes_no_file_leaves_no_empty_run(judge_db, tmp_path,
                                                                 monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with BatchServer(lambda body: (200, {}), batch_api=False) as server:
        assert command(argv(server.base_url, judge_db, tmp_path, "--batch",
                            "--cache", str(tmp_path / "cache.sqlite3"))) == 1
    assert "has no Batch API (upload: HTTP 404)" in capsys.readouterr().err
    assert stored_runs(judge_db) == ([], [])
