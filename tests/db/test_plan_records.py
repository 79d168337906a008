"""Label plans in the project format (db/importer/plans.py): a plan travels with its generations'
probabilities and draws (the round trips and the move in test_import_export.py carry the plan of
`small_records`), importing it again changes nothing, and a stored plan is never redrawn by an
import: another draw, another probability or a new generation under its name is refused, naming
the line and field, and nothing of that import is stored."""
from __future__ import annotations

import pytest
from db_testkit import small_records, write_jsonl
from sqlalchemy import select

from db import models as m
from db import session_scope
from db.__main__ import main as db_main
from db.importer import ImportFailed, import_jsonl
from db.importer.accounts import ACCOUNTS_CREATE
from testing.cli import as_command

main = as_command(db_main, "python -m db")


def _import(url, records, tmp_path, name="plan.jsonl"):
    path = write_jsonl(tmp_path / name, records)
    with session_scope(url) as session:
        return import_jsonl(session, [path], accounts=ACCOUNTS_CREATE,
                           privileges=True).as_dict()


def _plans(url) -> list[tuple]:
    with session_scope(url) as session:
        plans = session.execute(select(m.LabelPlan.name, m.LabelPlan.budget, m.LabelPlan.seed,
                                       m.LabelPlan.label_policy, m.LabelPlan.compare)).all()
        items = session.execute(select(m.LabelPlanItem.pilot, m.LabelPlanItem.probability,
                                       m.LabelPlanItem.drawn)
                                .order_by(m.LabelPlanItem.generation_id)).all()
        return [tuple(p) for p in plans] + [tuple(i) for i in items]


def _replace(records, kind, index=0, **changes):
    """`records` with the `index`-th record of type `kind` changed."""
    out, seen = [], 0
    for record in records:
        if record["type"] == kind:
            if seen == index:
                record = {**record, **changes}
            seen += 1
        out.append(record)
    return out


def test_a_plan_is_stored_and_imported_again_unchanged(any_db_url, tmp_path):
    stats = _import(any_db_url, small_records(), tmp_path)
    assert stats["label_plan"] == {"created": 1} and stats["label_plan_item"] == {"created": 2}
    assert _plans(any_db_url) == [
        ("mini-nl-1", 1.0, 3, "gold-else-majority", {"language": "nl", "a": "m/a", "b": "m/b"}),
        (True, 1.0, True), (False, 0.375, False)]
    again = _import(any_db_url, small_records(), tmp_path)
    assert again["label_plan"] == {"unchanged": 1}
    assert again["label_plan_item"] == {"unchanged": 2}


@pytest.mark.parametrize("kind, changes, field", [
    ("label_plan", {"seed": 4}, "seed"),
    ("label_plan", {"budget": 2.0}, "budget"),
    ("label_plan_item", {"probability": 0.5}, "probability"),
    ("label_plan_item", {"drawn": True}, "drawn"),
])
def test_a_stored_plan_is_never_redrawn_by_an_import(db_url, tmp_path, kind, changes, field):
    _import(db_url, small_records(), tmp_path)
    before = _plans(db_url)
    changed = _replace(small_records(), kind, index=1 if kind == "label_plan_item" else 0,
                       **changes)
    with pytest.raises(ImportFailed) as failed:
        _import(db_url, changed, tmp_path, "changed.jsonl")
    assert failed.value.field == field
    assert "a plan is never redrawn: import it under another name" in failed.value.message
    assert _plans(db_url) == before


def test_a_stored_plan_takes_no_new_generation(db_url, tmp_path):
    records = small_records()
    _import(db_url, [r for r in records if not (r["type"] == "label_plan_item"
                                                and not r["pilot"])], tmp_path)
    with pytest.raises(ImportFailed, match="stored without this generation"):
        _import(db_url, records, tmp_path, "more.jsonl")
    assert len(_plans(db_url)) == 2  # the plan and its one pilot item


def test_bad_plan_records_name_the_line_and_field_and_store_nothing(db_url, tmp_path):
    cases = [(_replace(small_records(), "label_plan", estimand="median"), "estimand"),
             (_replace(small_records(), "label_plan_item", probability=0.0), "probability"),
             (_replace(small_records(), "label_plan_item", plan="nope"), "plan"),
             (_replace(small_records(), "label_plan", run="no|such|run"), "run")]
    for records, field in cases:
        path = write_jsonl(tmp_path / f"{field}.jsonl", records)
        assert main(["import", "--accounts", "--account-privileges", str(path), "--db",
                     db_url]) == 2
        with pytest.raises(ImportFailed) as failed:
            _import(db_url, records, tmp_path, f"{field}-again.jsonl")
        assert failed.value.field == field, failed.value
        assert failed.value.location.startswith("line "), failed.value
    with session_scope(db_url) as session:
        assert session.execute(select(m.LabelPlan)).first() is None
        assert session.execute(select(m.Generation)).first() is None  # the whole import undone
