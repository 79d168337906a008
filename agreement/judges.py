"""A judge configuration against the humans: the one path `judges.report`, `metrics.align` and the
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
from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd
from sqlalchemy import select
from sqlmodel import Session

from agreement.statistics import Confusion, bootstrap_ci, confusion
from db import models as m
from db.engine import get_engine
from db.models import JUDGE_STATUSES
from db.targets import TARGET_LANGUAGE
from taxonomy import ACCURACY_LABELS

OK = "ok"
FAILURE_STATUSES = ("parse_error", "truncated", "refused")  # the study's parse failures
# run params that record what happened during a run rather than how it was configured
_NOTE_PARAMS = ("structured_fallback",)

VERDICT_COLUMNS = ["judge_run_id", "key", "judge", "strategy", "prompt_language",
                   "prompt_version", "settings", "generation_id", "status", "accuracy", "codes",
                   "position", "model", "language", "repeat_group"]


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
    `settings` its run's settings as 'k=v; ...', with the generation's model and language."""
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
        groups = {r.id: ((r.params or {}).get("repeat") or {}).get("group") for r in runs}
    records = [(run_id, *info[run_id], generation_id, status, accuracy, _code_ids(codes), position,
                model, language, groups[run_id])
               for run_id, generation_id, status, accuracy, codes, position, model, language
               in rows]
    return pd.DataFrame.from_records(records, columns=VERDICT_COLUMNS)


def _code_ids(codes) -> frozenset:
    """Judge codes are stored as [{"code": ..., "confidence": ...}] (or plain strings)."""
    out = set()
    for item in codes or ():
        code = item.get("code") if isinstance(item, dict) else item
        if code:
            out.add(str(code))
    return frozenset(out)


# ---------------------------------------------------------------- failures and agreement


def status_counts(statuses: Sequence[str]) -> dict:
    """Counts of each verdict status and the rates every report shows: `failure_rate` = share of
    verdicts not ok; `parse_failure_rate` and `empty_rate` = shares of the answered verdicts
    (all but api_error, where the endpoint gave no answer)."""
    counts = pd.Series(list(statuses), dtype=object).value_counts()
    out: dict = {s: int(counts.get(s, 0)) for s in JUDGE_STATUSES}
    total = int(len(statuses))
    answered = total - out["api_error"]
    out["verdicts"] = total
    out["failure_rate"] = 1.0 - out[OK] / total if total else math.nan
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


def usable_pairs(verdicts: pd.DataFrame, labels: Mapping[int, str]) -> pd.DataFrame:
    """The verdicts that count for agreement, one per generation, by generation id."""
    usable = verdicts[(verdicts.status == OK) & verdicts.accuracy.notna()
                      & verdicts.generation_id.isin(list(labels))]
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


# ---------------------------------------------------------------- robustness: K runs, prompt language


def _agrees(verdicts: pd.DataFrame, labels: Mapping[int, str]) -> dict[int, str]:
    """generation id -> the judge's accuracy label, for the usable verdicts of one run."""
    pairs = usable_pairs(verdicts, labels)
    return dict(zip(pairs.generation_id, pairs.accuracy))


@dataclass(frozen=True)
class Stability:
    """One configuration judged K times (seed, and maybe temperature or order, varied): over the
    items with a human label and an ok verdict in every run, U@K = share where at least one run
    disagrees with the human, I@K = share where all K disagree, flip rate = share whose label
    changes across runs; kappa per run (same label policy and kappa as `judge_agreement`)."""
    k: int
    n: int
    u_at_k: float
    i_at_k: float
    flip_rate: float
    kappas: tuple[float, ...]

    @property
    def kappa_spread(self) -> float:
        finite = [k for k in self.kappas if not math.isnan(k)]
        return max(finite) - min(finite) if finite else math.nan

    def row(self) -> dict:
        finite = [k for k in self.kappas if not math.isnan(k)]
        return {"k": self.k, "n": self.n, "u_at_k": self.u_at_k, "i_at_k": self.i_at_k,
                "flip_rate": self.flip_rate,
                "kappa_min": min(finite) if finite else math.nan,
                "kappa_max": max(finite) if finite else math.nan,
                "kappa_spread": self.kappa_spread}


def verdict_stability(runs: Sequence[pd.DataFrame], labels: Mapping[int, str]) -> Stability:
    """`runs`: the verdicts (generation_id, status, accuracy) of each of the K runs."""
    per_run = [_agrees(v.drop_duplicates("generation_id"), labels) for v in runs]
    kappas = tuple(judge_agreement(v, labels, bootstrap=0).kappa for v in runs)
    items = sorted(set.intersection(*(set(r) for r in per_run))) if per_run else []
    if not items:
        return Stability(len(runs), 0, math.nan, math.nan, math.nan, kappas)
    wrong = [[r[g] != labels[g] for r in per_run] for g in items]
    flips = [len({r[g] for r in per_run}) > 1 for g in items]
    n = len(items)
    return Stability(len(runs), n, sum(map(any, wrong)) / n, sum(map(all, wrong)) / n,
                     sum(flips) / n, kappas)


def code_stability(runs: Sequence[pd.DataFrame], human_codes: Mapping[int, frozenset],
                   codes: Sequence[str]) -> pd.DataFrame:
    """Per error code over the items with an ok verdict in every run and a human label: `flip_rate`
    = share where the code is found in some runs, not all; U@K / I@K = share where at least one /
    every run's presence of the code differs from the human's."""
    per_run = []
    for v in runs:
        ok = v[(v.status == OK) & v.generation_id.isin(list(human_codes))]
        per_run.append({g: frozenset(c) for g, c in zip(ok.generation_id, ok.codes)})
    items = sorted(set.intersection(*(set(r) for r in per_run))) if per_run else []
    rows = []
    for code in codes:
        found = [[code in r[g] for r in per_run] for g in items]
        wrong = [[f != (code in human_codes[g]) for f in fs] for g, fs in zip(items, found)]
        n = len(items)
        def rate(xs, n=n):
            return sum(xs) / n if n else math.nan
        rows.append({"code": code, "n": n, "found_in_all": sum(map(all, found)),
                     "found_in_some": sum(any(f) and not all(f) for f in found),
                     "flip_rate": rate([any(f) and not all(f) for f in found]),
                     "u_at_k": rate(list(map(any, wrong))), "i_at_k": rate(list(map(all, wrong)))})
    return pd.DataFrame(rows, columns=["code", "n", "found_in_all", "found_in_some", "flip_rate",
                                       "u_at_k", "i_at_k"])


def stability_by_group(verdicts: pd.DataFrame, labels: Mapping[int, str]) -> pd.DataFrame:
    """`verdict_stability` per repeat group of `load_verdicts` rows (runs made by `judges.run
    --repeats K`), named by its first run's configuration key."""
    rows = []
    grouped = verdicts[verdicts.repeat_group.notna()] if len(verdicts) else verdicts
    for group, rows_of_group in grouped.groupby("repeat_group", sort=True):
        runs = [r for _, r in rows_of_group.groupby("judge_run_id", sort=True)]
        rows.append({"repeat_group": group, "key": runs[0].key.iloc[0],
                     "runs": " ".join(str(int(r.judge_run_id.iloc[0])) for r in runs),
                     **verdict_stability(runs, labels).row()})
    return pd.DataFrame(rows, columns=["repeat_group", "key", "runs", "k", "n", "u_at_k", "i_at_k",
                                       "flip_rate", "kappa_min", "kappa_max", "kappa_spread"])


def mcnemar_p(b: int, c: int) -> float:
    """Two-sided McNemar test on the discordant pairs b (right only under one prompt) and c (only
    under the other): exact binomial (n = b + c, p = 1/2) up to 25 pairs, else chi-square with
    continuity correction on 1 degree of freedom."""
    n = b + c
    if n == 0:
        return 1.0
    if n <= 25:
        tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
        return min(1.0, 2 * tail)
    statistic = (abs(b - c) - 1) ** 2 / n
    return math.erfc(math.sqrt(statistic / 2))


@dataclass(frozen=True)
class LanguageConsistency:
    """The same items judged with an English prompt and with one in the comment's language, over
    the items with a human label and an ok verdict under both: CR_en / CR_x = share where the
    verdict agrees with the human under that prompt, CR_bi = under both, CDR = under exactly one
    (b: English only, c: native only), p = McNemar on b and c."""
    n: int
    cr_en: float
    cr_x: float
    cr_bi: float
    cdr: float
    en_only: int
    x_only: int
    p_mcnemar: float

    def row(self) -> dict:
        return {"n": self.n, "cr_en": self.cr_en, "cr_x": self.cr_x, "cr_bi": self.cr_bi,
                "cdr": self.cdr, "en_only": self.en_only, "x_only": self.x_only,
                "p_mcnemar": self.p_mcnemar}


def language_consistency(english: pd.DataFrame, native: pd.DataFrame,
                         labels: Mapping[int, str]) -> LanguageConsistency:
    en = _agrees(english.drop_duplicates("generation_id"), labels)
    x = _agrees(native.drop_duplicates("generation_id"), labels)
    items = sorted(set(en) & set(x))
    n = len(items)
    if not n:
        return LanguageConsistency(0, *(math.nan,) * 4, 0, 0, math.nan)
    right_en = [en[g] == labels[g] for g in items]
    right_x = [x[g] == labels[g] for g in items]
    b = sum(e and not y for e, y in zip(right_en, right_x))
    c = sum(y and not e for e, y in zip(right_en, right_x))
    both = sum(e and y for e, y in zip(right_en, right_x))
    return LanguageConsistency(n, sum(right_en) / n, sum(right_x) / n, both / n, (b + c) / n,
                               b, c, mcnemar_p(b, c))


__all__ = ["FAILURE_STATUSES", "JudgeAgreement", "LanguageConsistency", "OK", "Stability",
           "VERDICT_COLUMNS", "code_stability", "config_names", "judge_agreement",
           "language_consistency", "load_verdicts", "mcnemar_p", "settings_of",
           "stability_by_group", "status_counts", "usable_pairs", "verdict_stability"]
