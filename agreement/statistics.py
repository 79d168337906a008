"""Agreement statistics: the project's one implementation (humans vs metrics, judges, annotators).

Everything here is pure numpy over plain sequences and vectorised; labels are always passed
explicitly, in their ordinal order (worst first, as `taxonomy.ACCURACY_LABELS`), so string labels
never get sorted alphabetically by accident.

Conventions for degenerate input (documented once, used everywhere):

- Cohen's kappa is undefined when the chance disagreement is zero, i.e. both sides use one and the
  same single class (or there are no items): `weighted_kappa` returns ``nan`` then. When only one
  side is constant the kappa is well defined and equals ``0.0`` (no better than chance).
- Krippendorff's alpha is ``nan`` when fewer than two values occur among the pairable units
  (the `krippendorff` package raises instead) or when no unit has two ratings.
- Precision/recall of a class or code with no predictions/no support is ``nan``, never 0.

>>> weighted_kappa(["correct", "partial", "incorrect"], ["correct", "partial", "incorrect"])
1.0
>>> round(weighted_kappa(["correct", "incorrect", "partial", "correct"],
...                      ["correct", "partial", "partial", "partial"]), 4)
0.4286
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np

from taxonomy import ACCURACY_LABELS

WEIGHTINGS = ("quadratic", "linear", None)
ALPHA_LEVELS = ("nominal", "ordinal", "interval")

__all__ = [
    "Confusion", "weighted_kappa", "krippendorff_alpha", "confusion", "bootstrap_ci",
    "code_precision_recall", "pairwise_kappa", "encode_labels", "kappa_from_counts",
    "bootstrap_counts", "percentile_interval", "normal_quantile", "normal_two_sided_p",
    "as_columns",
]


# ---------------------------------------------------------------- label encoding

def _plain(value: Any) -> Any:
    """An enum member compares by its value (AccuracyLabel.CORRECT -> "correct")."""
    return value.value if isinstance(value, enum.Enum) else value


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def encode_labels(values: Sequence[Any], labels: Sequence[Any], *, allow_missing: bool = False
                  ) -> np.ndarray:
    """Each value's position in `labels` (its ordinal rank), as an int array; -1 for missing.

    Strings also match case- and whitespace-insensitively ("Correct " -> "correct"); an unknown
    value raises ValueError naming it and the allowed labels.

    >>> encode_labels(["partial", "Correct", "incorrect"], ("incorrect", "partial", "correct"))
    array([1, 2, 0])
    >>> encode_labels(["b", None], ("a", "b"), allow_missing=True)
    array([ 1, -1])
    """
    labels = [_plain(label) for label in labels]
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels must be distinct, got {labels!r}")
    index: dict[Any, int] = {label: i for i, label in enumerate(labels)}
    for i, label in enumerate(labels):
        if isinstance(label, str):
            index.setdefault(label.strip().casefold(), i)
    values = values.tolist() if isinstance(values, np.ndarray) else list(values)

    def code_of(value: Any) -> int:
        value = _plain(value)
        if _is_missing(value):
            return -1
        code = index.get(value)
        if code is None and isinstance(value, str):
            code = index.get(value.strip().casefold())
        if code is None:
            position = next(i for i, v in enumerate(values) if v is value or v == value)
            raise ValueError(f"unknown label {value!r} at position {position}; "
                             f"expected one of {labels!r}")
        return code

    try:  # one lookup per distinct value, then a C-speed map over the items
        lookup = {value: code_of(value) for value in set(values)}
        codes = np.fromiter((lookup[v] for v in values), dtype=np.int64, count=len(values))
    except TypeError:  # unhashable values: item by item
        codes = np.fromiter((code_of(v) for v in values), dtype=np.int64, count=len(values))
    if not allow_missing and (codes < 0).any():
        raise ValueError(f"missing label at position {int(np.argmax(codes < 0))}")
    return codes


def _pair_codes(a, b, labels) -> tuple[np.ndarray, np.ndarray]:
    ca, cb = encode_labels(a, labels), encode_labels(b, labels)
    if ca.shape != cb.shape:
        raise ValueError(f"the two label sequences differ in length: {len(ca)} vs {len(cb)}")
    return ca, cb


# ---------------------------------------------------------------- Cohen's kappa

def _weight_matrix(k: int, weights: str | None) -> np.ndarray:
    if weights not in WEIGHTINGS:
        raise ValueError(f"weights must be one of {WEIGHTINGS}, got {weights!r}")
    i, j = np.indices((k, k))
    if weights == "quadratic":
        return ((i - j) ** 2).astype(float)
    if weights == "linear":
        return np.abs(i - j).astype(float)
    return (i != j).astype(float)


def _counts(ca: np.ndarray, cb: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(ca * k + cb, minlength=k * k).reshape(k, k)


def kappa_from_counts(counts: np.ndarray, weights: str | None = "quadratic") -> np.ndarray:
    """Weighted kappa of one (k, k) confusion matrix, or of a batch (..., k, k) at once.

    Rows are rater A, columns rater B. ``nan`` where the chance disagreement is zero.

    >>> float(kappa_from_counts(np.array([[5, 0], [0, 5]]), weights=None))
    1.0
    """
    counts = np.asarray(counts, dtype=float)
    k = counts.shape[-1]
    w = _weight_matrix(k, weights)
    n = counts.sum(axis=(-2, -1))
    rows, cols = counts.sum(axis=-1), counts.sum(axis=-2)
    observed = (counts * w).sum(axis=(-2, -1))
    # chance disagreement: sum_ij w_ij * row_i * col_j / n, without building the outer product
    expected_n = np.einsum("...i,ij,...j->...", rows, w, cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - observed * n / expected_n
    return np.where(expected_n > 0, kappa, np.nan)


def weighted_kappa(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] = ACCURACY_LABELS,
                   weights: str | None = "quadratic") -> float:
    """Cohen's kappa between two label sequences, weighted by ordinal distance.

    `labels` gives the ordinal order (worst first); weights "quadratic" (default), "linear" or
    None (unweighted). Equal to ``sklearn.metrics.cohen_kappa_score(a, b, labels=labels,
    weights=...)``; ``nan`` when both sides use one and the same single class (undefined), ``0.0``
    when just one side is constant.

    >>> weighted_kappa(["correct"] * 3, ["correct"] * 3)
    nan
    >>> weighted_kappa(["correct"] * 3, ["correct", "partial", "incorrect"])
    0.0
    >>> weighted_kappa(["x", "y", "z"], ["x", "y", "y"], labels=["x", "y", "z"], weights=None)
    0.5
    """
    ca, cb = _pair_codes(a, b, labels)
    return float(kappa_from_counts(_counts(ca, cb, len(labels)), weights))


weighted_kappa.from_counts = kappa_from_counts  # lets bootstrap_ci resample counts, not items


# ---------------------------------------------------------------- confusion matrices

@dataclass(frozen=True)
class Confusion:
    """Counts with rows = reference (human) label and columns = predicted label.

    `recall` is row-normalised (each row sums to 1: of the items humans call X, the share
    predicted as Y); `precision` is column-normalised (of the items predicted Y, the share humans
    call X). Rows/columns without items are ``nan``.
    """
    labels: tuple
    counts: np.ndarray

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def recall(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.counts / self.counts.sum(axis=1, keepdims=True)

    @property
    def precision(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.counts / self.counts.sum(axis=0, keepdims=True)

    def per_label(self) -> dict[str, dict[str, float]]:
        """Precision, recall, F1 and support per label (``nan`` where undefined)."""
        tp = np.diag(self.counts).astype(float)
        support, predicted = self.counts.sum(axis=1), self.counts.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(predicted > 0, tp / predicted, np.nan)
            recall = np.where(support > 0, tp / support, np.nan)
            f1 = np.where(tp + support + predicted > 0, 2 * tp / (support + predicted), np.nan)
        return {str(label): {"precision": float(precision[i]), "recall": float(recall[i]),
                             "f1": float(f1[i]), "support": int(support[i])}
                for i, label in enumerate(self.labels)}

    def to_dict(self) -> dict:
        def clean(matrix):
            return [[None if math.isnan(x) else float(x) for x in row] for row in matrix]
        return {"labels": [str(x) for x in self.labels], "counts": self.counts.tolist(),
                "recall": clean(self.recall), "precision": clean(self.precision)}


def confusion(y_true: Sequence[Any], y_pred: Sequence[Any],
              labels: Sequence[Any] = ACCURACY_LABELS) -> Confusion:
    """The confusion matrix of `y_pred` against `y_true` over `labels` (in that order).

    >>> c = confusion(["a", "a", "b"], ["a", "b", "b"], labels=["a", "b"])
    >>> c.counts.tolist(), c.recall.tolist(), c.precision.tolist()
    ([[1, 1], [0, 1]], [[0.5, 0.5], [0.0, 1.0]], [[1.0, 0.5], [0.0, 0.5]])
    """
    ct, cp = _pair_codes(y_true, y_pred, labels)
    return Confusion(tuple(_plain(x) for x in labels), _counts(ct, cp, len(labels)))


# ---------------------------------------------------------------- Krippendorff's alpha

def krippendorff_alpha(reliability_data: Sequence[Sequence[Any]],
                       labels: Sequence[Any] | None = ACCURACY_LABELS,
                       level: str = "ordinal") -> float:
    """Krippendorff's alpha of a raters x units table; ``None``/NaN marks a missing rating.

    With `labels`, values are labels and their rank in `labels` is the value used (so
    "interval" treats the ordinal scale as equally spaced); with ``labels=None`` the values are
    numbers. Equal to ``krippendorff.alpha(..., level_of_measurement=level)`` on the same data;
    ``nan`` where that package raises (a single value in the domain, no pairable unit).

    >>> data = [["correct", "partial", None, "incorrect"],
    ...         ["correct", "partial", "partial", "partial"],
    ...         [None, "partial", "correct", "incorrect"]]
    >>> round(krippendorff_alpha(data, level="ordinal"), 4)
    0.6368
    >>> round(krippendorff_alpha([[1, 2, 3, 3], [1, 2, 3, 4]], labels=None, level="interval"), 4)
    0.8889
    """
    if level not in ALPHA_LEVELS:
        raise ValueError(f"level must be one of {ALPHA_LEVELS}, got {level!r}")
    rows = [list(row) for row in reliability_data]
    if not rows:
        return float("nan")
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        raise ValueError("reliability_data must be rectangular: every rater row the same length")
    flat = [v for row in rows for v in row]
    if labels is None:
        numbers = np.array([np.nan if _is_missing(_plain(v)) else float(_plain(v)) for v in flat])
        present = ~np.isnan(numbers)
        domain, inverse = np.unique(numbers[present], return_inverse=True)
        codes = np.full(numbers.shape, -1, dtype=np.int64)
        codes[present] = inverse
        values = domain.astype(float)
    else:
        codes = encode_labels(flat, labels, allow_missing=True)
        values = np.arange(len(labels), dtype=float)
    v = len(values)
    if v == 0:
        return float("nan")
    codes = codes.reshape(len(rows), width)
    # value counts per unit (units x values), ignoring missing ratings
    unit_index = np.broadcast_to(np.arange(width), codes.shape)
    present = codes >= 0
    per_unit = np.zeros((width, v))
    np.add.at(per_unit, (unit_index[present], codes[present]), 1)
    m_u = per_unit.sum(axis=1)
    per_unit = per_unit[m_u >= 2]
    m_u = m_u[m_u >= 2]
    if per_unit.size == 0:
        return float("nan")
    # coincidence matrix o_ck = sum_u (n_uc n_uk - [c == k] n_uc) / (m_u - 1)
    scaled = per_unit / (m_u - 1)[:, None]
    coincidence = scaled.T @ per_unit - np.diag(scaled.sum(axis=0))
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    if np.count_nonzero(n_c) < 2:
        return float("nan")
    if level == "nominal":
        delta = 1.0 - np.eye(v)
    elif level == "interval":
        delta = (values[:, None] - values[None, :]) ** 2
    else:  # ordinal: squared mass between the two ranks, each end counted half
        cumulative = np.concatenate([[0.0], np.cumsum(n_c)])
        lo, hi = np.minimum.outer(np.arange(v), np.arange(v)), np.maximum.outer(
            np.arange(v), np.arange(v))
        delta = (cumulative[hi + 1] - cumulative[lo] - (n_c[lo] + n_c[hi]) / 2) ** 2
    observed = (coincidence * delta).sum()
    expected = (np.outer(n_c, n_c) * delta).sum() / (n - 1)
    return float(1.0 - observed / expected) if expected > 0 else float("nan")


# ---------------------------------------------------------------- bootstrap

def bootstrap_ci(y_true: Sequence[Any], y_pred: Sequence[Any],
                 statistic: Callable[..., float] = weighted_kappa, n_resamples: int = 1000,
                 confidence: float = 0.95, seed: int = 0,
                 labels: Sequence[Any] = ACCURACY_LABELS, **kwargs: Any
                 ) -> tuple[float, float, float]:
    """(estimate, low, high): the statistic and its percentile bootstrap interval over items.

    Resampling items with replacement is the same as drawing the confusion counts from a
    multinomial with the observed cell shares, so a statistic that depends only on the counts
    (it has a `from_counts`, like `weighted_kappa`) is resampled in one vectorised step; any other
    ``statistic(y_true, y_pred, labels=..., **kwargs)`` is called once per resample. Resamples
    where the statistic is undefined (``nan``) are left out of the percentiles.

    >>> truth = ["incorrect"] * 30 + ["partial"] * 30 + ["correct"] * 40
    >>> est, low, high = bootstrap_ci(truth, truth[:90] + ["partial"] * 10, seed=1)
    >>> low < est < high <= 1.0
    True
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    ct, cp = _pair_codes(y_true, y_pred, labels)
    k = len(labels)
    rng = np.random.default_rng(seed)
    from_counts = getattr(statistic, "from_counts", None)
    if from_counts is not None:
        return bootstrap_counts(_counts(ct, cp, k), from_counts, n_resamples, confidence, seed,
                                **kwargs)
    else:
        labels_list = list(labels)
        truth = np.asarray([labels_list[i] for i in ct], dtype=object)
        pred = np.asarray([labels_list[i] for i in cp], dtype=object)
        estimate = float(statistic(list(truth), list(pred), labels=labels, **kwargs))
        n = len(truth)
        if n == 0:
            return estimate, float("nan"), float("nan")
        idx = rng.integers(0, n, size=(n_resamples, n))
        samples = np.array([statistic(list(truth[i]), list(pred[i]), labels=labels, **kwargs)
                            for i in idx], dtype=float)
    return (estimate, *percentile_interval(samples, confidence))


def normal_quantile(confidence: float) -> float:
    """z of a two-sided normal `confidence` interval (1.96 at 0.95)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def normal_two_sided_p(z) -> np.ndarray:
    """Two-sided normal p-values of |z| statistics, element-wise; nan where z is not finite."""
    from statistics import NormalDist

    return np.array([2 * (1 - NormalDist().cdf(float(v))) if np.isfinite(v) else np.nan
                     for v in np.ravel(z)])


def as_columns(values) -> np.ndarray:
    """A float array with one column per estimand: (n,) becomes (n, 1), (n, d) stays."""
    array = np.asarray(values, dtype=float)
    return array[:, None] if array.ndim == 1 else array


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central `confidence` interval of the resampled values (nan ones left out)."""
    samples = samples[~np.isnan(samples)]
    if samples.size == 0:
        return float("nan"), float("nan")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_counts(counts: np.ndarray, from_counts: Callable[..., np.ndarray] = kappa_from_counts,
                     n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0,
                     **kwargs: Any) -> tuple[float, float, float]:
    """`bootstrap_ci` for a statistic of a (k, k) confusion matrix, given the matrix: the
    resampled matrices are multinomial draws with the observed cell shares, all in one call.

    >>> est, low, high = bootstrap_counts(np.array([[40, 5], [10, 45]]), weights=None)
    >>> round(est, 3), low < est < high
    (0.7, True)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    counts = np.asarray(counts)
    k = counts.shape[-1]
    estimate = float(from_counts(counts, **kwargs))
    n = int(counts.sum())
    if n == 0 or n_resamples < 1:
        return estimate, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts.ravel() / n, size=n_resamples).reshape(-1, k, k)
    return (estimate, *percentile_interval(np.asarray(from_counts(draws, **kwargs), dtype=float),
                                    confidence))


# ---------------------------------------------------------------- error codes

def code_precision_recall(true_codes: Sequence[set[str]], pred_codes: Sequence[set[str]],
                          codes: Sequence[str]):
    """Per code precision, recall, F1, support (human count) and predicted count, as a DataFrame.

    Each item carries a set of codes (multi-label). Codes outside `codes` are ignored (a judge's
    code the taxonomy lacks is the judge parser's problem, not this table's); ``nan`` where a
    code was never predicted (precision) or never in the reference (recall).

    >>> table = code_precision_recall([{"A"}, {"A", "B"}, set()], [{"A"}, {"B"}, {"B"}], ["A", "B"])
    >>> table.round(3).to_dict("index")["B"]
    {'precision': 0.5, 'recall': 1.0, 'f1': 0.667, 'support': 1, 'predicted': 2}
    """
    import pandas as pd

    if len(true_codes) != len(pred_codes):
        raise ValueError(f"true_codes and pred_codes differ in length: "
                         f"{len(true_codes)} vs {len(pred_codes)}")
    codes = list(codes)
    column = {code: j for j, code in enumerate(codes)}

    def indicator(sets: Sequence[set[str]]) -> np.ndarray:
        matrix = np.zeros((len(sets), len(codes)), dtype=bool)
        for i, item in enumerate(sets):
            for code in item or ():
                j = column.get(code)
                if j is not None:
                    matrix[i, j] = True
        return matrix

    truth, pred = indicator(true_codes), indicator(pred_codes)
    tp = (truth & pred).sum(axis=0).astype(float)
    support, predicted = truth.sum(axis=0), pred.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, np.nan)
        recall = np.where(support > 0, tp / support, np.nan)
        f1 = np.where(support + predicted > 0, 2 * tp / (support + predicted), np.nan)
    return pd.DataFrame({"precision": precision, "recall": recall, "f1": f1,
                         "support": support.astype(int), "predicted": predicted.astype(int)},
                        index=pd.Index(codes, name="code"))


# ---------------------------------------------------------------- annotators

def pairwise_kappa(labels_by_rater: Mapping[Hashable, Mapping[Hashable, Any]],
                   labels: Sequence[Any] = ACCURACY_LABELS, weights: str | None = "quadratic"):
    """Weighted kappa for every pair of raters over the items both labelled, as a DataFrame.

    Columns: rater_a, rater_b, n_items, kappa (``nan`` below two shared items or when undefined),
    agreement (share of identical labels). Missing labels (None) count as not labelled.

    >>> table = pairwise_kappa({"ann": {1: "correct", 2: "partial", 3: "incorrect"},
    ...                         "bob": {1: "correct", 2: "partial", 3: "partial", 4: "correct"}})
    >>> table[["rater_a", "rater_b", "n_items"]].values.tolist(), round(float(table.kappa[0]), 3)
    ([['ann', 'bob', 3]], 0.667)
    """
    import pandas as pd

    rows = []
    raters = list(labels_by_rater)
    for ra, rb in combinations(raters, 2):
        la = {i: v for i, v in labels_by_rater[ra].items() if not _is_missing(_plain(v))}
        lb = {i: v for i, v in labels_by_rater[rb].items() if not _is_missing(_plain(v))}
        shared = [i for i in la if i in lb]
        a, b = [la[i] for i in shared], [lb[i] for i in shared]
        kappa = weighted_kappa(a, b, labels, weights) if len(shared) >= 2 else float("nan")
        ca, cb = (encode_labels(a, labels), encode_labels(b, labels)) if shared else ([], [])
        agreement = float(np.mean(np.asarray(ca) == np.asarray(cb))) if shared else float("nan")
        rows.append({"rater_a": ra, "rater_b": rb, "n_items": len(shared), "kappa": kappa,
                     "agreement": agreement})
    return pd.DataFrame(rows, columns=["rater_a", "rater_b", "n_items", "kappa", "agreement"])
