"""lmscore's fast path (issue 27) against a straightforward computation: the same scores.

The scorer runs each distinct input once, a prefix several inputs share once (its key/value
cache reused), batches across languages and projects only the scored positions through the LM
head; the reference here runs every input alone through the whole model and takes the
log-softmax of the full logits. Allowed: float32 summation noise (1e-5)."""
from __future__ import annotations

import pytest
import torch

from metrics.context import ContextVariant, build_segment
from metrics.likelihood import _Input, prefix_groups

FILES = [  # (lang, file, comment in it, predictions: a target's generations, one repeated)
    ("pl", "import os\n\n\ndef suma(xs):\n    '''Pomocnik.'''\n    # Zwraca sumę wszystkich "
           "elementów listy\n    return sum(xs) + offset\n",
     "# Zwraca sumę wszystkich elementów listy",
     ["# Zwraca sumę elementów", "# Sortuje listę", "# Zwraca sumę elementów",
      "# Zwraca sumę wszystkich elementów listy"]),
    ("el", "def mean(xs):\n    # Υπολογίζει τον μέσο όρο της λίστας\n    return sum(xs) / len(xs)\n",
     "# Υπολογίζει τον μέσο όρο της λίστας", ["# Υπολογίζει τον μέσο όρο", "# Επιστρέφει"]),
    ("zh", "def total(items):\n    # 计算所有商品的总价\n    return sum(i.price for i in items)\n",
     "# 计算所有商品的总价", ["# 计算商品总价", "# 返回列表", "# 计算所有商品的价格"]),
]


def _items(context):
    out = []
    for lang, content, comment, predictions in FILES:
        span = (content.index(comment), content.index(comment) + len(comment))
        ref = build_segment(comment, context, lang, content, span)
        out += [(lang, build_segment(p, context, lang, content, span), ref) for p in predictions]
    return out


def _by_hand(scorer, src, tgt, context, lang, prompt="v1") -> float:
    x = scorer._input(src, tgt, ContextVariant.parse(context), lang, prompt)
    with torch.no_grad():
        logits = scorer.model(input_ids=torch.tensor([x.ids])).logits[0]
    logp = torch.log_softmax(logits, -1)
    return float(torch.stack([logp[p - 1, x.ids[p]] for p in x.scored]).mean())


@pytest.mark.slow
@pytest.mark.parametrize("context,prompt", [("none", "v1"), ("minimal", "v1"), ("full", "v1"),
                                            ("full", "v2")])
def test_lmscore_equals_each_input_run_alone(smollm2_scorer, context, prompt):
    items = _items(context)
    scores = smollm2_scorer.pair_scores([p for _, p, _ in items], [r for _, _, r in items],
                                        context, [lang for lang, _, _ in items], prompt=prompt)
    for (lang, pred, ref), score in zip(items, scores):
        assert score.error is None
        forward = _by_hand(smollm2_scorer, ref, pred, context, lang, prompt)
        reverse = _by_hand(smollm2_scorer, pred, ref, context, lang, prompt)
        assert score.precision == pytest.approx(forward, abs=1e-5)
        assert score.recall == pytest.approx(reverse, abs=1e-5)
        assert score.f == pytest.approx((forward + reverse) / 2, abs=1e-5)


@pytest.mark.slow
def test_lmscore_full_context_shares_the_forward_prefix(smollm2_scorer, monkeypatch):
    """In `full` a target's generations share the header, the reference and the file up to the
    comment in the forward direction: that prefix runs once, the rest on copies of its cache."""
    seen = []
    model = smollm2_scorer.model
    forward = model.forward

    def counting(*args, **kwargs):
        seen.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", counting)
    items = _items("full")[:4]  # one target, 4 generations of which 2 are the same
    smollm2_scorer.pair_scores([p for _, p, _ in items], [r for _, _, r in items], "full", "pl")
    tokens = sum(b * n for b, n in seen)
    each = [len(smollm2_scorer._input(r, p, ContextVariant.FULL, "pl").ids) for _, p, r in items]
    assert seen[0][0] == 1 and seen[0][1] > 30  # the shared prefix (header, file), alone
    assert tokens < sum(each) * 2 * 0.8  # both directions of 4 inputs, far fewer tokens


def _x(ids, first_scored):
    return _Input(tuple(ids), tuple(range(first_scored, len(ids))), {})


def test_prefix_groups_share_the_longest_prefixes_that_save_most():
    a = [_x([1] * 30 + [2] * 40 + [k, 9, 9], 71) for k in (3, 4, 5)]  # share 70 tokens
    b = [_x([1] * 30 + [7] * 40 + [k, 9], 71) for k in (3, 4)]  # share 70 with each other
    alone = _x([5, 6, 7, 8], 2)
    groups, rest = prefix_groups(a + b + [alone], min_shared=16)
    assert sorted((shared, len(members)) for shared, members in groups) == [(70, 2), (70, 3)]
    assert rest == [alone]
    # a prefix stops before the first scored token's position (its logits are needed)
    groups, _ = prefix_groups([_x([1] * 50 + [k], 20) for k in (2, 3)], min_shared=16)
    assert groups[0][0] == 19
    groups, rest = prefix_groups([_x([1] * 50 + [k], 10) for k in (2, 3)], min_shared=16)
    assert groups == [] and len(rest) == 2  # 9 shared tokens: not worth a cache


@pytest.mark.slow
def test_prompt_v2_reads_the_code_first_and_shares_it_in_both_directions(smollm2_scorer):
    tokenizer = smollm2_scorer.tokenizer
    lang, content, comment, predictions = FILES[0]
    content = "".join(f"import module_{k}\n" for k in range(40)) + content  # a file, not a line
    span = (content.index(comment), content.index(comment) + len(comment))
    ref = build_segment(comment, "full", lang, content, span)
    items = [(lang, build_segment(p, "full", lang, content, span), ref) for p in predictions]
    inputs = [smollm2_scorer._input(s, t, ContextVariant.FULL, lang, "v2")
              for _, p, r in items for s, t in ((r, p), (p, r))]
    code = content[:content.index(comment)]
    shared = len(tokenizer(code, add_special_tokens=False)["input_ids"])
    assert len({x.ids[:shared] for x in inputs}) == 1  # the file up to the comment, shared
    groups, alone = prefix_groups(inputs, smollm2_scorer.min_shared_prefix)
    assert len(groups) == 1 and not alone and groups[0][0] >= shared  # one run of the file
    pred, ref = items[1][1], items[1][2]  # "# Sortuje listę" after the reference in place
    text = tokenizer.decode(smollm2_scorer._input(ref, pred, ContextVariant.FULL, lang, "v2").ids)
    assert text.endswith(code + comment + "\n    # Sortuje listę")
    v1 = smollm2_scorer._input(ref, pred, ContextVariant.FULL, lang, "v1")
    assert tokenizer.decode(v1.ids).startswith("Reference comment: " + comment)
