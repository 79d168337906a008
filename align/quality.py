"""Which model writes the best comments in each language, and how sure: quality.csv,
quality_tests.csv and code_shares.csv (the study's Tables 2 and 1 with their uncertainty).

The statistics are `agreement.quality`'s; this module chooses the slices and the pairs:

- quality.csv: per slice (all, language, model, language x model: Table 2's cells) the counts
  of each label, each share with its Wilson 95% interval, and the mean score (correct 1,
  partial 0.5, incorrect 0) with Student's t 95% interval;
- quality_tests.csv: within all items and within each language, every pair of generating
  models on the targets both have a label for (paired: the per-target score differences,
  sign-flip permutation test); within each model, every pair of languages (unpaired
  permutation test); Holm within a slice; `b` is the pair's better one on those items;
- code_shares.csv: per slice (all, language) the share of labelled generations that carry each
  taxonomy code, parents counting their sub-codes once per item, with Wilson intervals.

Input: `labelled`, one row per labelled generation with generation_id, target_id, model,
language, label and codes (`quality_frame`).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from agreement.quality import (
    compact_letters,
    label_scores,
    permutation_test,
    sign_flip_test,
    wilson_interval,
)
from agreement.quality_tables import (
    CONFIDENCE,
    QUALITY_COLUMNS,
    QUALITY_SLICES,
    SCORE_METHOD,
    cell_name,
    quality_slices,
    quality_table,
    slices_for,
)
from agreement.significance import holm

QUALITY_TEST_COLUMNS = ["slice", "slice_value", "comparison", "a", "b", "n", "mean_a", "mean_b",
                        "delta", "ci_low", "ci_high", "p_value", "p_holm", "method", "resamples"]
CODE_SHARE_COLUMNS = ["slice", "slice_value", "code", "level", "name", "n", "n_with_code",
                      "share", "share_low", "share_high", "label_policy", "method"]


def pairing_slices(slices: Iterable[str]) -> list[str]:
    """Of `slices`, those whose models are compared pair by pair: all items and each language
    (quality_tests.csv, estimate_tests.csv) and the code shares."""
    return [s for s in ("all", "language") if s in tuple(slices)]


def quality_frame(labels: pd.DataFrame, generations: pd.DataFrame) -> pd.DataFrame:
    """The labelled generations with what the tables slice and pair by: generation_id,
    target_id, model, language, label, score and codes (`generations`: one row per generation
    with target_id, model and language, models already named per dataset where shared)."""
    labelled = labels[labels.label.notna()][["generation_id", "label", "codes"]]
    frame = labelled.merge(generations[["generation_id", "target_id", "model", "language"]],
                           on="generation_id", how="inner")
    frame = frame.dropna(subset=["model", "language"])
    return frame.assign(score=label_scores(frame.label.to_numpy()) if len(frame) else 0.0)


def quality_tests(frame: pd.DataFrame, resamples: int, seed: int = 0,
                  slices: Iterable[str] = QUALITY_SLICES) -> pd.DataFrame:
    """quality_tests.csv: see the module; `resamples` permutations and bootstrap resamples."""
    rows: list[dict] = []
    slices = tuple(slices)
    for slice_name, value, part in quality_slices(frame, pairing_slices(slices)):
        by_target = part.pivot_table(index="target_id", columns="model", values="score",
                                     aggfunc="first")
        pairs = [_paired(slice_name, value, by_target, a, b, resamples, seed)
                 for i, a in enumerate(by_target.columns) for b in by_target.columns[i + 1:]]
        rows.extend(_with_holm(pairs))
    for model, part in frame.groupby("model", sort=True) if "language" in slices else ():
        groups = {str(language): rows.score.to_numpy(float)
                  for language, rows in part.groupby("language", sort=True)}
        names = sorted(groups)
        pairs = [_unpaired(str(model), groups, a, b, resamples, seed)
                 for i, a in enumerate(names) for b in names[i + 1:]]
        rows.extend(_with_holm(pairs))
    return pd.DataFrame(rows, columns=QUALITY_TEST_COLUMNS)


def _ordered(a: str, b: str, mean_a: float, mean_b: float) -> bool:
    """Whether (a, b) is already worse first: b has the higher mean (names break a tie)."""
    return mean_b > mean_a or (mean_b == mean_a and a < b)


def _test_method(kind: str, result, resamples: int) -> str:
    permutations = ("exact: every permutation" if result.exact else
                    f"{result.resamples:,} random permutations, p = (k + 1) / (R + 1)")
    return (f"{kind} permutation test, two-sided ({permutations}); interval: percentile "
            f"bootstrap of the difference in mean score, {resamples:,} resamples; "
            f"{SCORE_METHOD}")


def _paired(slice_name: str, value: str, by_target: pd.DataFrame, a: str, b: str,
            resamples: int, seed: int) -> dict:
    both = by_target[[a, b]].dropna()
    mean_a, mean_b = both[a].mean(), both[b].mean()
    if not _ordered(a, b, mean_a, mean_b):
        a, b, mean_a, mean_b = b, a, mean_b, mean_a
    result = sign_flip_test((both[b] - both[a]).to_numpy(float), resamples, seed, CONFIDENCE)
    method = _test_method("paired (per-target differences) sign-flip", result, resamples)
    if len(both) < 2:
        method = f"no test: {len(both)} target(s) labelled for both models"
    return {"slice": slice_name, "slice_value": value, "comparison": "model", "a": str(a),
            "b": str(b), "n": len(both), "mean_a": mean_a, "mean_b": mean_b,
            "delta": result.delta, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "p_value": result.p_value, "method": method, "resamples": result.resamples}


def _unpaired(model: str, groups: dict[str, np.ndarray], a: str, b: str, resamples: int,
              seed: int) -> dict:
    mean_a, mean_b = groups[a].mean(), groups[b].mean()
    if not _ordered(a, b, mean_a, mean_b):
        a, b, mean_a, mean_b = b, a, mean_b, mean_a
    result = permutation_test(groups[a], groups[b], resamples, seed, CONFIDENCE)
    n = len(groups[a]) + len(groups[b])
    method = (_test_method("unpaired", result, resamples) if n >= 3 else
              f"no test: {n} labelled generation(s) in the two languages")
    return {"slice": "model", "slice_value": model, "comparison": "language", "a": a, "b": b,
            "n": n, "mean_a": mean_a, "mean_b": mean_b, "delta": result.delta,
            "ci_low": result.ci_low, "ci_high": result.ci_high, "p_value": result.p_value,
            "method": method, "resamples": result.resamples}


def _with_holm(pairs: list[dict]) -> list[dict]:
    adjusted = holm([p["p_value"] for p in pairs]) if pairs else []
    return [{**p, "p_holm": float(h)} for p, h in zip(pairs, adjusted)]


def ranked_models(quality: pd.DataFrame, tests: pd.DataFrame, alpha: float = 0.05
                  ) -> pd.DataFrame:
    """Table 2 answered: per group ("all", then each language) the models best first by mean
    score, with n, the interval and compact letters (models sharing a letter are not told apart:
    Holm-adjusted p >= alpha in quality_tests.csv). Columns: group, model, n, mean_score,
    mean_score_low, mean_score_high, letters."""
    columns = ["group", "model", "n", "mean_score", "mean_score_low", "mean_score_high",
               "letters"]
    if quality.empty:
        return pd.DataFrame(columns=columns)
    cells = quality[quality.slice == "language x model"]
    split = cells.slice_value.str.split(" x ", n=1)
    cells = cells.assign(group=split.str[0], model=split.str[1])
    overall = quality[quality.slice == "model"].assign(group="all", model=lambda f: f.slice_value)
    out = []
    for group, rows in pd.concat([overall, cells]).groupby("group", sort=False):
        rows = rows.sort_values(["mean_score", "model"], ascending=[False, True])
        models = list(rows.model)
        where = tests[(tests.comparison == "model")
                      & (tests.slice_value == ("all" if group == "all" else group))]
        significant = np.zeros((len(models), len(models)), dtype=bool)
        position = {m: i for i, m in enumerate(models)}
        for r in where.itertuples():
            if r.a in position and r.b in position and r.p_holm < alpha:
                significant[position[r.a], position[r.b]] = True
                significant[position[r.b], position[r.a]] = True
        letters = compact_letters(significant) if models else []
        out.extend({"group": group, "model": m, "n": int(r.n), "mean_score": r.mean_score,
                    "mean_score_low": r.mean_score_low, "mean_score_high": r.mean_score_high,
                    "letters": letter}
                   for m, r, letter in zip(models, rows.itertuples(), letters))
    return pd.DataFrame(out, columns=columns)


def code_shares(frame: pd.DataFrame, policy: str, slices: Iterable[str] = QUALITY_SLICES
                ) -> pd.DataFrame:
    """code_shares.csv: see the module (every code of the taxonomy, and older codes found)."""
    from taxonomy import TaxonomyError, default_taxonomy

    try:
        taxonomy = default_taxonomy()
    except TaxonomyError:
        return pd.DataFrame(columns=CODE_SHARE_COLUMNS)
    counted = [taxonomy.counted_codes(codes) for codes in frame.codes] if len(frame) else []
    frame = frame.assign(counted=counted)
    rows = []
    for slice_name, value, part in quality_slices(frame, pairing_slices(slices)):
        hits: dict[str, int] = {}
        for codes in part.counted:
            for code in codes:
                hits[code] = hits.get(code, 0) + 1
        known = list(taxonomy.codes.values())
        for code in known + sorted(set(hits) - set(taxonomy.codes)):
            is_known = not isinstance(code, str)
            rows.append({"slice": slice_name, "slice_value": value,
                         "code": code.id if is_known else code,
                         "level": code.level if is_known else "unknown",
                         "name": code.text("name", "en") if is_known else "(not in this taxonomy)",
                         "n": len(part), "n_with_code": hits.get(code.id if is_known else code, 0)})
    table = pd.DataFrame(rows, columns=CODE_SHARE_COLUMNS[:7])
    table["share"] = table.n_with_code / table.n.where(table.n > 0)
    table["share_low"], table["share_high"] = wilson_interval(table.n_with_code, table.n,
                                                              CONFIDENCE)
    table["label_policy"] = policy
    table["method"] = ("items carrying the code (parents count their sub-codes once per item) "
                       "over the labelled items; Wilson 95% interval")
    return table[CODE_SHARE_COLUMNS]


__all__ = ["CODE_SHARE_COLUMNS", "QUALITY_COLUMNS", "QUALITY_SLICES", "QUALITY_TEST_COLUMNS",
           "cell_name", "code_shares", "quality_frame", "quality_slices", "quality_table",
           "pairing_slices", "quality_tests", "ranked_models", "slices_for"]
