"""How much a judge's verdict depends on the run, the prompt language and code-mixing: the
statistics of the three robustness studies and the grouping of stored judge runs into their
tables. The one home `judges.report` and `align` both use, on the rows of
`agreement.judges.load_verdicts` and the same label policy and kappa as every other judge table:

- **stability** (`stability_tables`): runs with the same repeat group (`judges.run --repeats K`,
  params.repeat.group) are one configuration judged K times: U@K, I@K, flip rate, kappa spread,
  and the same per error code;
- **prompt language** (`language_table`): a run with an English prompt and its twin with the
  comment's language, alike in every other setting: CR_en, CR_x, CR_bi, CDR and McNemar's p;
- **code-mixing** (`code_mix_table`): runs with params.code_mix (`judges.run --code-mix`), per
  judge x base strategy x language x CMD: exact agreement and kappa.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd

from agreement.judges import OK, judge_agreement, usable_pairs

# the studies' tables by name, in the order the reports show them
STUDIES = ("stability", "stability_codes", "language_consistency", "code_mix")
_RUN_FIELDS = ["judge", "strategy", "language", "prompt_language"]
STABILITY_COLUMNS = [*_RUN_FIELDS, "repeat_group", "key", "runs", "k", "n", "u_at_k", "i_at_k",
                     "flip_rate", "kappa_min", "kappa_max", "kappa_spread"]
STABILITY_CODE_COLUMNS = [*_RUN_FIELDS, "repeat_group", "code", "n", "found_in_all",
                          "found_in_some", "flip_rate", "u_at_k", "i_at_k"]
LANGUAGE_COLUMNS = ["judge", "strategy", "language", "english_run", "native_run", "english_key",
                    "native_key", "n", "cr_en", "cr_x", "cr_bi", "cdr", "en_only", "x_only",
                    "p_mcnemar"]
CODE_MIX_COLUMNS = ["judge", "strategy", "language", "cmd", "seed", "run_id", "key",
                    "n_verdicts", "n", "exact_agreement", "kappa", "parse_failure_rate"]


# ---------------------------------------------------------------- the statistics


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


# ---------------------------------------------------------------- grouping the stored runs


def _runs(verdicts: pd.DataFrame) -> list[tuple[int, pd.DataFrame]]:
    """(run id, its verdict rows) per run, by run id."""
    if verdicts.empty:
        return []
    return [(int(run_id), rows) for run_id, rows in verdicts.groupby("judge_run_id", sort=True)]


def _fields(rows: pd.DataFrame, names: Sequence[str]) -> dict:
    first = rows.iloc[0]
    return {name: first[name] for name in names}


def stability_tables(verdicts: pd.DataFrame, labels: Mapping[int, str],
                     human_codes: Mapping[int, frozenset] | None = None,
                     codes: Sequence[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per repeat group: K, n, U@K, I@K, flip rate, kappa min/max/spread; per repeat group and
    error code in `codes`: n, found in all / some runs, flip rate, U@K, I@K against
    `human_codes`, empty without them)."""
    groups: dict[str, list[tuple[int, pd.DataFrame]]] = {}
    for run_id, rows in _runs(verdicts):
        group = rows.repeat_group.iloc[0]
        if isinstance(group, str) and group:
            groups.setdefault(group, []).append((run_id, rows))
    rows_out, code_frames = [], []
    for group, members in sorted(groups.items()):
        runs = [rows for _, rows in members]
        info = {**_fields(runs[0], _RUN_FIELDS), "repeat_group": group}
        rows_out.append({**info, "key": runs[0].key.iloc[0],
                         "runs": " ".join(str(run_id) for run_id, _ in members),
                         **verdict_stability(runs, labels).row()})
        if human_codes is not None and codes:
            table = code_stability(runs, human_codes, codes)
            for column, value in reversed(list(info.items())):
                table.insert(0, column, value)
            code_frames.append(table)
    per_code = (pd.concat(code_frames, ignore_index=True) if code_frames
                else pd.DataFrame(columns=STABILITY_CODE_COLUMNS))
    return pd.DataFrame(rows_out, columns=STABILITY_COLUMNS), per_code


def language_table(verdicts: pd.DataFrame, labels: Mapping[int, str]) -> pd.DataFrame:
    """Per run with an English prompt and its twin with the comment's language (the same judge,
    strategy, language and settings otherwise): CR_en, CR_x, CR_bi, CDR and McNemar's p."""
    english, native = {}, {}
    for run_id, rows in _runs(verdicts):
        info = _fields(rows, ["judge", "strategy", "language", "prompt_language", "settings"])
        if info["language"] == "en":
            continue
        twin = (info["judge"], info["strategy"], info["language"], info["settings"])
        if info["prompt_language"] == "en":
            english[twin] = (run_id, rows)
        elif info["prompt_language"] == info["language"]:
            native[twin] = (run_id, rows)
    out = []
    for twin in sorted(set(english) & set(native), key=str):
        (en_id, en_rows), (x_id, x_rows) = english[twin], native[twin]
        out.append({"judge": twin[0], "strategy": twin[1], "language": twin[2],
                    "english_run": en_id, "native_run": x_id, "english_key": en_rows.key.iloc[0],
                    "native_key": x_rows.key.iloc[0],
                    **language_consistency(en_rows, x_rows, labels).row()})
    return pd.DataFrame(out, columns=LANGUAGE_COLUMNS)


def code_mix_table(verdicts: pd.DataFrame, labels: Mapping[int, str]) -> pd.DataFrame:
    """Per code-mixed run: its CMD, n, the share of exact agreement with the humans, kappa and
    the parse-failure rate. A plain run of the same base strategy is not mixed in: CMD 0 is its
    own run (the native wording, chosen segment by segment)."""
    out = []
    for run_id, rows in _runs(verdicts):
        cmd, seed = rows.code_mix_cmd.iloc[0], rows.code_mix_seed.iloc[0]
        if pd.isna(cmd):
            continue
        result = judge_agreement(rows, labels, bootstrap=0)
        exact = float(result.confusion.counts.trace() / result.n) if result.n else math.nan
        out.append({"judge": rows.judge.iloc[0], "strategy": rows.code_mix_strategy.iloc[0],
                    "language": rows.language.iloc[0], "cmd": float(cmd),
                    "seed": None if pd.isna(seed) else int(seed), "run_id": run_id,
                    "key": rows.key.iloc[0], "n_verdicts": result.n_verdicts, "n": result.n,
                    "exact_agreement": exact, "kappa": result.kappa,
                    "parse_failure_rate": result.statuses["parse_failure_rate"]})
    frame = pd.DataFrame(out, columns=CODE_MIX_COLUMNS)
    return frame.sort_values(["judge", "strategy", "language", "cmd", "run_id"],
                             ignore_index=True)


def study_tables(verdicts: pd.DataFrame, labels: Mapping[int, str],
                 human_codes: Mapping[int, frozenset] | None = None,
                 codes: Sequence[str] = ()) -> dict[str, pd.DataFrame]:
    """The four tables of STUDIES (each empty where no such runs exist) for `load_verdicts` rows,
    human accuracy labels {generation id: label} and, for the per-code stability, the human
    error codes {generation id: codes} and the codes to report."""
    stability, per_code = stability_tables(verdicts, labels, human_codes, codes)
    return {"stability": stability, "stability_codes": per_code,
            "language_consistency": language_table(verdicts, labels),
            "code_mix": code_mix_table(verdicts, labels)}


__all__ = ["CODE_MIX_COLUMNS", "LANGUAGE_COLUMNS", "LanguageConsistency", "STABILITY_CODE_COLUMNS",
           "STABILITY_COLUMNS", "STUDIES", "Stability", "code_mix_table", "code_stability",
           "language_consistency", "language_table", "mcnemar_p", "stability_tables",
           "study_tables", "verdict_stability"]
