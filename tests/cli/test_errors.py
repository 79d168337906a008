"""One user-error path (`nlce.cli`): an error the user can fix is a `UserError`, printed as
`prog: error: message` with its own exit code; anything else that escapes a command is named a
bug in one line, and `NLCE_DEBUG=1` shows its traceback instead."""
from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nlce.cli import (
    DEBUG_ENV,
    EXIT_ERROR,
    EXIT_NOTHING_DONE,
    InputError,
    UserError,
    configure_logging,
    run_main,
)

ROOT = Path(__file__).resolve().parents[2]

# every error class a person can meet, with the base its callers caught before (kept)
USER_ERRORS = [
    ("taxonomy.models", "TaxonomyError", ValueError),
    ("taxonomy.languages", "LanguageCodeError", ValueError),
    ("models.errors", "ModelUnavailableError", LookupError),
    ("models.fim", "UnknownFamilyError", LookupError),
    ("db.formats.errors", "FormatError", ValueError),
    ("db.annotations", "AnnotationError", ValueError),
    ("db.annotations", "StaleAnnotationError", ValueError),
    ("db.importer.errors", "ImportFailed", Exception),
    ("corpus.languages", "UnknownLanguageError", ValueError),
    ("corpus.encoding", "SourceReadError", ValueError),
    ("corpus.backends", "EndpointUnreachable", RuntimeError),
    ("annotate.service.errors", "AnnotateError", Exception),
    ("annotate.service.errors", "NotAllowedError", Exception),
    ("metrics.core", "ConfigError", ValueError),
    ("metrics.core", "MetricInputError", ValueError),
    ("metrics.tokenize", "UnsupportedLanguageError", ValueError),
    ("metrics.encoders", "BackendError", ValueError),
    ("metrics.parallel", "ExecutorError", RuntimeError),
    ("judges.client", "EndpointUnusable", RuntimeError),
    ("judges.i18n", "PromptTextError", ValueError),
    ("judges.serve", "ServeError", RuntimeError),
    ("judges.targets", "NoTargets", LookupError),
]


@pytest.fixture
def no_debug(monkeypatch):
    monkeypatch.delenv(DEBUG_ENV, raising=False)


@pytest.mark.parametrize("module, name, old_base", USER_ERRORS, ids=[e[1] for e in USER_ERRORS])
def test_every_user_facing_error_is_a_user_error(module, name, old_base):
    error = getattr(importlib.import_module(module), name)
    assert issubclass(error, UserError) and issubclass(error, old_base)


def test_a_user_error_is_its_message_and_its_exit_code(capsys, no_debug):
    def nothing_kept(argv):
        raise UserError("nothing kept: none of 3 files gave a target", exit_code=EXIT_NOTHING_DONE)

    assert run_main(nothing_kept, [], prog="python -m corpus.extract") == EXIT_NOTHING_DONE
    assert capsys.readouterr().err == ("python -m corpus.extract: error: nothing kept: none of 3 "
                                       "files gave a target\n")

    def bad_option(argv):
        raise InputError("--limit must be at least 1")

    assert run_main(bad_option, []) == EXIT_ERROR
    assert capsys.readouterr().err == "nlce: error: --limit must be at least 1\n"
    assert isinstance(InputError("x"), ValueError) and InputError("x").exit_code == EXIT_ERROR


def test_a_missing_file_names_the_file(capsys, no_debug):
    def reads(argv):
        open(argv[0], encoding="utf-8")

    assert run_main(reads, ["/nonexistent/labels.jsonl"], prog="python -m db") == EXIT_ERROR
    assert capsys.readouterr().err == ("python -m db: error: /nonexistent/labels.jsonl: "
                                       "No such file or directory\n")


def _without_debug() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != DEBUG_ENV}


def test_bad_option_of_a_real_command_is_one_line_and_debug_shows_where(tmp_path):
    args = [sys.executable, "-m", "align", "--db", f"sqlite:///{tmp_path / 'x.db'}",
            "--bandwidth", "wide"]
    plain = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=_without_debug())
    assert plain.returncode == EXIT_ERROR
    assert plain.stderr == ("python -m align: error: bandwidth must be 'scott', 'silverman' or a "
                            "positive number, got 'wide'\n")
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened
    debug = subprocess.run(args, cwd=ROOT, capture_output=True, text=True,
                           env={**_without_debug(), DEBUG_ENV: "1"})
    assert debug.returncode != 0 and "Traceback" in debug.stderr
    assert "align/kde.py" in debug.stderr and "nlce.cli.InputError: bandwidth" in debug.stderr


def _bug(*args, **kwargs):
    raise ValueError("boom: a bug inside the pipeline")


# Commands whose whole pipeline sat under `except ValueError: return 2`. No real input reaches a
# bug (it would be fixed), so the test puts one into the pipeline's main step.
PIPELINES = [
    ("align.__main__", "align.pipeline", "run_alignment", ["--no-figures", "--bootstrap", "0"]),
    ("judges.report", "judges.report", "build_report", ["--bootstrap", "0"]),
    ("metrics.score", "metrics.score", "score_configuration", ["--metric", "bleu"]),
]


@pytest.mark.parametrize("command, home, step, argv", PIPELINES, ids=[p[0] for p in PIPELINES])
def test_a_bug_inside_a_pipeline_is_named_a_bug(command, home, step, argv, engine, db_url,
                                                tmp_path, monkeypatch, capsys, no_debug):
    # `engine`: the database exists (align and judges.report only read: a missing one is
    # refused before the pipeline starts)
    main = importlib.import_module(command).main
    monkeypatch.setattr(importlib.import_module(home), step, _bug)
    monkeypatch.chdir(tmp_path)  # align writes its report under ./reports by default
    argv = [*argv, "--db", db_url]
    assert run_main(main, argv, prog=f"python -m {command}") == EXIT_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err == (f"python -m {command}: internal error: ValueError: boom: a bug inside the "
                   f"pipeline (a bug; set {DEBUG_ENV}=1 for the traceback)\n")
    monkeypatch.setenv(DEBUG_ENV, "1")
    with pytest.raises(ValueError, match="boom: a bug inside the pipeline"):
        run_main(main, argv, prog=f"python -m {command}")


def test_commands_log_warnings_as_one_line_and_leave_logging_as_it_was(capsys, no_debug):
    root = logging.getLogger()
    before = (root.level, list(root.handlers))

    def warns(argv):
        logging.getLogger("metrics.runner").warning("chunk 3 retried")
        logging.getLogger("metrics.runner").info("not shown by default")

    assert run_main(warns, []) == 0
    assert capsys.readouterr().err == "WARNING metrics.runner: chunk 3 retried\n"
    assert (root.level, list(root.handlers)) == before
    handler = configure_logging(verbose=1)
    try:
        assert configure_logging(verbose=1) is handler and root.level == logging.INFO
    finally:
        root.removeHandler(handler)
        root.setLevel(before[0])
