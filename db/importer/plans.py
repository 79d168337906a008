"""The per-record writers of label plans (`annotate.plan`): a plan keyed by its name, its
generations by plan name + generation key (a mixin of `RecordWriter`, which resolves the keys).

A plan is never redrawn: a plan already stored under the name must be the same plan (same
dataset, judge run, estimand, budget, seed, ...; the same probabilities and draws for every
generation it holds), or the record is refused; a stored plan gets no new generations. Importing
the same plan again changes nothing."""
from __future__ import annotations

from sqlalchemy import select

from db import models as m
from db.importer.errors import Reject

_PLAN_FIELDS = ("predictor", "estimand", "language", "budget", "min_probability", "seed",
                "method", "label_policy", "target_width", "compare")
_ITEM_FIELDS = ("pilot", "predictor_value", "probability", "drawn")
_REDRAWN = "a plan is never redrawn: import it under another name"


def first_difference(row, values: dict) -> str | None:
    """The first field of `values` that `row` holds otherwise, None where it holds them all
    (RecordWriter's update test; here, the field a refused redraw names)."""
    return next((k for k, v in values.items() if getattr(row, k) != v), None)


class PlanWriters:
    """`_write_label_plan` and `_write_label_plan_item`; needs RecordWriter's key resolution and
    `_create`, its `_plans` cache (name -> (id, dataset id)) and `_new_plans` (names created by this
    import, the only ones that may get generations)."""

    def _write_label_plan(self, rec):
        if rec["estimand"] not in m.PLAN_ESTIMANDS:
            raise Reject(f"expected one of {', '.join(m.PLAN_ESTIMANDS)}, got "
                         f"{rec['estimand']!r}", "estimand")
        if not 0 < rec["budget"]:
            raise Reject(f"expected a budget above 0, got {rec['budget']!r}", "budget")
        values = {"dataset_id": self.dataset_id(rec["dataset"], create=False),
                  "judge_run_id": self.judge_run_id(rec["run"]),
                  **{k: rec[k] for k in _PLAN_FIELDS if k in rec}}
        if values.get("compare") is None:
            values["compare"] = {}
        row = self.session.execute(select(m.LabelPlan).where(m.LabelPlan.name == rec["name"])
                                   ).scalars().first()
        if row is not None:
            differs = first_difference(row, values)
            if differs is not None:
                field = {"dataset_id": "dataset", "judge_run_id": "run"}.get(differs, differs)
                raise Reject(f"plan {rec['name']!r} is stored with another {field}; "
                             f"{_REDRAWN}", field)
            self._plans[rec["name"]] = (row.id, row.dataset_id)
            return "unchanged"
        row = self._create(m.LabelPlan, {"name": rec["name"]}, values, rec.get("created_at"))
        self._plans[rec["name"]] = (row.id, row.dataset_id)
        self._new_plans.add(rec["name"])
        return "created"

    def _plan(self, name: str) -> tuple[int, int]:
        if name not in self._plans:
            row = self.session.execute(select(m.LabelPlan.id, m.LabelPlan.dataset_id)
                                       .where(m.LabelPlan.name == name)).first()
            if row is None:
                raise Reject(f"plan {name!r} is unknown (its 'label_plan' record must come "
                             f"first)", "plan")
            self._plans[name] = tuple(row)
        return self._plans[name]

    def _write_label_plan_item(self, rec):
        plan_id, dataset_id = self._plan(rec["plan"])
        if self.dataset_id(rec["dataset"], create=False) != dataset_id:
            raise Reject(f"plan {rec['plan']!r} is of another dataset than {rec['dataset']!r}",
                         "dataset")
        for name in ("predictor_value", "probability"):
            if not 0 <= rec[name] <= 1 or (name == "probability" and rec[name] == 0):
                raise Reject(f"expected a number in {'(0' if name == 'probability' else '[0'}"
                             f", 1], got {rec[name]!r}", name)
        values = {"pilot": rec.get("pilot", False),
                  **{k: rec[k] for k in _ITEM_FIELDS if k in rec}}
        generation_id = self.generation_id(rec)
        row = self.session.get(m.LabelPlanItem, (plan_id, generation_id))
        if row is None:
            if rec["plan"] not in self._new_plans:
                raise Reject(f"plan {rec['plan']!r} is stored without this generation; "
                             f"{_REDRAWN}", "plan")
            self.session.add(m.LabelPlanItem(plan_id=plan_id, generation_id=generation_id,
                                             **values))
            self.session.flush()
            return "created"
        differs = first_difference(row, values)
        if differs is not None:
            raise Reject(f"plan {rec['plan']!r} holds this generation with another {differs}; "
                         f"{_REDRAWN}", differs)
        return "unchanged"
