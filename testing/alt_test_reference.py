"""The alternative annotator test written out as the paper describes it, one item and one
annotator at a time (dicts, scipy's one-sample t-test, scipy's Benjamini-Yekutieli): what
`agreement.alt_test`'s tests check it against and `bench/questions.py` times it against."""
from __future__ import annotations

import numpy as np
import scipy.stats


def reference_alt_test(humans: dict, judge: dict, scoring: str = "accuracy",
                       epsilon: float = 0.2, q: float = 0.05, min_humans: int = 2,
                       min_items: int = 30):
    """(winning rate, advantage probability, p-values of the tested annotators), or None when
    no annotator can be tested. `humans`: annotator -> {item: label}; `judge`: {item: label}."""
    if scoring == "accuracy":
        def score(prediction, others):
            return float(np.mean([prediction == o for o in others]))
    else:
        def score(prediction, others):
            return -float(np.sqrt(np.mean([(prediction - o) ** 2 for o in others])))
    raters_of: dict = {}
    for name, labels in humans.items():
        for item in labels:
            raters_of.setdefault(item, []).append(name)
    kept = {i for i, r in raters_of.items() if len(r) >= min_humans and i in judge}
    p_values, advantages = [], []
    for name, labels in humans.items():
        items = [i for i in labels if i in kept]
        if len(items) < min_items:
            continue
        w_judge, w_human = [], []
        for item in items:
            others = [humans[o][item] for o in raters_of[item] if o != name]
            s_human, s_judge = score(labels[item], others), score(judge[item], others)
            w_judge.append(s_judge >= s_human)
            w_human.append(s_human >= s_judge)
        d = np.array(w_human, float) - np.array(w_judge, float)
        with np.errstate(all="ignore"):
            p_values.append(scipy.stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
        advantages.append(np.mean(w_judge))
    if not p_values:
        return None
    p = np.array(p_values, float)
    defined = ~np.isnan(p)
    adjusted = np.full(p.shape, np.nan)
    # scipy's BY-adjusted p-values, the nan ones counted in m as the paper's loop counts them
    adjusted[defined] = scipy.stats.false_discovery_control(
        np.concatenate([p[defined], np.ones((~defined).sum())]), method="by")[:defined.sum()]
    wins = np.nan_to_num(adjusted, nan=2) <= q
    return wins.sum() / len(p), float(np.mean(advantages)), p
