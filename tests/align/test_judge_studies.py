"""`align` shows the three judge robustness studies (agreement.robustness) in its JSON, CSVs
and report.html, on a database written here by hand (db.models, no judge package involved).

Four Dutch generations, the expert's labels: g1 correct, g2 partial, g3 incorrect, g4 correct.
Judge runs (model "nl-judge", strategy standard, target language nl):

- runs 1-2, one repeat group: run 1 right everywhere; run 2 says correct, correct, incorrect,
  partial -> n 4, U@K 2/4 (g2, g4 wrong somewhere), I@K 0, flips 2/4; kappa 1 and 7/11 (quadratic
  weights (i-j)^2/4 over incorrect<partial<correct: observed disagreement (1/4 + 1/4)/4 = 1/8,
  expected 2 x (1/4·1/4·1/4 + 1/4·1/2·1 + 1/4·1/2·1/4) = 11/32, kappa = 1 - 4/11);
- run 3 (English prompt) and run 4 (Dutch prompt), same settings otherwise: run 3 says correct
  everywhere (right on g1, g4), run 4 partial, partial, incorrect, correct (right on g2, g3, g4)
  -> n 4, CR_en 1/2, CR_x 3/4, CR_bi 1/4, CDR 3/4 (en_only 1, x_only 2), McNemar exact
  p = 2 x (C(3,0) + C(3,1)) / 2^3 = 1 (capped);
- runs 5-6, code-mixed at CMD 0 and 1: run 5 correct everywhere (exact 2/4, kappa 0: a constant
  judge), run 6 right on g1-g3 and a parse error on g4 (n 3, exact 1, kappa 1, parse failures 1/4).
"""
from __future__ import annotations

import base64
import csv
import json

import pytest
from sqlmodel import Session

from db import get_engine
from db.models import (
    Annotation,
    Annotator,
    Dataset,
    Generation,
    JudgeRun,
    JudgeVerdict,
    SourceFile,
    Target,
)
from testing.html_page import ReportPage

HUMAN = ["correct", "partial", "incorrect", "correct"]
ALL_CORRECT = ["correct"] * 4
RUNS = [  # (prompt language, strategy, params beyond the common ones, labels, statuses)
    ("nl", "standard", {"sampling": {"seed": 1}, "repeat": {"group": "g", "index": 0, "of": 2}},
     HUMAN, None),
    ("nl", "standard", {"sampling": {"seed": 2}, "repeat": {"group": "g", "index": 1, "of": 2}},
     ["correct", "correct", "incorrect", "partial"], None),
    ("en", "standard", {"sampling": {"seed": 5}}, ALL_CORRECT, None),
    ("nl", "standard", {"sampling": {"seed": 5}}, ["partial", "partial", "incorrect", "correct"],
     None),
    ("nl", "standard-cmd0-s0", {"code_mix": {"cmd": 0.0, "seed": 0, "base": "standard"}},
     ALL_CORRECT, None),
    ("nl", "standard-cmd1-s0", {"code_mix": {"cmd": 1.0, "seed": 0, "base": "standard"}},
     [*HUMAN[:3], None], ["ok", "ok", "ok", "parse_error"]),
]


@pytest.fixture
def studies_db(tmp_path):
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    engine = get_engine(url)
    with Session(engine) as s:
        dataset = Dataset(name="studies")
        expert = Annotator(username="expert", role="expert")
        s.add_all([dataset, expert])
        s.flush()
        generations = []
        for i, label in enumerate(HUMAN):
            source = SourceFile(dataset_id=dataset.id, natural_language="nl",
                                programming_language="java", repo="r", path=f"{i}.java",
                                content=f"// c{i}\n", content_sha256=f"sha{i}")
            s.add(source)
            s.flush()
            target = Target(source_file_id=source.id, span_start=0, span_end=5,
                            original_comment=f"c{i}")
            s.add(target)
            s.flush()
            generation = Generation(target_id=target.id, model="gen", predicted_comment="p")
            s.add(generation)
            s.flush()
            s.add(Annotation(generation_id=generation.id, annotator_id=expert.id, accuracy=label))
            generations.append(generation.id)
        for i, (prompt, strategy, params, labels, statuses) in enumerate(RUNS, start=1):
            run = JudgeRun(signature=f"run-{i}", model="nl-judge", strategy=strategy,
                           prompt_language=prompt, prompt_version=f"{strategy}-{prompt}-v1",
                           params={"target_language": "nl", **params})
            s.add(run)
            s.flush()
            for position, (g, label) in enumerate(zip(generations, labels)):
                s.add(JudgeVerdict(run_id=run.id, generation_id=g, accuracy=label,
                                   status=(statuses or ["ok"] * 4)[position], codes=[],
                                   position=position))
        s.commit()
    yield url
    engine.dispose()
    get_engine.cache_clear()


def test_metrics_align_reports_the_three_studies(studies_db, tmp_path):
    from align.__main__ import main

    out = tmp_path / "align"
    assert main(["--db", studies_db, "--out", str(out), "--bootstrap", "0", "--slice", "all",
                 "--format", "json"]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (stability,) = results["judge_stability"]
    assert (stability["runs"], stability["k"], stability["n"]) == ("1 2", 2, 4)
    assert (stability["u_at_k"], stability["i_at_k"], stability["flip_rate"]) == \
        pytest.approx((0.5, 0.0, 0.5))
    assert (stability["kappa_min"], stability["kappa_max"]) == pytest.approx((7 / 11, 1.0))
    (language,) = results["judge_language_consistency"]
    assert (language["english_run"], language["native_run"], language["n"]) == (3, 4, 4)
    assert [language[c] for c in ("cr_en", "cr_x", "cr_bi", "cdr")] == \
        pytest.approx([0.5, 0.75, 0.25, 0.75])
    assert (language["en_only"], language["x_only"], language["p_mcnemar"]) == (1, 2, 1.0)
    mix = results["judge_code_mix"]
    assert [(r["run_id"], r["cmd"], r["strategy"], r["n"]) for r in mix] == \
        [(5, 0.0, "standard", 4), (6, 1.0, "standard", 3)]
    assert [r["exact_agreement"] for r in mix] == pytest.approx([0.5, 1.0])
    assert [r["kappa"] for r in mix] == pytest.approx([0.0, 1.0])
    assert [r["parse_failure_rate"] for r in mix] == pytest.approx([0.0, 0.25])
    for study in ("stability", "language_consistency", "code_mix"):
        with open(out / f"judge_{study}.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert len(rows) == len(results[f"judge_{study}"])
        assert {r["label_policy"] for r in rows} == {results["label_policy"]}
    page = ReportPage((out / "report.html").read_text(encoding="utf-8"))
    for study in ("stability", "language_consistency", "code_mix"):
        (src,) = page.images_in(study)  # embedded: the page carries its figures
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG")
    (shown,) = page.tables_in("language_consistency")[0].records()
    assert (shown["cr_x"], shown["cdr"], shown["p_mcnemar"]) == ("0.750", "0.750", "1.000")
