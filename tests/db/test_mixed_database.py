"""A database that holds both kinds of target, the demo's comments in files and an imported pairs
dataset (a lab keeps its datasets together), read by every stage that reads across datasets:
`align` (all datasets and one), `judges.report`, and the app's service and analysis page."""
from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from sqlmodel import Session

from annotate import service
from db import get_engine
from testing.apptest import signed_in
from testing.cli import run_in_process

PAIRS = """item_id,language,model,reference,prediction,label
w1,de,sys-a,Die Katze sitzt auf der Matte.,Die Katze sass auf der Matte.,partial
w1,de,sys-b,Die Katze sitzt auf der Matte.,Der Hund liegt im Garten.,incorrect
w2,de,sys-a,Ein kleines Haus am See.,Ein kleines Haus am See.,correct
w2,de,sys-b,Ein kleines Haus am See.,Ein grosses Haus am Meer.,partial
w3,de,sys-a,Er liest jeden Abend ein Buch.,Er liest.,partial
w3,de,sys-b,Er liest jeden Abend ein Buch.,Er liest jeden Abend ein Buch.,correct
w4,de,sys-a,Wir gehen jetzt nach Hause.,Wir gehen jetzt nach Hause.,correct
w4,de,sys-b,Wir gehen jetzt nach Hause.,Sie kommen morgen.,incorrect
"""


def _judge_records(url: str) -> list[dict]:
    """A judge run's verdicts on every generation, each keyed as the JSONL format keys it: a
    pairs item by dataset and item, a comment by its file and span."""
    from sqlalchemy import select

    from db.models import Dataset, Generation, SourceFile, Target

    records = [{"type": "judge_run", "signature": "mixed-judge", "model": "stand-in",
                "strategy": "standard", "prompt_language": "en", "prompt_version": "v1"}]
    labels = ("correct", "partial", "incorrect")
    with Session(get_engine(url)) as session:
        rows = session.execute(
            select(Generation.model, Target.external_id, Target.span_start, Target.span_end,
                   SourceFile.repo, SourceFile.path, Dataset.name)
            .join(Target, Target.id == Generation.target_id)
            .outerjoin(SourceFile, SourceFile.id == Target.source_file_id)
            .join(Dataset, Dataset.id.in_([Target.dataset_id, SourceFile.dataset_id]))
            .order_by(Generation.id)).all()
    for i, (model, item, start, end, repo, path, dataset) in enumerate(rows):
        key = ({"dataset": dataset, "item": item} if repo is None else
               {"dataset": dataset, "repo": repo, "path": path, "span": [start, end]})
        records.append({"type": "judge_verdict", "run": "mixed-judge", **key, "model": model,
                        "status": "ok", "accuracy": labels[i % 3]})
    return records


@pytest.fixture(scope="module")
def mixed_db(demo_db_file, tmp_path_factory):
    """The demo, a pairs dataset `wmt` imported beside it, both scored with BLEU, and a judge run
    over both, each through its command; the tests read it (the app's sign-in adds a session)."""
    folder = tmp_path_factory.mktemp("mixed")
    path = folder / "mixed.db"
    shutil.copy(demo_db_file, path)
    url = f"sqlite:///{path}"
    (folder / "pairs.csv").write_text(PAIRS, encoding="utf-8")
    steps = [("db", "import", "--format", "pairs", "--dataset", "wmt", str(folder / "pairs.csv")),
             ("metrics.score", "--metric", "bleu", "--no-progress")]
    for module, *args in steps:
        done = run_in_process(module, *args, "--db", url)
        assert done.returncode == 0, done.stderr
    judged = folder / "judge.jsonl"
    judged.write_text("".join(json.dumps(r) + "\n" for r in _judge_records(url)),
                      encoding="utf-8")
    done = run_in_process("db", "import", "--format", "jsonl", str(judged), "--db", url)
    assert done.returncode == 0, done.stderr
    yield url
    get_engine(url).dispose()
    get_engine.cache_clear()


@pytest.mark.parametrize("datasets, n", [((), 133), (("demo",), 125), (("wmt",), 8)])
def test_align_names_every_item_of_a_mixed_database(mixed_db, tmp_path, datasets, n):
    out = tmp_path / "out"
    chosen = [arg for name in datasets for arg in ("--dataset", name)]
    done = run_in_process("align", "--db", mixed_db, "--out", str(out), "--no-figures",
                          "--resamples", "0", "--slice", "all", "--min-items", "3", *chosen)
    assert done.returncode == 0, done.stderr
    assert f"on {n} of {n} labelled generations" in " ".join(done.stdout.split())
    predictions = pd.read_csv(out / "predictions.csv", keep_default_na=False)
    named = predictions[predictions.key == "bleu"].drop_duplicates("generation_id")
    assert len(named) == n
    pairs, files = named[named.dataset == "wmt"], named[named.dataset == "demo"]
    assert set(pairs["item"]) == ({"w1", "w2", "w3", "w4"} if "demo" not in datasets else set())
    # a file's comment as repo/path:start-end, with whole numbers for its span
    assert files["item"].str.fullmatch(r"demo/[\w./-]+:\d+-\d+").all()
    assert len(files) == (0 if datasets == ("wmt",) else 125)
    judges = pd.read_csv(out / "judges.csv")
    assert judges.n.max() == n


def test_judges_report_reads_a_mixed_database(mixed_db, tmp_path):
    done = run_in_process("judges.report", "--db", mixed_db, "--out", str(tmp_path / "judged"))
    assert done.returncode == 0, done.stderr
    kappa = pd.read_csv(tmp_path / "judged" / "kappa.csv")
    assert kappa.n.tolist() == [133]


def test_the_apps_service_counts_both_kinds_of_item(mixed_db):
    with Session(get_engine(mixed_db)) as session:
        labels = service.finished_labels(session, acting=service.OPERATOR)
        gold = service.gold_labels(session, acting=service.OPERATOR)
        resolved, _ = service.resolve_labels(labels, gold)
        table = {row["language"]: row for row in service.accuracy_table(resolved)}
        assert set(table) == {"de", "el", "en", "nl", "pl", "zh"}
        assert table["de"]["sys-a correct"] == 2 and table["de"]["sys-b incorrect"] == 2
        pair = next(l for l in labels if l.language == "de")
        assert service.comment_pair(session, pair.generation_id, acting=service.OPERATOR)[0] \
            .startswith(("Die Katze", "Ein kleines", "Er liest", "Wir gehen"))
        assert "wmt" in service.export_jsonl(session, acting=service.OPERATOR)


def test_the_apps_analysis_page_aligns_a_mixed_database(mixed_db, monkeypatch):
    monkeypatch.setenv("NLCE_DATABASE_URL", mixed_db)
    at = signed_in("lead", "demo")
    at.switch_page("views/analysis.py").run()
    at.button(key="analysis_run").click().run(timeout=120)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert "predictions" in [h.value for h in at.subheader]
