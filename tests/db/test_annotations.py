"""db.annotations: validated saves, revisions and history, stale revisions, gold labels, and
concurrent writers on SQLite and PostgreSQL."""
from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select
from sqlmodel import Session

from db import get_engine, session_scope
from db import models as m
from db.annotations import (
    AnnotationError,
    StaleAnnotationError,
    annotation_codes,
    annotation_history,
    get_annotation,
    get_or_create_annotator,
    gold_label_codes,
    save_annotation,
    save_gold_label,
)


def _corpus(session, n_models=2):
    dataset = m.Dataset(name="t")
    session.add(dataset)
    session.flush()
    source = m.SourceFile(dataset_id=dataset.id, natural_language="nl",
                          content="# Tel op\nx = 1\n", content_sha256="0")
    session.add(source)
    session.flush()
    target = m.Target(source_file_id=source.id, span_start=0, span_end=8,
                      original_comment="# Tel op")
    session.add(target)
    session.flush()
    generations = [m.Generation(target_id=target.id, model=f"model-{i}") for i in range(n_models)]
    session.add_all(generations)
    session.flush()
    return [g.id for g in generations]


@pytest.fixture
def corpus(any_db_url):
    with session_scope(any_db_url) as session:
        generations = _corpus(session, 3)
    yield any_db_url, generations
    get_engine(any_db_url).dispose()


def test_save_validates_and_keeps_history(corpus):
    url, (gen, *_) = corpus
    with session_scope(url) as session:
        anna = get_or_create_annotator(session, "anna", languages=["nl"])
        first = save_annotation(session, generation_id=gen, annotator_id=anna.id,
                                accuracy="Partially correct", codes=["se_md", "MS-ET"],
                                note="te kort", seconds_spent=12)
        assert (first.revision, first.accuracy) == (1, "partial")
        second = save_annotation(session, generation_id=gen, annotator_id=anna.id,
                                 accuracy="correct", codes=[], expected_revision=1)
        assert second.id == first.id and second.revision == 2
        assert annotation_codes(session, second.id) == ()
        history = annotation_history(session, second.id)
        assert [(e.revision, e.accuracy, e.codes, e.note) for e in history] == [
            (1, "partial", ["SE-MD", "MS-ET"], "te kort"), (2, "correct", [], "")]
        assert get_or_create_annotator(session, "anna").id == anna.id  # found, not duplicated


def test_stale_revision_is_refused_and_changes_nothing(corpus):
    url, (gen, *_) = corpus
    with session_scope(url) as session:
        anna = get_or_create_annotator(session, "anna")
        save_annotation(session, generation_id=gen, annotator_id=anna.id, accuracy="correct",
                        codes=[])
        save_annotation(session, generation_id=gen, annotator_id=anna.id, accuracy="partial",
                        codes=["SE-MD"], expected_revision=1)
        with pytest.raises(StaleAnnotationError) as caught:
            save_annotation(session, generation_id=gen, annotator_id=anna.id,
                            accuracy="incorrect", codes=["SE-HA2"], expected_revision=1)
        assert (caught.value.expected, caught.value.actual) == (1, 2)
        assert "reload" in str(caught.value)
        with pytest.raises(StaleAnnotationError):  # "I saw none yet" but there is one
            save_annotation(session, generation_id=gen, annotator_id=anna.id,
                            accuracy="incorrect", codes=[], expected_revision=0)
        current = get_annotation(session, gen, anna.id)
        assert (current.revision, current.accuracy) == (2, "partial")
        assert annotation_codes(session, current.id) == ("SE-MD",)
        assert len(annotation_history(session, current.id)) == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"accuracy": "great"}, "unknown accuracy label"),
    ({"accuracy": None}, "needs an accuracy"),
    ({"codes": ["SE-XX"]}, "SE-XX"),
    ({"codes": ["SE"]}, "assign one of its leaves"),
    ({"status": "finished"}, "unknown annotation status"),
    ({"seconds_spent": -1}, ">= 0"),
])
def test_invalid_labels_are_rejected(corpus, kwargs, message):
    url, (gen, *_) = corpus
    with session_scope(url) as session:
        anna = get_or_create_annotator(session, "anna")
        label = {"accuracy": "partial", "codes": ["SE-MD"], **kwargs}
        with pytest.raises(AnnotationError, match=message):
            save_annotation(session, generation_id=gen, annotator_id=anna.id, **label)
        assert get_annotation(session, gen, anna.id) is None


def test_draft_without_accuracy_is_allowed(corpus):
    url, (gen, *_) = corpus
    with session_scope(url) as session:
        anna = get_or_create_annotator(session, "anna")
        draft = save_annotation(session, generation_id=gen, annotator_id=anna.id, accuracy=None,
                                codes=["MS-LT"], status="draft")
        assert draft.accuracy is None and annotation_codes(session, draft.id) == ("MS-LT",)


def test_gold_label_leaves_the_annotators_labels_alone(corpus):
    url, (gen, *_) = corpus
    with session_scope(url) as session:
        anna = get_or_create_annotator(session, "anna")
        lead = get_or_create_annotator(session, "lead", role="lead")
        save_annotation(session, generation_id=gen, annotator_id=anna.id, accuracy="correct",
                        codes=[])
        gold = save_gold_label(session, generation_id=gen, adjudicator_id=lead.id,
                               accuracy="incorrect", codes=["SE-HA3"], note="wrong claim")
        again = save_gold_label(session, generation_id=gen, adjudicator_id=lead.id,
                                accuracy="partial", codes=["SE-MD", "MS-ET"])
        assert again.id == gold.id and again.accuracy == "partial"
        assert gold_label_codes(session, gold.id) == ("MS-ET", "SE-MD")
        mine = get_annotation(session, gen, anna.id)
        assert (mine.accuracy, mine.revision) == ("correct", 1)
        with pytest.raises(AnnotationError, match="may not adjudicate"):
            save_gold_label(session, generation_id=gen, adjudicator_id=anna.id,
                            accuracy="correct", codes=[])


def test_missing_generation_is_a_clear_error(corpus):
    url, _ = corpus
    with session_scope(url) as session:
        anna = get_or_create_annotator(session, "anna")
        with pytest.raises(AnnotationError, match="generation 99999 does not exist"):
            save_annotation(session, generation_id=99999, annotator_id=anna.id,
                            accuracy="correct", codes=[])


def test_concurrent_writers(corpus):
    """Many sessions save the same labels at once: no lost revision, no duplicate row, and of
    the writers that all expected 'no label yet' exactly one wins."""
    url, (free_for_all, first_wins, _) = corpus
    engine = get_engine(url)
    errors, stale, barrier = [], [], threading.Barrier(12)

    def writer(i, generation_id, expected):
        try:
            barrier.wait(timeout=30)
            with Session(engine) as session:
                user = get_or_create_annotator(session, "anna")
                save_annotation(session, generation_id=generation_id, annotator_id=user.id,
                                accuracy="correct", codes=[], note=f"writer {i}",
                                expected_revision=expected)
                session.commit()
        except StaleAnnotationError:
            stale.append(i)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(repr(error))

    threads = [threading.Thread(target=writer, args=(i, free_for_all, None)) for i in range(6)]
    threads += [threading.Thread(target=writer, args=(i, first_wins, 0)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    with Session(engine) as session:
        anna = session.execute(select(m.Annotator).where(m.Annotator.username == "anna")
                               ).scalars().one()
        assert session.execute(select(func.count()).select_from(m.Annotator)).scalar_one() == 1
        shared = get_annotation(session, free_for_all, anna.id)
        assert shared.revision == 6
        assert [e.revision for e in annotation_history(session, shared.id)] == [1, 2, 3, 4, 5, 6]
        won = get_annotation(session, first_wins, anna.id)
        assert won.revision == 1 and len(stale) == 5


def test_an_import_warns_only_about_annotators_signed_in_to_the_app(tmp_path):
    """An import into a copy of the demo warned about the demo's 3 annotators, "active in the
    last 15 minutes" because the demo had just written their labels; so did a second import
    about the first one's. Only someone signed in to the app who signed in or saved lately
    counts."""
    from annotate.service.signin import start_session
    from testing.cli import run_in_process

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    assert run_in_process("db", "demo", "--db", url).returncode == 0
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("item_id\tlanguage\tmodel\treference\tprediction\n"
                     "p-1\tnl\tsys-x\tTel op.\tSom.\n", encoding="utf-8")
    imported = run_in_process("db", "import", "--db", url, "--format", "pairs", str(pairs),
                              "--dataset", "mine")
    assert imported.returncode == 0, imported.stderr
    assert "warning" not in imported.stderr, imported.stderr
    with session_scope(url) as session:  # bas signs in to the app and saves a label
        bas = session.execute(select(m.Annotator).where(m.Annotator.username == "bas")
                              ).scalar_one()
        start_session(session, bas.id)
        gid = session.execute(select(m.Assignment.generation_id).where(
            m.Assignment.annotator_id == bas.id)).scalars().first()
        save_annotation(session, generation_id=gid, annotator_id=bas.id, accuracy="correct",
                        codes=[], note="", seconds_spent=1.0, status="done")
    again = run_in_process("db", "import", "--db", url, "--format", "pairs", str(pairs),
                           "--dataset", "mine")
    assert "warning: 1 annotator(s) saved labels or signed in during the last 15 minutes" \
        in again.stderr, again.stderr
    get_engine(url).dispose()
