"""The `nlce` console script: every command maps to a real `python -m` entry point, output is the
same both ways, and what escapes a command becomes one line and exit 2, never a traceback."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from nlce.__main__ import COMMANDS, resolve
from nlce.__main__ import main as nlce_main
from nlce.cli import EXIT_ERROR, run_main


@pytest.mark.parametrize("words", list(COMMANDS), ids=lambda w: " ".join(w))
def test_every_command_has_a_main(words):
    module = importlib.import_module(COMMANDS[words][0])
    assert callable(module.main)


def test_longest_command_wins():
    assert resolve(["metrics", "align", "--demo"]) == (("metrics", "align"), ["--demo"])
    assert resolve(["db", "import", "x.jsonl"]) == (("db",), ["import", "x.jsonl"])
    assert resolve(["metrics"]) is None


def test_same_output_as_python_dash_m():
    via_module = subprocess.run([sys.executable, "-m", "taxonomy", "--lang", "el"],
                                capture_output=True, text=True, check=True)
    via_nlce = subprocess.run([sys.executable, "-m", "nlce", "taxonomy", "--lang", "el"],
                              capture_output=True, text=True, check=True)
    assert via_nlce.stdout == via_module.stdout
    assert "nlce-2025.1" in via_nlce.stdout


def test_unknown_command_suggests(capsys):
    assert nlce_main(["metrics", "scroe"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "metrics score" in err and "metrics align" in err


def test_escaped_error_is_one_line_exit_2(capsys, monkeypatch):
    monkeypatch.delenv("NLCE_DEBUG", raising=False)

    def broken(argv):
        raise ValueError("bad value in row 3\nsecond line")

    assert run_main(broken, [], prog="nlce demo") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("nlce demo: internal error: ValueError: bad value in row 3 (a bug; ")


def test_exit_codes_pass_through():
    assert run_main(lambda argv: 3, []) == 3
    assert run_main(lambda argv: None, []) == 0

    def exits(argv):
        raise SystemExit(2)

    assert run_main(exits, []) == 2


def test_groups_run_as_python_dash_m_and_list_their_commands():
    """`python -m corpus` failed with "No module named corpus.__main__"; now each group with
    several commands lists them, and runs one like `nlce GROUP COMMAND`."""
    listed = subprocess.run([sys.executable, "-m", "corpus"], capture_output=True, text=True)
    assert listed.returncode == EXIT_ERROR and listed.stdout == ""
    assert "python -m corpus COMMAND" in listed.stderr
    assert "extract" in listed.stderr and "generate" in listed.stderr
    run = subprocess.run([sys.executable, "-m", "corpus", "extract", "--help"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "--lang" in run.stdout


@pytest.mark.parametrize("group, commands", [("corpus", {"extract", "generate"}),
                                             ("judges", {"run", "report", "import", "serve", "jury"}),
                                             ("metrics", {"score", "align"})])
def test_group_help_lists_the_group_only(group, commands, capsys):
    from nlce.__main__ import group_main

    assert group_main(group, ["--help"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    assert listed == commands
    assert f"python -m {group} COMMAND" in out


def test_judges_serve_and_align_are_nlce_commands(capsys):
    assert nlce_main(["judges", "serve", "--help"]) == 0
    assert "--n-ctx" in capsys.readouterr().out
    assert nlce_main(["align", "--help"]) == 0
    assert "usage: python -m align" in capsys.readouterr().out
    assert nlce_main(["--help"]) == 0
    shown = capsys.readouterr().out
    assert "judges serve" in shown and "  align " in shown
