"""`--bleu-tokenize 13a` and `--chrf-tokenize none` give sacrebleu's own sentence BLEU and chrF,
item for item, on the demo dataset (125 generations in five languages) and on cased MT-style
sentences where the comment tokenizer's lower-casing would differ. Scores are sacrebleu's / 100;
BLEU is capped at 1.0 (sacrebleu can return 100.00000000000004 for an identical pair)."""
from __future__ import annotations

import sacrebleu
from sqlalchemy import select

from metrics.lexical import bleu, chrf
from metrics.score import main

CASED = [("The Cat sat on the mat.", "The cat sat on the mat."),
         ("Returns the UTF-8 path, or None.", "Return the path (UTF-8) or None!"),
         ("Berechnet die Summe.", "Berechnet die SUMME aller Werte.")]


def test_pairs_equal_sacrebleu():
    for hypothesis, reference in CASED:
        assert bleu(hypothesis, reference, "en", tokenize="13a").f == \
            min(1.0, sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100)
        assert chrf(hypothesis, reference, "en", tokenize="none").f == \
            sacrebleu.sentence_chrf(hypothesis, [reference]).score / 100
    # the comment tokenizer lower-cases and drops punctuation: not the MT numbers
    hypothesis, reference = CASED[0]
    assert bleu(hypothesis, reference, "en").f != \
        sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100


def _stored(url, signature_start: str) -> dict:
    from db import session_scope
    from db.models import Generation, MetricRun, MetricScore, Target

    query = (select(Generation.predicted_comment, Target.original_comment, MetricScore.f,
                    MetricScore.error)
             .join(MetricScore, MetricScore.generation_id == Generation.id)
             .join(MetricRun, MetricScore.run_id == MetricRun.id)
             .join(Target, Generation.target_id == Target.id)
             .where(MetricRun.signature.startswith(signature_start)))
    with session_scope(url) as session:
        return session.execute(query).all()


def test_every_demo_item_equals_sacrebleu(demo_db_url, capsys):
    db_url = demo_db_url
    assert main(["--metric", "bleu", "--bleu-tokenize", "13a", "--db", db_url,
                 "--no-progress"]) == 0
    assert main(["--metric", "chrf", "--chrf-tokenize", "none", "--db", db_url,
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "signature: metric:bleu|nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp" in out
    assert "signature: metric:chrf|chrF2|nc:6|nw:0|tok:none|case:mixed" in out
    for start, reference_score, cap in (
            ("metric:bleu|nrefs:1|case:mixed", sacrebleu.sentence_bleu, 1.0),
            ("metric:chrf|chrF2|nc:6|nw:0|tok:none", sacrebleu.sentence_chrf, float("inf"))):
        rows = _stored(db_url, start)
        assert len(rows) == 125
        scored = [(p, r, f) for p, r, f, error in rows if error is None]
        assert len(scored) == sum(1 for p, _, _, _ in rows if p.strip())  # empty ones: errors
        assert len(scored) > 100
        for prediction, reference, f in scored:
            expected = min(cap, reference_score(prediction, [reference]).score / 100)
            assert f == expected, prediction

