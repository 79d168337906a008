"""The comparison framework over tidy frames: pure functions from DataFrames to DataFrames.

`align_metrics` fits the KDE classifier per metric configuration and slice and measures its
agreement with the humans; `noise_table`, `context_effect`, `group_kappa`, `align_judges`,
`judge_code_table` and `annotator_agreement` are the other views of sections 7.2 and 8.2. The CLI,
the HTML report and the Streamlit analysis page all call these same functions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from agreement.judges import judge_agreement
from agreement.statistics import (
    code_precision_recall,
    encode_labels,
    krippendorff_alpha,
    pairwise_kappa,
)
from align.evaluation import Evaluation, evaluate, noise_separation
from align.kde import (
    DEFAULT_GRID_SIZE,
    fit_classifier,
)
from align.thresholds import Thresholds
from taxonomy import ACCURACY_LABELS

SLICES = ("all", "language", "model")
_SLICE_COLUMN = {"language": "language", "model": "model"}
# below this many labelled items a slice gets no kappa, interval or rank ("too few"): a KDE fit
# to a handful of items reproduces them (kappa 1.00, interval 1.00-1.00) and means nothing
MIN_SLICE_ITEMS = 20


def is_too_few(row) -> bool:
    """Whether a kappa.csv or judges.csv row (a namedtuple or Series) is a slice with too few
    labelled items to measure (frames without the column: never)."""
    value = getattr(row, "too_few", False)
    return bool(value) if isinstance(value, (bool, np.bool_)) else False


def distinct_slices(slices: Sequence[str], *frames: pd.DataFrame | None
                    ) -> tuple[list[str], list[str]]:
    """The slices worth computing, and the ones left out because they repeat 'all': with 'all'
    asked for, a language or model slice with one value in every frame (single-language data)
    holds the same items as 'all'. Returns (kept, left out as 'language (de)')."""
    if "all" not in slices:
        return list(slices), []
    kept, repeats = [], []
    for name in slices:
        if name != "all":
            column = _SLICE_COLUMN.get(name, name)
            values = sorted({str(v) for f in frames if f is not None and column in f
                             for v in f[column].dropna().unique()})
            if len(values) < 2:
                repeats.append(f"{name} ({', '.join(values) or 'none'})")
                continue
        kept.append(name)
    return kept, repeats


def slice_frames(frame: pd.DataFrame, slices: Sequence[str]) -> Iterable[tuple[str, str, pd.DataFrame]]:
    """(slice, value, rows) for each requested slice: 'all' once, 'language'/'model' per value."""
    for name in slices:
        if name not in SLICES:
            raise ValueError(f"unknown slice {name!r}; use one of {', '.join(SLICES)}")
        if name == "all":
            yield "all", "all", frame
            continue
        column = _SLICE_COLUMN[name]
        for value, rows in frame.groupby(column, sort=True, dropna=True):
            yield name, str(value), rows


def _config_fields(rows: pd.DataFrame) -> dict:
    first = rows.iloc[0]
    layer = first.layer
    return {"metric": first.metric, "scorer": first.scorer,
            "layer": None if layer is None or pd.isna(layer) else int(layer),
            "context": first.context, "key_none": getattr(first, "key_none", None)}


@dataclass
class AlignResult:
    """Every number of one alignment run, as frames, plus the fits for the figures."""
    kappa: pd.DataFrame
    confusion: pd.DataFrame
    fits: dict = field(default_factory=dict)  # (key, slice, value) -> KDEFit
    thresholds: dict = field(default_factory=dict)  # "key@slice=value" -> Thresholds
    predictions: pd.DataFrame | None = None

    @property
    def warnings(self) -> list[str]:
        rows = self.kappa[self.kappa.warning.notna()]
        return [f"{r.key} ({r.slice}={r.slice_value}): {r.warning}" for r in rows.itertuples()]


def thresholds_key(key: str, slice_name: str, value: str) -> str:
    return f"{key}@{slice_name}={value}"


def _confusion_rows(base: dict, evaluation: Evaluation) -> list[dict]:
    c = evaluation.confusion
    recall, precision = c.recall, c.precision
    rows = []
    for i, true in enumerate(c.labels):
        for j, pred in enumerate(c.labels):
            rows.append({**base, "human": true, "predicted": pred, "count": int(c.counts[i, j]),
                         "recall_norm": float(recall[i, j]),
                         "precision_norm": float(precision[i, j])})
    return rows


def _slice_index(frame: pd.DataFrame, slices: Sequence[str]) -> dict[str, tuple[np.ndarray, list]]:
    """Per slice name: each row's value code (-1 = none) and the sorted value names."""
    out = {}
    for name in slices:
        if name not in SLICES:
            raise ValueError(f"unknown slice {name!r}; use one of {', '.join(SLICES)}")
        if name == "all":
            out[name] = (np.zeros(len(frame), dtype=np.int64), ["all"])
            continue
        codes, uniques = pd.factorize(frame[_SLICE_COLUMN[name]], sort=True)
        out[name] = (np.asarray(codes, dtype=np.int64), [str(u) for u in uniques])
    return out


def align_metrics(scores: pd.DataFrame, labels: pd.DataFrame, slices: Sequence[str] = ("all",),
                  weighting: str = "equal", bandwidth: str | float = "scott",
                  bootstrap: int = 0, seed: int = 0, grid_size: int = DEFAULT_GRID_SIZE,
                  fitted: Mapping[str, Thresholds] | None = None,
                  label_order: Sequence[str] = ACCURACY_LABELS, keep_fits: bool = True,
                  monotone: bool = False, min_items: int = MIN_SLICE_ITEMS) -> AlignResult:
    """Fit (or, with `fitted`, apply) KDE thresholds per configuration and slice; compare with
    the human labels.

    `scores`: `data.load_scores` rows (only real predictions, noise "none", are used);
    `labels`: generation_id -> label (`data.load_human_labels`). With `fitted` (thresholds keyed
    like `thresholds_key`, e.g. from `load_thresholds`), nothing is fitted: each configuration
    and slice is classified with its saved thresholds, or the configuration's "all" thresholds
    when the slice has none (a configuration without any is reported in `warning`).
    `predictions` holds every real generation's predicted label, labelled or not.

    Each row says whether its regions are in label order for the metric's direction
    (`monotone`; empty where the run did not record a direction); with `monotone` True, fits
    whose regions are out of order are replaced by ordered thresholds (`kde.ordered_thresholds`;
    the direction, where unknown, from the sign of Spearman's rho on the fitted items).

    A slice with fewer than `min_items` labelled items is `too_few`: nothing is fitted there and
    it has no kappa (saved thresholds still classify its generations).
    """
    order = tuple(label_order)
    real = scores[scores.noise == "none"].reset_index(drop=True)
    code_of = dict(zip(labels.generation_id, encode_labels(labels.label.to_numpy(), order)))
    human = np.fromiter((code_of.get(g, -1) for g in real.generation_id), dtype=np.int64,
                        count=len(real))
    x_all = real.score.to_numpy(dtype=float)
    generation = real.generation_id.to_numpy()
    slice_codes = _slice_index(real, slices)
    key_codes, key_names = pd.factorize(real.key, sort=True)
    rows_of_key = np.split(np.argsort(key_codes, kind="stable"),
                           np.cumsum(np.bincount(key_codes, minlength=len(key_names)))[:-1])
    fields_of = {k: _config_fields(real.iloc[[int(rows[0])]]) for k, rows in
                 zip(key_names, rows_of_key) if len(rows)}
    direction_of = _directions(real, key_names, rows_of_key)
    kappa_rows, confusion_rows, predictions = [], [], []
    fits, thresholds = {}, {}
    for key, key_rows in zip(key_names, rows_of_key):
        for slice_name in slices:
            codes, values = slice_codes[slice_name]
            for v, value in enumerate(values):
                rows = key_rows[codes[key_rows] == v]
                if rows.size == 0:
                    continue
                tkey = thresholds_key(key, slice_name, value)
                h = human[rows]
                labelled = h >= 0
                x, hl = x_all[rows][labelled], h[labelled]
                base = {"key": key, **fields_of[key], "slice": slice_name, "slice_value": value}
                row = {**base, "n_scored": int(rows.size), "n": int(labelled.sum()),
                       "too_few": bool(labelled.sum() < min_items)}
                counts = np.bincount(hl, minlength=len(order))
                row.update({f"n_{label}": int(counts[i]) for i, label in enumerate(order)})
                if row["too_few"] and fitted is None:
                    kappa_rows.append({**row, "kappa": math.nan, "kappa_low": math.nan,
                                       "kappa_high": math.nan, "warning": None})
                    continue
                try:
                    if fitted is not None:
                        # per-slice thresholds if saved, else the configuration's overall ones
                        t = fitted.get(tkey) or fitted.get(thresholds_key(key, "all", "all"))
                        if t is None:
                            raise ValueError(f"no saved thresholds for {tkey}")
                        source = "saved"
                    else:
                        fit, reordered = fit_classifier(x, hl, order, weighting, bandwidth,
                                                        grid_size, monotone, direction_of[key])
                        t = fit.thresholds
                        source = "fitted, ordered" if reordered else "fitted"
                        if keep_fits:
                            fits[(key, slice_name, value)] = fit
                    thresholds[tkey] = t
                except ValueError as error:
                    kappa_rows.append({**row, "kappa": math.nan, "kappa_low": math.nan,
                                       "kappa_high": math.nan, "warning": str(error)})
                    continue
                if row["too_few"]:  # classified with saved thresholds; too few to measure
                    kappa_rows.append({**row, "kappa": math.nan, "kappa_low": math.nan,
                                       "kappa_high": math.nan, "thresholds": t.describe(),
                                       "regions": t.describe(short=True),
                                       "thresholds_from": source, "warning": None})
                    predictions.append((key, slice_name, value, rows, _codes(t, x_all[rows],
                                                                             order)))
                    continue
                evaluation = evaluate(t, x, hl, bootstrap=bootstrap, seed=seed)
                per_label = evaluation.confusion.per_label()
                row.update({"kappa": evaluation.kappa, "kappa_low": evaluation.kappa_low,
                            "kappa_high": evaluation.kappa_high, "thresholds": t.describe(),
                            "regions": t.describe(short=True),
                            "orientation": t.orientation, "intervals": len(t.intervals),
                            "point_mass": ",".join(t.point_mass), "thresholds_from": source,
                            "direction": {True: "higher", False: "lower"}.get(direction_of[key],
                                                                              ""),
                            "monotone": _in_order(t, direction_of[key]),
                            "warning": evaluation.warning})
                row.update({f"intervals_{lab}": cnt for lab, cnt in t.intervals_per_class().items()})
                row.update({f"precision_{lab}": d["precision"] for lab, d in per_label.items()})
                row.update({f"recall_{lab}": d["recall"] for lab, d in per_label.items()})
                row.update({f"predicted_share_{lab}": share
                            for lab, share in evaluation.predicted_share.items()})
                kappa_rows.append(row)
                confusion_rows.extend(_confusion_rows(base, evaluation))
                predictions.append((key, slice_name, value, rows, _codes(t, x_all[rows], order)))
    kappa = pd.DataFrame(kappa_rows)
    if "layer" in kappa:  # a layer is a number, or none (not 12.0 beside NaN)
        kappa["layer"] = kappa.layer.astype("Int64")
    if "warning" not in kappa:
        kappa["warning"] = pd.Series(dtype=object)
    return AlignResult(kappa=kappa, confusion=pd.DataFrame(confusion_rows), fits=fits,
                       thresholds=thresholds,
                       predictions=_predictions(predictions, generation, x_all, human, order))


def _codes(t: Thresholds, x: np.ndarray, order: tuple) -> np.ndarray:
    """The label codes (positions in `order`) that thresholds `t` give scores `x`."""
    if t.labels == order:
        return t.classify_codes(x)
    return encode_labels(t.classify(x), order, allow_missing=True)


def _directions(real: pd.DataFrame, key_names, rows_of_key) -> dict:
    """key -> True (higher is better), False, or None where its runs did not record it."""
    if "higher_is_better" not in real:
        return {key: None for key in key_names}
    column = real.higher_is_better.to_numpy()
    out = {}
    for key, rows in zip(key_names, rows_of_key):
        known = pd.Series(column[rows], dtype=object).dropna()
        out[key] = bool(known.iloc[0]) if len(known) else None
    return out


def _in_order(t: Thresholds, higher_is_better: bool | None) -> bool | None:
    """Whether the regions run from worst to best in the metric's direction (None: unknown)."""
    return None if higher_is_better is None else t.in_order(higher_is_better)


def _predictions(parts, generation, x_all, human, order) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame(columns=["key", "slice", "slice_value", "generation_id", "score",
                                     "human", "predicted"])
    sizes = [len(rows) for _, _, _, rows, _ in parts]
    rows = np.concatenate([rows for _, _, _, rows, _ in parts])
    pred = np.concatenate([p for *_, p in parts])
    part_index = np.repeat(np.arange(len(parts)), sizes)

    def per_part(position: int) -> pd.Categorical:  # categoricals: no per-row string objects
        names = list(dict.fromkeys(p[position] for p in parts))
        code = np.array([names.index(p[position]) for p in parts])
        return pd.Categorical.from_codes(code[part_index], categories=names)

    labels = list(order)
    return pd.DataFrame({
        "key": per_part(0), "slice": per_part(1), "slice_value": per_part(2),
        "generation_id": generation[rows], "score": x_all[rows],
        "human": pd.Categorical.from_codes(human[rows], categories=labels),
        "predicted": pd.Categorical.from_codes(pred, categories=labels)})


# ---------------------------------------------------------------- noise (7.2)

def noise_table(scores: pd.DataFrame, slices: Sequence[str] = ("all",),
                weighting: str = "equal", bandwidth: str | float = "scott",
                grid_size: int = DEFAULT_GRID_SIZE) -> pd.DataFrame:
    """Real predictions vs each noise kind, per configuration and slice: binary KDE
    classification, F1 (noise as the positive class), macro F1 and kappa."""
    rows = []
    noise = scores[scores.noise != "none"]
    if noise.empty:
        return pd.DataFrame(columns=["key", "noise", "slice", "slice_value", "f1", "kappa"])
    for key, config_rows in scores.groupby("key", sort=True):
        fields = _config_fields(config_rows)
        real_all = config_rows[config_rows.noise == "none"]
        for kind, noise_rows in config_rows[config_rows.noise != "none"].groupby("noise"):
            for slice_name in slices:
                # noise has no generating model: a model slice compares that model's output
                # with all of the configuration's noise of the same language mix
                if slice_name == "model":
                    parts = [(v, r, noise_rows) for _, v, r in slice_frames(real_all, ["model"])]
                else:
                    real_parts = dict((v, r) for _, v, r in slice_frames(real_all, [slice_name]))
                    noise_parts = dict((v, r) for _, v, r in slice_frames(noise_rows, [slice_name]))
                    parts = [(v, real_parts[v], noise_parts[v]) for v in real_parts
                             if v in noise_parts]
                for value, real_rows, noise_part in parts:
                    base = {"key": key, **fields, "noise": kind, "slice": slice_name,
                            "slice_value": value, "n_real": len(real_rows),
                            "n_noise": len(noise_part)}
                    if real_rows.empty or noise_part.empty:
                        continue
                    result = noise_separation(real_rows.score.to_numpy(float),
                                              noise_part.score.to_numpy(float), weighting,
                                              bandwidth, grid_size)
                    rows.append({**base, "f1": result.f1, "macro_f1": result.macro_f1,
                                 "kappa": result.kappa,
                                 "thresholds": result.thresholds.describe(),
                                 "real_mean": float(real_rows.score.mean()),
                                 "noise_mean": float(noise_part.score.mean())})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- context (Figure 11)

def context_effect(kappa: pd.DataFrame, baseline: str = "none") -> pd.DataFrame:
    """Change in kappa of each context variant against the same configuration without context
    (the key its `key_none` names, same slice); Figure 11 plots `delta_kappa` per scoring model."""
    columns = ["key", "key_baseline", "metric", "scorer", "layer", "slice", "slice_value",
               "context", "kappa", "kappa_baseline", "delta_kappa"]
    if kappa.empty or "context" not in kappa:
        return pd.DataFrame(columns=columns)
    frame = kappa if "key_none" in kappa else kappa.assign(key_none=None)
    # without key_none (frames made by hand), the configuration is metric, scorer and layer
    frame = frame.assign(key_none=frame.key_none.where(frame.key_none.notna(), [
        f"{m}|{s}|{layer}" for m, s, layer in zip(frame.metric, frame.scorer, frame.layer)]))
    base = frame[frame.context == baseline][["key_none", "slice", "slice_value", "key", "kappa"]]
    base = base.rename(columns={"key": "key_baseline", "kappa": "kappa_baseline"})
    other = frame[frame.context != baseline]
    merged = other.merge(base, on=["key_none", "slice", "slice_value"], how="inner")
    merged["delta_kappa"] = merged.kappa - merged.kappa_baseline
    merged = merged.assign(_layer=merged.layer.fillna(-1)).sort_values(
        ["metric", "scorer", "_layer", "slice", "slice_value", "context"], ignore_index=True)
    return merged[columns]


# ---------------------------------------------------------------- model groups (Figures 9-10)

def group_kappa(kappa: pd.DataFrame, families, value: str = "kappa") -> pd.DataFrame:
    """Mean, sd and count of `value` (kappa, or e.g. precision_correct for Figure 10) per
    metric, scoring-model group and slice; `families` from `families.load_model_families`."""
    from align.families import model_group

    if kappa.empty:
        return pd.DataFrame(columns=["metric", "group", "slice", "slice_value", "mean", "sd", "n"])
    frame = kappa.assign(group=[model_group(s, families, lang if sl == "language" else None)
                                for s, sl, lang in zip(kappa.scorer, kappa.slice,
                                                       kappa.slice_value)])
    stats = (frame.groupby(["metric", "group", "slice", "slice_value"])[value]
             .agg(mean="mean", sd="std", n="count").reset_index())
    return stats


# ---------------------------------------------------------------- judges (8.2)

def align_judges(verdicts: pd.DataFrame, labels: pd.DataFrame, slices: Sequence[str] = ("all",),
                 bootstrap: int = 0, seed: int = 0,
                 label_order: Sequence[str] = ACCURACY_LABELS,
                 min_items: int = MIN_SLICE_ITEMS) -> AlignResult:
    """Judges' accuracy labels against the humans (no thresholds needed), per judge configuration
    (one run, `agreement.judges`) and slice: `agreement.judges.judge_agreement`'s n, weighted
    kappa with a bootstrap interval, confusion matrix and verdict failure rates (Figures 15-18);
    `too_few` where fewer than `min_items` verdicts have a human label (not ranked, and shown as
    "too few", though the numbers stay judges.report's)."""
    label_of = dict(zip(labels.generation_id, labels.label))
    order = tuple(label_order)
    kappa_rows, confusion_rows = [], []
    for key, judge_rows in verdicts.groupby("key", sort=True):
        first = judge_rows.iloc[0]
        fields = {"judge": first.judge, "strategy": first.strategy,
                  "prompt_language": first.prompt_language, "prompt_version": first.prompt_version,
                  "judge_run_id": int(first.judge_run_id), "settings": first.settings}
        for slice_name, value, rows in slice_frames(judge_rows, slices):
            base = {"key": key, **fields, "slice": slice_name, "slice_value": value}
            result = judge_agreement(rows, label_of, bootstrap=bootstrap, seed=seed,
                                     label_order=order)
            row = {**base, **result.row()}
            # too few to rank on or show; the numbers stay those of judges.report (one kappa
            # per run everywhere, `agreement.judges`)
            row["too_few"] = bool(row["n"] < min_items)
            if result.confusion is None:
                kappa_rows.append({**row, "warning": "no usable verdict with a human label"})
                continue
            per_label = result.confusion.per_label()
            row["warning"] = None
            row.update({f"precision_{lab}": v["precision"] for lab, v in per_label.items()})
            row.update({f"recall_{lab}": v["recall"] for lab, v in per_label.items()})
            kappa_rows.append(row)
            confusion_rows.extend(_confusion_rows(base, _EvaluationLike(result.confusion)))
    return AlignResult(kappa=pd.DataFrame(kappa_rows), confusion=pd.DataFrame(confusion_rows))


@dataclass(frozen=True)
class _EvaluationLike:
    confusion: object


def judge_code_table(verdicts: pd.DataFrame, labels: pd.DataFrame,
                     codes: Sequence[str] | None = None, min_count: int = 10) -> pd.DataFrame:
    """Per judge configuration and error code: precision, recall, F1, human support and number
    of judge predictions (Figures 19-20), over items with an ok verdict and a human label.
    `sparse` marks codes predicted, or labelled by humans, fewer than `min_count` times (the
    study's asterisk)."""
    if codes is None:
        from taxonomy import default_taxonomy

        codes = [c.id for c in default_taxonomy().labelable()]
    human_codes = labels.set_index("generation_id")["codes"]
    tables = []
    for key, rows in verdicts[verdicts.status == "ok"].groupby("key", sort=True):
        rows = rows[rows.generation_id.isin(human_codes.index)]
        if rows.empty:
            continue
        table = code_precision_recall(list(rows.generation_id.map(human_codes)), list(rows.codes),
                                      codes).reset_index()
        first = rows.iloc[0]
        table.insert(0, "key", key)
        table.insert(1, "judge", first.judge)
        table.insert(2, "strategy", first.strategy)
        table["sparse"] = (table.support < min_count) | (table.predicted < min_count)
        tables.append(table)
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(
        columns=["key", "judge", "strategy", "code", "precision", "recall", "f1", "support",
                 "predicted", "sparse"])


# ---------------------------------------------------------------- annotators

def annotator_agreement(annotations: pd.DataFrame, label_order: Sequence[str] = ACCURACY_LABELS
                        ) -> tuple[pd.DataFrame, float]:
    """Pairwise weighted kappa between annotators, and Krippendorff's ordinal alpha over all."""
    by_rater = {name: dict(zip(rows.generation_id, rows.accuracy))
                for name, rows in annotations.groupby("annotator", sort=True)}
    pairs = pairwise_kappa(by_rater, label_order)
    items = sorted(annotations.generation_id.unique())
    table = [[by_rater[r].get(i) for i in items] for r in by_rater]
    alpha = krippendorff_alpha(table, label_order, "ordinal") if table else math.nan
    return pairs, alpha


__all__ = ["AlignResult", "MIN_SLICE_ITEMS", "SLICES", "align_judges", "align_metrics",
           "annotator_agreement", "context_effect", "distinct_slices", "group_kappa", "is_too_few",
           "judge_code_table", "noise_table", "slice_frames", "thresholds_key"]
