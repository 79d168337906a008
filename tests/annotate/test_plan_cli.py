"""`python -m annotate.plan` (and `nlce annotate plan`) as a person runs it: it says what it did,
stores the plan and writes plan.csv with exactly its columns (spreadsheet-safe), assigns the
drawn generations with --assign, refuses bad input in one line with exit 2 and nothing stored
or written, and `--status` reads the stop rule from a read-only database. The walk through
docs/annotate.md on the demo database runs here too."""
from __future__ import annotations

import csv
import hashlib
import os
import runpy
from pathlib import Path

import numpy as np
import pytest
from plan_kit import add_judge, add_labels, plan_tables
from sqlmodel import Session

from agreement.labels import load_labels
from annotate import service
from annotate.service.plans import PLAN_COLUMNS
from db import get_engine
from testing.cli import as_command, run_in_process
from testing.synthetic import add_synthetic_corpus

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "s3cret-pass"


@pytest.fixture
def judged(tmp_path):
    """nl only, 30 targets, models model-a and @model-b (a name a spreadsheet would run);
    anna and bas speak nl; a judge right 75% of the time; 20 generations labelled (the
    pilot)."""
    url = f"sqlite:///{tmp_path / 'plan.db'}"
    with Session(get_engine(url)) as session:
        add_synthetic_corpus(session, targets_per_language=30, languages=("nl",),
                             models=("model-a", "@model-b"))
        for name in ("anna", "bas"):
            service.create_annotator(session, username=name, password=PASSWORD,
                                     languages=["nl"], acting=service.OPERATOR)
        session.commit()
    judge = add_judge(url)
    pilot = np.random.default_rng(2).choice(sorted(judge["truth"]), 20, replace=False)
    add_labels(url, "anna", {int(g): judge["truth"][int(g)] for g in pilot})
    yield {"url": url, "key": judge["key"], "out": tmp_path / "plan.csv"}
    get_engine(url).dispose()
    get_engine.cache_clear()


def _plan(judged, *args):
    return run_in_process("annotate.plan", "--db", judged["url"], "--dataset", "synthetic",
                          "--predictor", judged["key"], "--out", str(judged["out"]), *args)


def _rows(path):
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        return next(reader), list(reader)


def test_a_plan_is_stored_written_and_told(judged):
    result = _plan(judged, "--budget", "10", "--seed", "3")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "pilot: 20 generation(s) with a human label and an ok verdict" in out
    assert "pool: 40 generation(s) with an ok verdict and no human label (nl 40)" in out
    assert "probabilities: learned from a pilot of 20 labelled generation(s)" in out
    assert "expected labels 10.0 (budget 10)" in out and "with seed 3" in out
    header, rows = _rows(judged["out"])
    assert header == PLAN_COLUMNS == ["plan", "generation_id", "item_id", "model", "language",
                                      "predictor_value", "probability", "drawn"]
    assert len(rows) == 40 and {r[0] for r in rows} == {"synthetic-all-1"}
    assert {r[3] for r in rows} == {"model-a", "'@model-b"}  # shown as text, never run
    assert sum(float(r[6]) for r in rows) == pytest.approx(10)
    drawn = sum(r[7] == "True" for r in rows)
    assert f"drawn {drawn} (nl {drawn})" in out
    assert all(":" in r[2] and r[2].endswith(tuple("0123456789")) for r in rows)  # repo/path:a-b
    plans, items = plan_tables(judged["url"])
    assert plans == [("synthetic-all-1", "mean_score", 10.0, 3)] and len(items) == 60
    again = _plan(judged, "--budget", "10", "--seed", "3", "--name", "second")
    assert _rows(judged["out"])[1] == [["second", *r[1:]] for r in rows]  # same draws
    assert again.returncode == 0


@pytest.mark.parametrize("args, says", [
    (["--budget", "41"], "A budget of 41 labels is more than the 40 generation(s)"),
    (["--budget", "5", "--predictor", "nobody"], "No judge run or jury nobody"),
    (["--budget", "5", "--language", "el"], "Dataset synthetic has no generation in el"),
    (["--budget", "5", "--compare", "nl:model-a"], "Compare expects LANGUAGE:A:B"),
    (["--budget", "5", "--labels", "nonsense"], "Not planned: "),
])
def test_bad_input_is_one_line_exit_2_and_nothing_stored_or_written(judged, args, says):
    result = _plan(judged, *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in result.stderr, lines
    assert lines[0].startswith("python -m annotate.plan: error: ")
    assert plan_tables(judged["url"]) == ([], []) and not judged["out"].exists()
    assert not list(judged["out"].parent.glob(".plan.csv.part-*"))


def test_a_plan_needs_its_options_and_a_file_it_can_write(judged, tmp_path):
    result = run_in_process("annotate.plan", "--db", judged["url"], "--dataset", "synthetic")
    assert result.returncode == 2 and "a plan needs --predictor, --budget, --out" in result.stderr
    result = _plan(judged, "--budget", "5", "--out", str(tmp_path / "no" / "plan.csv"))
    assert result.returncode == 2 and "expected a file in an existing folder" in result.stderr
    # the file cannot be written once the plan is worked out: the plan is not stored either
    (tmp_path / f".plan.csv.part-{os.getpid()}").mkdir()
    result = _plan(judged, "--budget", "5")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1 and ".plan.csv.part-" in result.stderr
    assert plan_tables(judged["url"]) == ([], []) and not judged["out"].exists()


def test_a_mistyped_database_is_named_not_made(tmp_path):
    """Only the commands that make databases create one: a plan (or its status) on a path that
    holds none names it in one line and leaves no file behind."""
    typo = tmp_path / "typo.db"
    out = tmp_path / "plan.csv"
    for args in (["--dataset", "synthetic", "--predictor", "judge", "--budget", "5", "--out",
                  str(out)], ["--status"]):
        result = run_in_process("annotate.plan", "--db", str(typo), *args)
        assert result.returncode == 2, (result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and f"no database at {typo}: create one with" in lines[0], lines
        assert sorted(tmp_path.iterdir()) == []


def test_assign_gives_the_drawn_generations_to_speakers(judged):
    result = _plan(judged, "--budget", "8", "--assign")
    assert result.returncode == 0, result.stderr
    drawn = sum(r[7] == "True" for r in _rows(judged["out"])[1])
    assert (f"assigned {drawn} drawn generation(s) to active annotators who speak their "
            f"language (0 of the {drawn} waiting" in result.stdout)
    with Session(get_engine(judged["url"])) as session:
        people = {p.username: service.queue_for(session, p.id) for p in
                  service.list_annotators(session, acting=service.OPERATOR)}
    assert abs(len(people["anna"]) - len(people["bas"])) <= 1
    assert len(people["anna"]) + len(people["bas"]) == drawn


def test_status_reads_a_read_only_database(judged, tmp_path):
    assert _plan(judged, "--budget", "10", "--target-width", "0.5",
                 "--compare", "nl:model-a:@model-b").returncode == 0
    path = Path(judged["url"].removeprefix("sqlite:///"))
    get_engine(judged["url"]).dispose()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    path.chmod(0o444)
    try:
        result = run_in_process("annotate.plan", "--status", "--db", judged["url"])
        narrow = run_in_process("annotate.plan", "--status", "--db", judged["url"],
                                "--target-width", "0.01", "--estimand", "share_correct")
    finally:
        path.chmod(0o644)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("plan 'synthetic-all-1': judge-x[standard,en,v1], estimand "
                               "mean_score, all languages, budget 10, labels auto, target width 0.500, "
                               "compare @model-b vs model-a in nl")
    assert lines[1].split() == ["estimand", "slice", "estimate", "(95%", "CI)", "width", "done",
                                "drawn", "left", "decided"]
    assert any(line.split()[:2] == ["mean_score", "all"] for line in lines)
    # nothing drawn is labelled yet: no estimate where planned generations are, no decision
    assert all(line.split()[-1] == "no" for line in lines[2:])
    assert narrow.returncode == 0 and "target width 0.010" in narrow.stdout
    assert {line.split()[0] for line in narrow.stdout.splitlines()[2:]} == {"share_correct"}
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_status_without_plans_did_nothing_useful(judged):
    result = run_in_process("annotate.plan", "--status", "--db", judged["url"])
    assert result.returncode == 1 and "no label plan in this database" in result.stderr
    unknown = run_in_process("annotate.plan", "--status", "--plan", "x", "--db", judged["url"])
    assert unknown.returncode == 2 and "No plan named x; plans: none." in unknown.stderr


def test_nlce_annotate_plan_is_the_same_command(judged):
    result = run_in_process("nlce", "annotate", "plan", "--db", judged["url"], "--status")
    assert result.returncode == 1 and "no label plan in this database" in result.stderr


def test_the_docs_walk_through_a_plan_on_the_demo(demo_db_url, tmp_path, monkeypatch):
    """docs/annotate.md: a noisy copy of the expert's labels as the judge, the team's labels as
    the pilot, zh refused until someone speaks it, the plan, then the expert's labels standing
    in for the labels that arrive."""
    url = demo_db_url
    script = runpy.run_path(str(ROOT / "bench" / "demo_judge_labels.py"))
    labels_file = tmp_path / "noisy-expert.csv"
    make_labels = as_command(script["main"], "bench/demo_judge_labels.py")
    assert make_labels(["--db", url, "--annotator", "expert", "--noise", "0.3",
                        "--out", str(labels_file)]) == 0
    assert run_in_process("judges.importer", "--format", "labels", str(labels_file), "--model",
                          "noisy-expert", "--dataset", "demo", "--db", url).returncode == 0
    plan = ["--db", url, "--dataset", "demo", "--predictor",
            "noisy-expert[labels,unknown,unknown]", "--budget", "20", "--labels",
            "annotator:anna-else-annotator:bas", "--target-width", "0.2",
            "--out", str(tmp_path / "plan.csv")]
    refused = run_in_process("annotate.plan", *plan)
    assert refused.returncode == 2 and "No active annotator speaks zh" in refused.stderr
    monkeypatch.setenv("NLCE_NEW_PASSWORD", "chen-demo-password")
    assert run_in_process("annotate", "--db", url, "--add-user", "chen", "--languages",
                          "zh").returncode == 0
    made = run_in_process("annotate.plan", *plan, "--assign")
    assert made.returncode == 0, made.stderr
    assert "pilot: 65 generation(s)" in made.stdout  # anna's and bas's labels
    assert "pool: 60 generation(s) with an ok verdict and no human label (el 20, pl 15, " \
           "zh 25)" in made.stdout
    status = run_in_process("annotate.plan", "--status", "--estimand", "mean_score", "--labels",
                            "annotator:anna-else-annotator:bas-else-expert", "--db", url)
    assert status.returncode == 0, status.stderr
    overall = next(line.split() for line in status.stdout.splitlines()
                   if line.split()[:2] == ["mean_score", "all"])
    estimate, low, high = float(overall[2]), *map(float, overall[3].strip("()").split("-"))
    expert = load_labels(url, "expert")  # every one of the demo's 125 generations
    truth = np.mean([{"correct": 1, "partial": 0.5}.get(r.accuracy, 0) for r in expert.values()])
    assert len(expert) == 125
    assert low <= truth <= high and abs(estimate - truth) < 0.05
