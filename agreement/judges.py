"""A judge configuration against the humans: the one path `judges.report`, `align` and the
app's analysis page all take, so one judge run shows one kappa and one n everywhere.

- A **configuration** is one judge run (`JudgeRun`): runs that differ in anything (temperature,
  seed, max tokens, prediction order, endpoint, ...) are never pooled. Its name is
  `model[strategy,prompt language,prompt version]`, and where several runs share that name the
  settings that differ between them are appended, e.g. `m[rubric,zh,v1,temperature=0.7]`
  (`config_names`).
- **ok** is the verdict status stored per generation (`JudgeVerdict.status`, set by
  `judges.parse`): a response that judges only some of its predictions gives "ok" verdicts for
  those and a failure status for the others. Every failure count is over verdicts, one per
  generation (`status_counts`); the response status is not used for rates.
- **Agreement** (`judge_agreement`): over the generations with an ok verdict, an accuracy label
  and a human label (from `agreement.labels`), counted once each: n, quadratically weighted
  kappa, its bootstrap interval (resampling items; seed 0 unless told) and the confusion matrix.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd
from sqlalchemy import select
from sqlmodel import Session

from agreement.statistics import Confusion, bootstrap_ci, confusion
from db import models as m
from db.engine import get_engine
from db.models import JUDGE_STATUSES, UNANSWERED_STATUSES
from db.targets import TARGET_LANGUAGE
from taxonomy import ACCURACY_LABELS

OK = "ok"
FAILURE_STATUSES = ("parse_error", "truncated", "refused")  # the study's parse failures
# run params that record what happened during a run rather than how it was configured
_NOTE_PARAMS = ("structured_fallback",)

# model and language: the generation's; repeat_group and code_mix_*: what `judges.run --repeats`
# and `--code-mix` recorded in the run's params (None where the run is not part of such a study)
VERDICT_COLUMNS = ["judge_run_id", "key", "judge", "strategy", "prompt_language",
                   "prompt_version", "settings", "generation_id", "status", "accuracy", "codes",
                   "position", "model", "language", "repeat_group", "code_mix_cmd",
                   "code_mix_seed", "code_mix_strategy"]


# ---------------------------------------------------------------- configurations


def _flat(params: Mapping, prefix: str = "") -> dict[str, str]:
    """{'sampling': {'temperature': 0}} -> {'sampling.temperature': '0'}, run notes left out."""
    out: dict[str, str] = {}
    for key, value in (params or {}).items():
        if key in _NOTE_PARAMS:
            continue
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = str(value)
    return out


def settings_of(run: m.JudgeRun) -> dict[str, str]:
    """Every setting of a run as flat strings (backend plus its stored params), each named by the
    last part of its key where that is unique ('temperature', not 'sampling.temperature')."""
    flat = {"backend": str(run.backend), **_flat(run.params or {})}
    last = [k.rsplit(".", 1)[-1] for k in flat]
    return {(short if last.count(short) == 1 else key): value
            for (key, value), short in zip(flat.items(), last)}


def config_names(runs: Sequence[m.JudgeRun]) -> dict[int, str]:
    """run id -> a readable name, unique per run: the base name, plus the settings that differ
    from the other runs with the same base name (their run id as a last resort).

    >>> a = m.JudgeRun(id=1, model="m", strategy="rubric", prompt_language="zh",
    ...                prompt_version="v1", params={"sampling": {"temperature": 0, "seed": 1}})
    >>> b = m.JudgeRun(id=2, model="m", strategy="rubric", prompt_language="zh",
    ...                prompt_version="v1", params={"sampling": {"temperature": 0.7, "seed": 1}})
    >>> config_names([a, b])
    {1: 'm[rubric,zh,v1,temperature=0]', 2: 'm[rubric,zh,v1,temperature=0.7]'}
    """
    groups: dict[str, list] = {}
    for run in runs:
        base = f"{run.model}[{run.strategy},{run.prompt_language},{run.prompt_version}]"
        groups.setdefault(base, []).append(run)
    names: dict[int, str] = {}
    for base, members in groups.items():
        if len(members) == 1:
            names[members[0].id] = base
            continue
        settings = {run.id: settings_of(run) for run in members}
        keys = sorted({k for s in settings.values() for k in s})
        differing = [k for k in keys if len({s.get(k) for s in settings.values()}) > 1]
        for run in members:
            parts = [f"{k}={settings[run.id].get(k, '-')}" for k in differing] or [f"run{run.id}"]
            names[run.id] = f"{base[:-1]},{','.join(parts)}]"
        if len({names[r.id] for r in members}) < len(members):
            for run in members:
                names[run.id] = f"{names[run.id][:-1]},run{run.id}]"
    return names


def load_verdicts(url: str | None = None) -> pd.DataFrame:
    """One row per stored verdict (VERDICT_COLUMNS), `key` naming its configuration (one run),
    `settings` its run's settings as 'k=v; ...', with the generation's model and language and
    the run's part in a robustness study (`agreement.robustness`)."""
    with Session(get_engine(url)) as session:
        runs = list(session.execute(select(m.JudgeRun)).scalars())
        rows = session.execute(
            select(m.JudgeVerdict.run_id, m.JudgeVerdict.generation_id, m.JudgeVerdict.status,
                   m.JudgeVerdict.accuracy, m.JudgeVerdict.codes, m.JudgeVerdict.position,
                   m.Generation.model, TARGET_LANGUAGE)
            .join(m.Generation, m.Generation.id == m.JudgeVerdict.generation_id)
            .join(m.Target, m.Target.id == m.Generation.target_id)
            .outerjoin(m.SourceFile, m.SourceFile.id == m.Target.source_file_id)
            .order_by(m.JudgeVerdict.run_id, m.JudgeVerdict.generation_id)).all()
        names = config_names(runs)
        info = {r.id: (names[r.id], r.model, r.strategy, r.prompt_language, r.prompt_version,
                       "; ".join(f"{k}={v}" for k, v in sorted(settings_of(r).items())))
                for r in runs}
        studies = {r.id: _study_fields(r.params or {}) for r in runs}
    records = [(run_id, *info[run_id], generation_id, status, accuracy, _code_ids(codes), position,
                model, language, *studies[run_id])
               for run_id, generation_id, status, accuracy, codes, position, model, language
               in rows]
    return pd.DataFrame.from_records(records, columns=VERDICT_COLUMNS)


def _study_fields(params: Mapping) -> tuple:
    """(repeat group, CMD, code-mixing seed, base strategy) of a run's params, None where unset."""
    mix = params.get("code_mix") or {}
    cmd = mix.get("cmd")
    return ((params.get("repeat") or {}).get("group"), None if cmd is None else float(cmd),
            mix.get("seed"), mix.get("base"))


def _code_ids(codes) -> frozenset:
    """Judge codes are stored as [{"code": ..., "confidence": ...}] (or plain strings)."""
    out = set()
    for item in codes or ():
        code = item.get("code") if isinstance(item, dict) else item
        if code:
            out.add(str(code))
    return frozenset(out)


# ---------------------------------------------------------------- failures and agreement


def failure_reason(error: str | None) -> str:
    """A stored error as reports group it: its numbers (token counts, positions, ids) as N, so
    that "prompt of 19805 tokens ..." and "prompt of 19973 tokens ..." are one reason."""
    return re.sub(r"\d+", "N", " ".join((error or "no reason stored").split()))


REASON_COLUMNS = ["run_id", "status", "verdicts", "reason", "example"]


def _reason_for(error: str | None, position: int | None) -> str | None:
    """A verdict's part of its response's error: "P2: ..." where the error lists predictions
    (the prediction at prompt position 2 is P2), else the whole error."""
    if error and position:
        own = [part for part in re.split(r"; (?=P\d+: )", error)
               if part.startswith(f"P{position}: ")]
        if own:
            return "; ".join(own)
    return error


def failure_reasons(session: Session) -> pd.DataFrame:
    """Per run and failure status of its verdicts: why, most frequent first. A verdict's reason
    is its response's error (its own part of it, where the error names each prediction),
    grouped with their numbers as N (`agreement.judges.failure_reason`), with one example."""
    errors: dict[tuple[int, int], list[str]] = {}
    for run_id, target_id, error in session.execute(
            select(m.JudgeResponse.run_id, m.JudgeResponse.target_id, m.JudgeResponse.error)
            .where(m.JudgeResponse.error.is_not(None)).order_by(m.JudgeResponse.id)):
        errors.setdefault((run_id, target_id), []).append(error)
    juries = set(session.execute(select(m.JudgeRun.id).where(m.JudgeRun.backend == "jury"))
                 .scalars())
    rows: dict[tuple, dict] = {}
    for run_id, status, position, target_id in session.execute(
            select(m.JudgeVerdict.run_id, m.JudgeVerdict.status, m.JudgeVerdict.position,
                   m.Generation.target_id)
            .join(m.Generation, m.Generation.id == m.JudgeVerdict.generation_id)
            .where(m.JudgeVerdict.status != OK)):
        found = errors.get((run_id, target_id))
        example = _reason_for(found[0], position) if found else (
            "a jury's verdict: see its members' reasons" if run_id in juries else
            "no reason stored")
        key = (run_id, status, failure_reason(example))
        row = rows.setdefault(key, {"run_id": run_id, "status": status, "verdicts": 0,
                                    "reason": key[2], "example": example})
        row["verdicts"] += 1
    frame = pd.DataFrame(list(rows.values()), columns=REASON_COLUMNS)
    return frame.sort_values(["run_id", "status", "verdicts", "reason"],
                             ascending=[True, True, False, True], ignore_index=True)


def status_counts(statuses: Sequence[str]) -> dict:
    """Counts of each verdict status and the rates every report shows: `failure_rate` = share of
    verdicts not ok; `parse_failure_rate` and `empty_rate` = shares of the answered verdicts
    (all but api_error, batch_error and expired, where no answer came)."""
    counts = pd.Series(list(statuses), dtype=object).value_counts()
    out: dict = {s: int(counts.get(s, 0)) for s in JUDGE_STATUSES}
    total = int(len(statuses))
    answered = total - sum(out[s] for s in UNANSWERED_STATUSES)
    out["verdicts"] = total
    out["failure_rate"] = (total - out[OK]) / total if total else math.nan  # (1 - ok/total:
    # float noise, 0.19999999999999996)
    out["parse_failure_rate"] = (sum(out[s] for s in FAILURE_STATUSES) / answered
                                 if answered else math.nan)
    out["empty_rate"] = out["empty"] / answered if answered else math.nan
    return out


@dataclass(frozen=True)
class JudgeAgreement:
    n_verdicts: int  # generations the configuration has a verdict for
    n: int  # of those: ok, with an accuracy label and a human label (each generation once)
    kappa: float  # quadratically weighted, labels in their ordinal order
    kappa_low: float  # bootstrap interval (nan without resamples)
    kappa_high: float
    confusion: Confusion | None  # rows human, columns judge; None when n == 0
    statuses: dict  # `status_counts` of the verdicts

    def row(self) -> dict:
        return {"n_verdicts": self.n_verdicts, "n": self.n, "kappa": self.kappa,
                "kappa_low": self.kappa_low, "kappa_high": self.kappa_high,
                **{k: v for k, v in self.statuses.items() if k != "verdicts"}}


def usable_verdicts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The verdicts that say something: ok, with an accuracy label."""
    return verdicts[(verdicts.status == OK) & verdicts.accuracy.notna()]


def usable_pairs(verdicts: pd.DataFrame, labels: Mapping[int, str]) -> pd.DataFrame:
    """The verdicts that count for agreement, one per generation, by generation id."""
    usable = usable_verdicts(verdicts)
    usable = usable[usable.generation_id.isin(list(labels))]
    return usable.sort_values("generation_id").drop_duplicates("generation_id")


def judge_agreement(verdicts: pd.DataFrame, labels: Mapping[int, str], bootstrap: int = 1000,
                    seed: int = 0, label_order: Sequence[str] = ACCURACY_LABELS) -> JudgeAgreement:
    """Agreement of one configuration's verdicts (columns generation_id, status, accuracy) with
    the human labels {generation id: accuracy label}."""
    one_each = verdicts.drop_duplicates("generation_id")
    pairs = usable_pairs(one_each, labels)
    statuses = status_counts(list(one_each.status))
    if pairs.empty:
        return JudgeAgreement(len(one_each), 0, math.nan, math.nan, math.nan, None, statuses)
    human = [labels[g] for g in pairs.generation_id]
    judge = list(pairs.accuracy)
    order = tuple(label_order)
    kappa, low, high = bootstrap_ci(human, judge, n_resamples=max(bootstrap, 1), seed=seed,
                                    labels=order)
    if not bootstrap:
        low = high = math.nan
    return JudgeAgreement(len(one_each), len(pairs), kappa, low, high,
                          confusion(human, judge, order), statuses)


__all__ = ["FAILURE_STATUSES", "JudgeAgreement", "OK", "VERDICT_COLUMNS", "config_names",
           "judge_agreement", "load_verdicts", "settings_of", "status_counts", "usable_pairs",
           "usable_verdicts"]
