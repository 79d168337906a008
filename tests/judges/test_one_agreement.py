"""One judge run, one set of numbers: `judges.report`, `python -m align` and the app's
analysis page (`align.pipeline.run_alignment`) show the same configurations, kappa, n
and failure counts, because all three go through `agreement` (issues 16 and 19).

Real judge runs (judges.runner against the local chat-completions server of judge_testkit.py)
on the tiny Greek corpus of conftest.py: the expert labels every Greek generation, one has a
gold label."""
from __future__ import annotations

import csv
import json

import pytest
from judge_testkit import reply
from sqlmodel import select

from agreement.statistics import weighted_kappa
from db import models
from db.engine import session_scope
from judges.client import JudgeClient, OpenAIBackend, SamplingParams
from judges.i18n import texts
from judges.runner import RunConfig


def client_for(server):
    backend = OpenAIBackend("judge-test", SamplingParams(), base_url=server.base_url,
                            api_key="test", timeout_s=5.0, max_retries=0)
    return JudgeClient(backend, None, "auto")


def config(**settings):
    return RunConfig(model="judge-test", strategy="standard", lang="el", prompt_lang="el",
                     **settings)


def _answer(labels_by_pid: dict[str, str]) -> str:
    """A Greek answer that judges the given prediction ids only."""
    from taxonomy import default_taxonomy

    tax = default_taxonomy()
    f = texts("el")["output_fields"]
    return json.dumps({f["evaluations"]: [
        {f["prediction_id"]: pid, f["errors"]: [], f["accuracy"]: tax.accuracy_text(label, "el")[0]}
        for pid, label in labels_by_pid.items()]}, ensure_ascii=False)


PATTERN_A = ["correct", "partial", "incorrect", "correct", "partial"]
PATTERN_B = ["correct", "incorrect", "incorrect", "partial", "correct"]


@pytest.fixture
def three_runs(judge_db_any, chat_server, tax):
    """Three runs of one judge model x strategy x language x prompt that differ only in their
    settings: A (defaults), B (temperature 0.7), C (shuffled order; the judge answers only P1 and
    P2 of five, so its responses are ok and three verdicts per target are empty). On SQLite and
    on PostgreSQL."""
    from judges.runner import run_judge

    def answering(pattern, count=5):
        return lambda request: reply(_answer({f"P{i + 1}": pattern[i] for i in range(count)}))

    for settings, responder in (({}, answering(PATTERN_A)),
                                ({"sampling": SamplingParams(temperature=0.7)},
                                 answering(PATTERN_B)),
                                ({"order": "shuffle"}, answering(PATTERN_A, count=2))):
        chat_server.responder = responder
        summary = run_judge(client_for(chat_server), config(**settings), tax, judge_db_any,
                            progress=False)
        assert summary.statuses == {"ok": 2}  # every response is ok, even C's partial ones
    return judge_db_any


def _expected(url: str) -> dict[int, tuple[int, float, int]]:
    """run id -> (n, kappa, ok verdicts), computed here from the stored rows: human label =
    gold, else the expert's (the default policy 'auto'; the novice never wins a majority tie
    over the earlier expert, and every Greek generation has an expert label)."""
    with session_scope(url) as s:
        gold = {g.generation_id: g.accuracy for g in s.exec(select(models.GoldLabel))}
        expert = {a.generation_id: a.accuracy for a, who in s.exec(
            select(models.Annotation, models.Annotator)
            .join(models.Annotator, models.Annotator.id == models.Annotation.annotator_id))
            if who.role == "expert"}
        human = {**expert, **gold}
        out = {}
        for run in s.exec(select(models.JudgeRun)).all():
            verdicts = s.exec(select(models.JudgeVerdict)
                              .where(models.JudgeVerdict.run_id == run.id)).all()
            ok = [v for v in verdicts if v.status == "ok"]
            pairs = [(human[v.generation_id], v.accuracy) for v in ok if v.generation_id in human]
            out[run.id] = (len(pairs), weighted_kappa([h for h, _ in pairs], [j for _, j in pairs]),
                           len(ok))
    return out


def _csv(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_one_run_shows_one_kappa_and_n_everywhere(three_runs, tmp_path, capsys):
    from align.__main__ import main as align_main
    from align.pipeline import AlignOptions, run_alignment
    from judges import report as judge_report

    url = three_runs
    expected = _expected(url)
    assert sorted(n for n, _, _ in expected.values()) == [4, 10, 10]

    # judges.report (its CSV files)
    assert judge_report.main(["--db", url, "--out", str(tmp_path / "jr"),
                              "--bootstrap", "200"]) == 0
    assert "label policy auto" in capsys.readouterr().out
    report_kappa = {r["key"]: r for r in _csv(tmp_path / "jr" / "kappa.csv")}
    report_rates = {r["key"]: r for r in _csv(tmp_path / "jr" / "failure_rates.csv")}

    # python -m align (its JSON on stdout)
    assert align_main(["--db", url, "--format", "json", "--out", str(tmp_path / "ma"),
                       "--no-figures", "--slice", "all", "--bootstrap", "200"]) == 0
    align_json = json.loads(capsys.readouterr().out)
    assert align_json["label_policy"] == "auto (gold-else-expert-else-majority)"
    align_rows = {r["key"]: r for r in align_json["judges"]}

    # the app's analysis page
    app = run_alignment(url, AlignOptions(bootstrap=200, slices=("all",)))
    app_rows = {r["key"]: r for r in app.judges.kappa.to_dict("records")}

    # three runs, three rows, the same names everywhere, each naming what sets it apart
    assert len(report_kappa) == len(align_rows) == len(app_rows) == 3
    assert set(report_kappa) == set(align_rows) == set(app_rows) == set(report_rates)
    assert any("temperature=0.7" in key for key in align_rows)
    assert any("order=shuffle" in key for key in align_rows)
    for key, row in align_rows.items():
        run_id = row["judge_run_id"]
        n, kappa, ok = expected[run_id]
        assert int(report_kappa[key]["run_id"]) == app_rows[key]["judge_run_id"] == run_id
        assert row["n"] == app_rows[key]["n"] == int(report_kappa[key]["n"]) == n
        assert row["kappa"] == pytest.approx(kappa)
        assert app_rows[key]["kappa"] == pytest.approx(kappa)
        assert float(report_kappa[key]["kappa"]) == pytest.approx(kappa)
        for bound in ("kappa_low", "kappa_high"):  # same resamples, same interval
            assert float(report_kappa[key][bound]) == pytest.approx(row[bound])
            assert app_rows[key][bound] == pytest.approx(row[bound])
        # one definition of ok: over the verdicts, one per generation
        assert int(report_rates[key]["verdicts"]) == row["n_verdicts"] == 10
        assert int(report_rates[key]["ok"]) == row["ok"] == ok
        for rate in ("failure_rate", "parse_failure_rate", "empty_rate"):
            assert float(report_rates[key][rate]) == pytest.approx(row[rate])
        assert report_kappa[key]["label_policy"] == align_json["label_policy"]
    # the partially answered run: its responses are all ok, yet 6 of its 10 verdicts failed
    (partial,) = [r for r in align_rows.values() if r["n"] == 4]
    assert partial["failure_rate"] == pytest.approx(0.6)
    assert partial["empty_rate"] == pytest.approx(0.6)
    assert int(report_rates[partial["key"]]["requests"]) == 2


def test_a_generation_counts_once_per_configuration(three_runs):
    """The pooled row of issue 19 (n = 24 from 30 verdicts over 10 generations) is gone: no
    configuration has more pairs than it has generations."""
    from agreement.judges import load_verdicts

    verdicts = load_verdicts(three_runs)
    assert verdicts.groupby("key").generation_id.nunique().to_dict() == \
        verdicts.groupby("key").size().to_dict()
    assert verdicts.key.nunique() == verdicts.judge_run_id.nunique() == 3


def test_report_labels_policy_is_checked_before_reading(judge_db, capsys):
    from judges import report as judge_report

    assert judge_report.main(["--db", judge_db, "--labels", "everyone"]) == 2
    err = capsys.readouterr().err
    assert "unknown label policy 'everyone'" in err and "Traceback" not in err
