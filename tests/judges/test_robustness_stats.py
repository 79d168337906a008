"""U@K, I@K, flip rate, per-code stability, CR/CDR and McNemar on small hand-made cases; every
expected number below is worked out by hand in the comments."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from agreement.robustness import code_stability, language_consistency, mcnemar_p, verdict_stability

HUMAN = {1: "correct", 2: "correct", 3: "incorrect", 4: "partial"}


def run(accuracy: dict, status: dict | None = None, codes: dict | None = None) -> pd.DataFrame:
    status = status or {}
    codes = codes or {}
    return pd.DataFrame({"generation_id": list(accuracy),
                         "status": [status.get(g, "ok") for g in accuracy],
                         "accuracy": list(accuracy.values()),
                         "codes": [frozenset(codes.get(g, ())) for g in accuracy]})


def test_u_at_k_i_at_k_and_flips_over_three_runs():
    r1 = run({1: "correct", 2: "partial", 3: "correct", 4: "partial"})
    r2 = run({1: "correct", 2: "correct", 3: "correct", 4: "partial"})
    # run 3 fails on item 4: only items 1-3 are judged ok in all runs
    r3 = run({1: "correct", 2: "correct", 3: "correct", 4: "partial"}, status={4: "parse_error"})
    s = verdict_stability([r1, r2, r3], HUMAN)
    assert s.k == 3 and s.n == 3
    # item 1 always right; item 2 wrong in run 1 only; item 3 wrong in every run
    assert s.u_at_k == pytest.approx(2 / 3)
    assert s.i_at_k == pytest.approx(1 / 3)
    assert s.flip_rate == pytest.approx(1 / 3)  # only item 2 changes label
    # run 2 vs human over items 1-4: (c,c),(c,c),(i,c),(p,p); run 3 over 1-3 (i,c) wrong too
    assert len(s.kappas) == 3
    assert s.row()["kappa_spread"] == pytest.approx(max(s.kappas) - min(s.kappas))


def test_identical_runs_have_no_flips_and_u_equals_i():
    r = run({1: "correct", 2: "incorrect", 3: "incorrect", 4: "partial"})
    s = verdict_stability([r, r.copy()], HUMAN)
    assert (s.n, s.flip_rate) == (4, 0.0)
    assert s.u_at_k == s.i_at_k == pytest.approx(1 / 4)  # item 2, wrong both times
    assert s.kappa_spread == 0.0


def test_no_common_items_gives_nan_not_zero():
    s = verdict_stability([run({1: "correct"}), run({2: "correct"})], HUMAN)
    assert s.n == 0 and math.isnan(s.u_at_k) and math.isnan(s.flip_rate)


def test_code_found_in_some_runs_not_all():
    human = {1: frozenset({"SA-1"}), 2: frozenset()}
    r1 = run({1: "partial", 2: "correct"}, codes={1: {"SA-1"}, 2: {"SA-1"}})
    r2 = run({1: "partial", 2: "correct"}, codes={1: {"SA-1"}})
    table = code_stability([r1, r2], human, ["SA-1", "LG-2"]).set_index("code")
    sa = table.loc["SA-1"]
    # item 1: found in both (human has it: never wrong); item 2: found in run 1 only (human not)
    assert (sa.n, sa.found_in_all, sa.found_in_some) == (2, 1, 1)
    assert sa.flip_rate == pytest.approx(0.5)
    assert sa.u_at_k == pytest.approx(0.5) and sa.i_at_k == 0.0
    lg = table.loc["LG-2"]
    assert (lg.found_in_some, lg.flip_rate, lg.u_at_k) == (0, 0.0, 0.0)


def test_mcnemar_exact_and_chi_square():
    # exact: b=0, c=5 -> 2 * (1/2)^5 = 0.0625
    assert mcnemar_p(0, 5) == pytest.approx(0.0625)
    # b=1, c=4: 2 * (C(5,0)+C(5,1)) / 32 = 12/32 = 0.375
    assert mcnemar_p(1, 4) == pytest.approx(0.375)
    assert mcnemar_p(3, 3) == 1.0 and mcnemar_p(0, 0) == 1.0
    # 30 pairs (chi-square with continuity): (|10-20|-1)^2/30 = 2.7; p = erfc(sqrt(1.35))
    assert mcnemar_p(10, 20) == pytest.approx(math.erfc(math.sqrt(1.35)))
    assert mcnemar_p(10, 20) == pytest.approx(0.10035, abs=1e-4)  # chi2.sf(2.7, 1)


def test_language_consistency_counts():
    english = run({1: "correct", 2: "partial", 3: "incorrect", 4: "partial"})
    native = run({1: "correct", 2: "correct", 3: "correct", 4: "correct"},
                 status={4: "truncated"})
    c = language_consistency(english, native, HUMAN)
    # items 1-3 (4 failed natively): en right on 1, 3; native right on 1, 2
    assert c.n == 3
    assert (c.cr_en, c.cr_x) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert c.cr_bi == pytest.approx(1 / 3)  # item 1
    assert c.cdr == pytest.approx(2 / 3)  # items 2 and 3
    assert (c.en_only, c.x_only) == (1, 1)
    assert c.p_mcnemar == 1.0
