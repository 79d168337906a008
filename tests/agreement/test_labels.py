"""The label policy (agreement.labels): each named policy on a hand-worked case, and the app,
judges.report and `align` giving the same labels for a policy on the demo database."""
from __future__ import annotations

import pytest

from agreement.labels import Gold, Vote, describe_policy, load_labels, parse_policy, resolve

# Hand-worked votes, in the order they were made (expert first).
VOTES = [
    Vote(1, "expert", "expert", "incorrect"), Vote(1, "ann", "annotator", "correct"),
    Vote(1, "bob", "annotator", "correct"),
    Vote(2, "expert", "expert", "correct"), Vote(2, "ann", "annotator", "incorrect"),
    Vote(2, "bob", "annotator", "incorrect"),
    Vote(3, "ann", "annotator", "partial", frozenset({"SE-MD"})),
    Vote(3, "bob", "annotator", "partial", frozenset({"SE-MD"})),
    Vote(4, "ann", "annotator", "correct"), Vote(4, "bob", "annotator", "partial"),
    Vote(6, "ann", "annotator", "partial", frozenset({"A"})),
    Vote(6, "bob", "annotator", "partial", frozenset({"B"})),
]
GOLD = {1: Gold("partial", frozenset({"LG-GR1"})), 5: Gold("incorrect")}

# policy -> {generation: (label, rule that gave it)}; generations left out get no label
EXPECTED = {
    "auto": {1: ("partial", "gold"), 2: ("correct", "expert"), 3: ("partial", "majority"),
             4: ("correct", "majority"), 5: ("incorrect", "gold"), 6: ("partial", "majority")},
    "gold": {1: ("partial", "gold"), 5: ("incorrect", "gold")},
    "expert": {1: ("incorrect", "expert"), 2: ("correct", "expert")},
    # 4: a tie goes to the earliest annotation (ann's correct)
    "majority": {1: ("correct", "majority"), 2: ("incorrect", "majority"),
                 3: ("partial", "majority"), 4: ("correct", "majority"),
                 6: ("partial", "majority")},
    # 6: same label, different codes: not agreed
    "agreed": {3: ("partial", "agreed")},
    "gold-else-expert": {1: ("partial", "gold"), 2: ("correct", "expert"),
                         5: ("incorrect", "gold")},
    "gold-else-agreed": {1: ("partial", "gold"), 3: ("partial", "agreed"),
                         5: ("incorrect", "gold")},
    "annotator:bob": {1: ("correct", "annotator:bob"), 2: ("incorrect", "annotator:bob"),
                      3: ("partial", "annotator:bob"), 4: ("partial", "annotator:bob"),
                      6: ("partial", "annotator:bob")},
}


@pytest.mark.parametrize("policy", sorted(EXPECTED))
def test_each_policy_on_a_hand_worked_case(policy):
    got = resolve(VOTES, GOLD, policy)
    assert {g: (r.accuracy, r.source) for g, r in got.items()} == EXPECTED[policy]


def test_codes_and_counts_come_with_the_chosen_label():
    auto = resolve(VOTES, GOLD, "auto")
    assert auto[1].codes == {"LG-GR1"} and auto[1].n_annotators == 3
    assert auto[5].n_annotators == 0  # gold only
    assert auto[6].codes == {"A"}  # the earliest annotation with the winning label


@pytest.mark.parametrize("policy, message", [
    ("everyone", "unknown label policy 'everyone'"),
    ("gold-else-", "rule '' is not one of"),
    ("annotator:", "rule 'annotator:' is not one of"),
])
def test_unknown_policies_are_refused(policy, message):
    with pytest.raises(ValueError, match=message):
        parse_policy(policy)


def test_an_annotator_without_labels_is_named():
    with pytest.raises(ValueError, match="annotator 'nobody' has no finished labels "
                                         r"\(annotators with labels: ann, bob, expert\)"):
        resolve(VOTES, GOLD, "gold-else-annotator:nobody")


def test_reports_name_the_policy():
    assert describe_policy("auto") == "auto (gold-else-expert-else-majority)"
    assert describe_policy("gold-else-expert") == "gold-else-expert"


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory, demo_db_file):
    import shutil

    from db.engine import get_engine

    path = tmp_path_factory.mktemp("demo") / "demo.db"
    shutil.copy(demo_db_file, path)  # the demo as load_demo leaves it (tests/conftest.py)
    url = f"sqlite:///{path}"
    yield url
    get_engine(url).dispose()
    get_engine.cache_clear()


@pytest.mark.parametrize("policy", ["auto", "gold-else-expert", "majority", "gold-else-agreed",
                                    "annotator:anna"])
def test_the_three_callers_give_the_same_labels(demo_url, policy):
    from align.data import load_human_labels
    from annotate import service
    from db.engine import session_scope
    from judges.report import human_labels

    truth = {g: (r.accuracy, r.codes) for g, r in load_labels(demo_url, policy).items()}
    assert truth  # the demo has labels under every one of these policies
    align = load_human_labels(demo_url, policy)
    assert {int(g): (a, c) for g, a, c in zip(align.generation_id, align.label, align.codes)
            } == truth
    assert {g: (h.accuracy, h.codes) for g, h in human_labels(demo_url, policy).items()} == truth
    if policy == "gold-else-agreed":  # the app's summary tables
        with session_scope(demo_url) as session:
            acting = service.OPERATOR
            resolved, unresolved = service.resolve_labels(
                service.finished_labels(session, acting=acting),
                service.gold_labels(session, acting=acting))
        assert {r.generation_id: (r.accuracy, frozenset(r.codes)) for r in resolved} == truth
        assert unresolved and not set(unresolved) & set(truth)
