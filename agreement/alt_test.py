"""Can a judge stand in for the annotators? The alternative annotator test (Calderon, Reichart &
Dror, ACL 2025, "The Alternative Annotator Test for LLM-as-a-Judge"), as the authors' `alt_test`
runs it (github.com/nitaytech/AltTest, alt_test_example.ipynb):

1. keep the items with at least `min_humans_per_item` human labels and a judge label;
2. for each annotator j with at least `min_items_per_human` such items, leave j out: on each of
   j's items compare how well the judge and j match the other annotators (accuracy: the share of
   them with the same label; neg_rmse: minus the root mean squared difference on the ordinal
   scale); W_judge = 1 where the judge scores at least as well as j, W_human = 1 where j scores
   at least as well as the judge;
3. a one-sided t-test per annotator of mean(W_human - W_judge) < epsilon (epsilon: the
   cost-benefit margin the judge is granted; 0.2 for expert annotators, the authors' value);
4. Benjamini-Yekutieli across the tested annotators at q; the winning rate omega is the share of
   annotators whose null is rejected (the judge passes at omega >= 0.5) and the advantage
   probability rho the mean over annotators of mean(W_judge) (for ranking judges).

Vectorised over annotators x items: a matrix of label codes with -1 where an annotator did not
label an item. Ties are decided on exact integer counts and sums of squares, so they fall as in
the authors' per-item floats.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SCORINGS = ("accuracy", "neg_rmse")
DEFAULT_EPSILON = 0.2  # the authors' value for expert annotators
DEFAULT_Q = 0.05
MIN_HUMANS_PER_ITEM = 2
MIN_ITEMS_PER_HUMAN = 30


@dataclass(frozen=True)
class AltTestResult:
    winning_rate: float  # omega; nan when no annotator could be tested
    advantage_probability: float  # rho
    annotators: list[str]  # every annotator, in input order
    items: np.ndarray  # per annotator: kept items they labelled
    p_values: np.ndarray  # per annotator (nan where not tested)
    advantage: np.ndarray  # per annotator: mean(W_judge) (nan where not tested)
    rejected: np.ndarray  # per annotator: the judge wins against them (BY at q)
    tested: np.ndarray  # per annotator: enough items to be tested
    n_items: int  # items kept (enough annotators and a judge label)
    n_labelling: int  # annotators with any label among the items given

    @property
    def passed(self) -> bool:
        return bool(self.winning_rate >= 0.5)

    @property
    def why_untested(self) -> str:
        """Why there is no winning rate, or "" when there is one."""
        if self.tested.any():
            return ""
        if self.n_labelling < MIN_HUMANS_PER_ITEM:
            return (f"{self.n_labelling} annotator(s) labelled these items: the test leaves one "
                    f"out and needs at least {MIN_HUMANS_PER_ITEM}")
        if self.n_items == 0:
            return (f"no item has {MIN_HUMANS_PER_ITEM} or more human labels and a judge label")
        return (f"no annotator has {MIN_ITEMS_PER_HUMAN} or more of the {self.n_items} items "
                f"with {MIN_HUMANS_PER_ITEM}+ human labels and a judge label (most: "
                f"{int(self.items.max())})")


def benjamini_yekutieli(p_values, q: float = DEFAULT_Q) -> np.ndarray:
    """Which hypotheses the Benjamini-Yekutieli step-up procedure rejects at FDR `q` (valid under
    any dependence): the k smallest p-values, k the largest rank with p_(k) <= k q / (m H_m),
    H_m = 1 + 1/2 + ... + 1/m; a nan p-value counts in m and is never rejected.

    >>> benjamini_yekutieli([0.001, 0.02, 0.5]).tolist()
    [True, False, False]
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    rejected = np.zeros(m, dtype=bool)
    if m == 0:
        return rejected
    order = np.argsort(p, kind="stable")  # nan last, as numpy sorts them
    harmonic = np.sum(1.0 / np.arange(1, m + 1))
    below = p[order] <= np.arange(1, m + 1) / m * q / harmonic
    if below.any():
        rejected[order[:np.flatnonzero(below).max() + 1]] = True
    return rejected


def _one_sided_t_less(values: np.ndarray, mask: np.ndarray, popmean: float) -> np.ndarray:
    """Per row, scipy's `ttest_1samp(the row's values where mask, popmean, alternative='less')`
    p-value, zero spread included: t is -inf or +inf by the sign of mean - popmean (p 0 or 1),
    nan when the mean equals popmean; nan below 2 values."""
    from scipy.stats import t

    counts = mask.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(mask, values, 0).sum(axis=1) / counts
        squares = (np.where(mask, values - mean[:, None], 0) ** 2).sum(axis=1)
        se = np.sqrt(squares / (counts - 1) / counts)
        statistic = (mean - popmean) / se
        p = t.cdf(statistic, np.maximum(counts - 1, 1))
    return np.where(counts >= 2, p, np.nan)


def alt_test(human: np.ndarray, judge: np.ndarray, annotators: list[str] | None = None,
             scoring: str = "accuracy", epsilon: float = DEFAULT_EPSILON, q: float = DEFAULT_Q,
             min_humans_per_item: int = MIN_HUMANS_PER_ITEM,
             min_items_per_human: int = MIN_ITEMS_PER_HUMAN) -> AltTestResult:
    """The alternative annotator test on `human` (annotators, items) label codes, -1 where
    unlabelled, and `judge` (items,) codes, -1 where the judge gave none; see the module."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")
    human = np.asarray(human, dtype=np.int64)
    judge = np.asarray(judge, dtype=np.int64)
    annotators = list(annotators) if annotators is not None else [str(i) for i in
                                                                  range(len(human))]
    has = human >= 0
    per_item = has.sum(axis=0)
    kept = (per_item >= min_humans_per_item) & (judge >= 0)
    has = has & kept[None, :]
    items = has.sum(axis=1)
    tested = items >= min_items_per_human
    if scoring == "accuracy":
        k = int(max(human.max(initial=0), judge.max(initial=0))) + 1
        # per item, how many annotators gave each label; leaving j out removes j's own vote
        counts = np.stack([(human == c).sum(axis=0) for c in range(k)])  # (k, items)
        judge_label = np.clip(judge, 0, None)
        judge_matches = counts[judge_label, np.arange(judge.size)][None, :] - (human == judge)
        human_matches = np.take_along_axis(counts, np.clip(human, 0, None), axis=0) - 1
        # both over the same number of others: compare the counts
        judge_wins = judge_matches >= human_matches
        human_wins = human_matches >= judge_matches
    else:
        values = np.where(human >= 0, human, 0).astype(float)
        present = (human >= 0).astype(float)
        total = (values * present).sum(axis=0)
        total_squares = (values ** 2 * present).sum(axis=0)

        def squared_error(prediction: np.ndarray) -> np.ndarray:
            """sum over the other annotators of (prediction - their label)^2, exact in integers."""
            every = per_item * prediction ** 2 - 2 * prediction * total + total_squares
            return every - (prediction - values) ** 2
        judge_error = squared_error(np.broadcast_to(judge.astype(float), human.shape))
        human_error = squared_error(values)
        judge_wins = judge_error <= human_error
        human_wins = human_error <= judge_error
    use = has & tested[:, None]
    w_judge = np.where(use, judge_wins, 0).astype(float)
    w_human = np.where(use, human_wins, 0).astype(float)
    p_values = np.where(tested, _one_sided_t_less(w_human - w_judge, use, epsilon), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        advantage = np.where(tested, w_judge.sum(axis=1) / items, np.nan)
    rejected = np.zeros(len(annotators), dtype=bool)
    rejected[tested] = benjamini_yekutieli(p_values[tested], q)
    winning_rate = rejected.sum() / tested.sum() if tested.any() else np.nan
    rho = float(np.mean(advantage[tested])) if tested.any() else np.nan
    return AltTestResult(float(winning_rate), rho, annotators, items, p_values, advantage,
                         rejected, tested, int(kept.sum()), int((human >= 0).any(axis=1).sum()))


__all__ = ["AltTestResult", "DEFAULT_EPSILON", "DEFAULT_Q", "MIN_HUMANS_PER_ITEM",
           "MIN_ITEMS_PER_HUMAN", "SCORINGS", "alt_test", "benjamini_yekutieli"]
