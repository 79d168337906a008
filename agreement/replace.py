"""Could a judge replace the annotators? replace.csv and replace_annotators.csv: the alternative
annotator test (`agreement.alt_test`) of every judge run and jury against the annotators' own
labels (each annotator's finished labels, gold labels left aside), over all items and per
language.

replace.csv, per judge and slice: the items kept (2+ annotators and an ok verdict), the
annotators tested (30+ such items), the winning rate omega (the share of tested annotators the
judge beats after Benjamini-Yekutieli), the advantage probability rho, and whether it passed
(omega >= 0.5); where the data fall short, `method` says why and the numbers are empty.
replace_annotators.csv: each annotator's items, rho and p-value, and whether the judge beat them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from agreement.alt_test import DEFAULT_Q, MIN_HUMANS_PER_ITEM, MIN_ITEMS_PER_HUMAN, alt_test
from agreement.judges import usable_verdicts
from agreement.statistics import encode_labels
from taxonomy import ACCURACY_LABELS

REPLACE_COLUMNS = ["slice", "slice_value", "judge", "scoring", "epsilon", "n_items",
                   "n_annotators", "winning_rate", "advantage_probability", "passed", "method"]
ANNOTATOR_COLUMNS = ["slice", "slice_value", "judge", "annotator", "n_items", "tested",
                     "advantage_probability", "p_value", "judge_wins"]


def replace_tables(annotations: pd.DataFrame, verdicts: pd.DataFrame | None,
                   language_of: dict[int, str], scoring: str = "accuracy", epsilon: float = 0.2
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(replace.csv, replace_annotators.csv) for every judge key in `verdicts`; `annotations`:
    the finished labels (generation_id, annotator, accuracy) of the aligned datasets;
    `language_of`: generation id -> language (per language only where there are several: one
    would repeat "all")."""
    if verdicts is None or verdicts.empty or annotations.empty:
        return (pd.DataFrame(columns=REPLACE_COLUMNS), pd.DataFrame(columns=ANNOTATOR_COLUMNS))
    labels = annotations[annotations.generation_id.isin(list(language_of))]
    items = np.sort(labels.generation_id.unique())
    names = sorted(labels.annotator.unique())
    human = np.full((len(names), len(items)), -1)
    human[np.searchsorted(names, labels.annotator.to_numpy()),
          np.searchsorted(items, labels.generation_id.to_numpy())] = encode_labels(
        labels.accuracy.to_numpy(), ACCURACY_LABELS)
    language = np.array([language_of[g] for g in items], dtype=object)
    languages = sorted(set(language))
    slices = [("all", "all", np.ones(len(items), dtype=bool))] + [
        ("language", value, language == value) for value in languages if len(languages) > 1]
    usable = usable_verdicts(verdicts)
    rows, per_annotator = [], []
    for key, judged in usable.groupby("key", sort=True):
        judged = judged.drop_duplicates("generation_id")
        judge = np.full(len(items), -1)
        found = np.isin(judged.generation_id.to_numpy(), items)
        judge[np.searchsorted(items, judged.generation_id.to_numpy()[found])] = encode_labels(
            judged.accuracy.to_numpy()[found], ACCURACY_LABELS)
        for slice_name, value, mask in slices:
            result = alt_test(human[:, mask], judge[mask], names, scoring, epsilon)
            rows.append(_row(slice_name, value, str(key), scoring, epsilon, result))
            per_annotator.extend(
                {"slice": slice_name, "slice_value": value, "judge": str(key), "annotator": name,
                 "n_items": int(n), "tested": bool(tested), "advantage_probability": rho,
                 "p_value": p, "judge_wins": bool(won)}
                for name, n, tested, rho, p, won in zip(
                    names, result.items, result.tested, result.advantage, result.p_values,
                    result.rejected) if n)
    return (pd.DataFrame(rows, columns=REPLACE_COLUMNS),
            pd.DataFrame(per_annotator, columns=ANNOTATOR_COLUMNS))


def _row(slice_name: str, value: str, judge: str, scoring: str, epsilon: float, result) -> dict:
    tested = int(result.tested.sum())
    base = {"slice": slice_name, "slice_value": value, "judge": judge, "scoring": scoring,
            "epsilon": epsilon, "n_items": result.n_items, "n_annotators": tested}
    why = result.why_untested
    if why:
        return {**base, "winning_rate": np.nan, "advantage_probability": np.nan,
                "passed": None, "method": f"no test: {why}"}
    skipped = len(result.annotators) - tested
    return {**base, "winning_rate": result.winning_rate,
            "advantage_probability": result.advantage_probability, "passed": result.passed,
            "method": (f"alt-test (Calderon et al. 2025): leave one annotator out, {scoring} "
                       f"against the others, one-sided t-test per annotator at epsilon "
                       f"{epsilon}, Benjamini-Yekutieli at q {DEFAULT_Q}; items with "
                       f"{MIN_HUMANS_PER_ITEM}+ annotators and an ok verdict; annotators with "
                       f"{MIN_ITEMS_PER_HUMAN}+ of them"
                       + (f" ({skipped} with fewer left out)" if skipped else ""))}


__all__ = ["ANNOTATOR_COLUMNS", "REPLACE_COLUMNS", "replace_tables"]
