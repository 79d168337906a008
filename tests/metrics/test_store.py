"""metrics.store on a real SQLite database: what a run selects (file and pairs targets, by
language and dataset), the texts and references around it, the MetricRun found or created once,
noise samples and scores stored once even when another runner stored them first, and what a
resumed run finds already scored. The runner's use of all this: test_runner.py."""
from __future__ import annotations

import hashlib
import math

import pytest
from sqlalchemy import func, select

from db import session_scope
from db.models import Dataset, Generation, MetricRun, MetricScore, NoiseSample, SourceFile, Target
from metrics import store
from metrics.config import ScoringConfig
from metrics.core import PairScore, ScoringItem

FILES = {  # key: (dataset, language, content, comment)
    "nl": ("alpha", "nl", "def som(a, b):\n    # Geeft de som terug\n    return a + b\n",
           "# Geeft de som terug"),
    "zh": ("alpha", "zh", "total = 0  # 返回总和\n", "# 返回总和"),
    "beta": ("beta", "nl", "# Controleert de gebruiker\nok = True\n", "# Controleert de gebruiker"),
}
PAIRS = {  # key: (dataset, language, reference, context)
    "p1": ("alpha", "nl", "Sorteert de lijst", "def sorteer(xs):\n    xs.sort()\n"),
    "p2": ("alpha", "nl", "Leest het bestand", None),
}
MODELS = ("m1", "m2")


@pytest.fixture
def corpus(db_url):
    """Dataset alpha: an nl and a zh file target and two nl pairs targets (one with context);
    dataset beta: one nl file target. Two generations per target (nl's m1 wrote nothing).
    Returns (url, ids): ids of datasets, files, targets and generations by key."""
    ids = {"dataset": {}, "file": {}, "target": {}, "generation": {}}
    with session_scope(db_url) as session:
        for name in ("alpha", "beta"):
            dataset = Dataset(name=name)
            session.add(dataset)
            session.flush()
            ids["dataset"][name] = dataset.id
        targets = {}
        for key, (dataset, lang, content, comment) in FILES.items():
            file = SourceFile(dataset_id=ids["dataset"][dataset], natural_language=lang,
                              programming_language="python", path=f"{key}.py", content=content,
                              content_sha256=hashlib.sha256(content.encode()).hexdigest())
            session.add(file)
            session.flush()
            ids["file"][key] = file.id
            start = content.index(comment)
            targets[key] = Target(source_file_id=file.id, span_start=start,
                                  span_end=start + len(comment), original_comment=comment)
        for key, (dataset, lang, reference, context) in PAIRS.items():
            targets[key] = Target(dataset_id=ids["dataset"][dataset], external_id=key,
                                  natural_language=lang, span_start=0, span_end=0,
                                  original_comment=reference, context=context)
        for key, target in targets.items():
            session.add(target)
            session.flush()
            ids["target"][key] = target.id
            for model in MODELS:
                text = "" if (key, model) == ("nl", "m1") else f"# {model} over {key}"
                generation = Generation(target_id=target.id, model=model, predicted_comment=text)
                session.add(generation)
                session.flush()
                ids["generation"][key, model] = generation.id
    return db_url, ids


def config(metric="bleu", **options) -> ScoringConfig:
    return ScoringConfig(metric, **options).validated()


def count(url, table, *where) -> int:
    with session_scope(url) as session:
        return session.execute(select(func.count()).select_from(table).where(*where)).scalar_one()


# ---------------------------------------------------------------- what a run reads


def test_select_rows_by_language_and_dataset_in_id_order(corpus):
    url, ids = corpus
    every = store.select_rows(url, config())
    assert [r.generation_id for r in every] == sorted(ids["generation"].values())
    keys = {g: key for (key, _model), g in ids["generation"].items()}
    assert [keys[r.generation_id] for r in store.select_rows(url, config(langs=("nl",)))] == [
        "nl", "nl", "beta", "beta", "p1", "p1", "p2", "p2"]
    assert {keys[r.generation_id] for r in store.select_rows(url, config(dataset="alpha"))} == {
        "nl", "zh", "p1", "p2"}
    assert {keys[r.generation_id] for r in store.select_rows(
        url, config(langs=("zh", "el"), dataset="beta"))} == set()

    row = {(keys[r.generation_id], r.prediction): r for r in every}
    empty = row["nl", ""]  # the model that wrote nothing: an empty prediction, not None
    content, comment = FILES["nl"][2:]
    start = content.index(comment)
    assert (empty.target_id, empty.source_file_id, empty.dataset_id, empty.lang) == (
        ids["target"]["nl"], ids["file"]["nl"], ids["dataset"]["alpha"], "nl")
    assert (empty.reference, empty.span, empty.context, empty.is_pairs) == (
        comment, (start, start + len(comment)), None, False)
    pairs = row["p1", "# m2 over p1"]
    assert (pairs.source_file_id, pairs.dataset_id, pairs.lang, pairs.span) == (
        None, ids["dataset"]["alpha"], "nl", None)
    assert (pairs.is_pairs, pairs.reference, pairs.context) == (True, *PAIRS["p1"][2:])
    assert row["p2", "# m1 over p2"].context is None


def test_file_contents_across_batches(corpus, monkeypatch):
    url, ids = corpus
    monkeypatch.setattr(store, "_IN_BATCH", 1)  # one id per IN (...): every batch boundary
    files = ids["file"]
    found = store.file_contents(url, [files["zh"], files["nl"], files["zh"], files["beta"], 999])
    assert found == {files[key]: FILES[key][2] for key in ("nl", "zh", "beta")}
    assert store.file_contents(url, []) == {}


def test_noise_vocabulary_and_pairs_references_per_dataset_and_language(corpus):
    url, ids = corpus
    alpha, beta = ids["dataset"]["alpha"], ids["dataset"]["beta"]
    # files first, then each pairs target's reference (never its context: another language)
    assert store.dataset_texts(url, alpha, "nl") == [FILES["nl"][2], PAIRS["p1"][2],
                                                     PAIRS["p2"][2]]
    assert store.dataset_texts(url, alpha, "zh") == [FILES["zh"][2]]
    assert store.dataset_texts(url, beta, "nl") == [FILES["beta"][2]]
    assert store.dataset_texts(url, beta, "zh") == []
    assert store.pairs_references(url, alpha, "nl") == {
        ids["target"]["p1"]: PAIRS["p1"][2], ids["target"]["p2"]: PAIRS["p2"][2]}
    assert store.pairs_references(url, beta, "nl") == {}


def test_references_cover_the_datasets_in_play_not_the_slice(corpus):
    url, ids = corpus
    t = ids["target"]
    one_row = store.select_rows(url, config(dataset="alpha"))[:1]  # what --limit 1 scores
    assert store.references(url, config(), one_row) == {
        t["nl"]: (FILES["nl"][3], "nl"), t["zh"]: (FILES["zh"][3], "zh"),
        t["p1"]: (PAIRS["p1"][2], "nl"), t["p2"]: (PAIRS["p2"][2], "nl")}
    assert store.references(url, config(langs=("zh",)), one_row) == {
        t["zh"]: (FILES["zh"][3], "zh")}
    every = store.select_rows(url, config())
    assert len(store.references(url, config(), every)) == 5  # beta's target joins


# ---------------------------------------------------------------- the run and what it stores


def test_a_run_is_created_once_and_keeps_its_params(corpus):
    url, _ = corpus
    bleu = config()
    made = []
    run_id, params = store.get_or_create_run(url, bleu, lambda: made.append(1) or {"idf": 3})
    assert params == {"idf": 3} and made == [1]
    again = store.get_or_create_run(url, bleu, lambda: pytest.fail("params made twice"))
    # a run stored without what reports name it by gets it when it is met again
    identity = {"key_options": {}, "higher_is_better": True}
    assert store.run_identity(bleu.validated()) == identity
    assert again == (run_id, {"idf": 3, **identity})
    with session_scope(url) as session:
        run = session.get(MetricRun, run_id)
        assert (run.signature, run.metric, run.context, run.noise, run.seed) == (
            bleu.signature(), "bleu", "none", "none", 0)
        assert run.library_versions["sacrebleu"]
        assert run.params == {"idf": 3, **identity}
    store.store_params(url, run_id, {"idf": 4, **identity})
    assert store.get_or_create_run(url, bleu, dict) == (run_id, {"idf": 4, **identity})
    other, _ = store.get_or_create_run(url, config(seed=1), dict)
    assert other != run_id and count(url, MetricRun) == 2


def test_a_run_another_runner_created_meanwhile_is_taken_not_duplicated(corpus):
    url, _ = corpus
    chrf = config("chrf")
    theirs = []

    def mine():  # between our look-up and our insert, another runner creates the same run
        theirs.append(store.get_or_create_run(url, chrf, lambda: {"by": "them"}))
        return {"by": "me"}

    assert store.get_or_create_run(url, chrf, mine) == theirs[0]
    assert theirs[0][1] == {"by": "them"}
    assert count(url, MetricRun) == 1


def test_noise_samples_per_kind_tokenizer_and_seed_stored_once(corpus):
    url, ids = corpus
    t = ids["target"]
    uniform = config("rouge_l", noise="uniform")
    stored = store.add_noise_samples(url, uniform, {t["nl"]: "a b c", t["zh"]: "一 二"})
    assert {target: text for target, (_id, text) in stored.items()} == {
        t["nl"]: "a b c", t["zh"]: "一 二"}
    assert store.noise_samples(url, uniform, [t["zh"], t["nl"], t["p1"], t["zh"]]) == stored
    assert store.noise_samples(url, config("chrf", noise="uniform"), t.values()) == stored
    assert store.noise_samples(url, config("rouge_l", noise="uniform", seed=1), t.values()) == {}
    assert store.noise_samples(url, config("rouge_l", noise="targeted"), t.values()) == {}
    # another runner stored these first: nothing of ours is written, theirs are what counts
    assert store.add_noise_samples(url, uniform, {t["nl"]: "x", t["p1"]: "y"}) == {}
    assert store.noise_samples(url, uniform, t.values()) == stored
    assert store.add_noise_samples(url, uniform, {}) == {}
    assert count(url, NoiseSample) == 2


def _items(ids, keys, subject="generation"):
    return [ScoringItem(subject, subject_id, 0, "p", "r", "nl") for subject_id in
            (ids[key] for key in keys)]


def _scores(url, run_id):
    with session_scope(url) as session:
        return {row[0] or row[1]: tuple(row[2:]) for row in session.execute(
            select(MetricScore.generation_id, MetricScore.noise_sample_id, MetricScore.precision,
                   MetricScore.recall, MetricScore.f, MetricScore.error, MetricScore.details)
            .where(MetricScore.run_id == run_id))}


def test_scores_are_stored_once_and_a_resumed_run_sees_them(corpus):
    url, ids = corpus
    g = {f"{key}-{model}": gid for (key, model), gid in ids["generation"].items()}
    run_id, _ = store.get_or_create_run(url, config(), dict)
    first = _items(g, ["nl-m1", "nl-m2", "zh-m1"])
    store.insert_scores(url, run_id, first, [
        PairScore(0.5, 0.25, 1 / 3, details={"n": 2}),
        PairScore(math.nan, math.inf, 0.1),  # not a number: stored as no value
        PairScore.failed("tokenizer missing")], noise=False)
    assert _scores(url, run_id) == {
        g["nl-m1"]: (0.5, 0.25, pytest.approx(1 / 3), None, {"n": 2}),
        g["nl-m2"]: (None, None, 0.1, None, {}),
        g["zh-m1"]: (None, None, None, "tokenizer missing", {})}
    assert store.scored_subjects(url, run_id, noise=False) == {g["nl-m1"], g["nl-m2"], g["zh-m1"]}

    # a chunk overlapping what another runner stored: only the new item is added
    store.insert_scores(url, run_id, _items(g, ["nl-m2", "zh-m2"]),
                        [PairScore(0.9, 0.9, 0.9), PairScore(0.7, 0.7, 0.7)], noise=False)
    assert _scores(url, run_id)[g["nl-m2"]][2] == 0.1  # the first value stays
    assert _scores(url, run_id)[g["zh-m2"]][2] == 0.7

    # --retry-errors: the stored error is deleted, so that item is scored again
    assert store.scored_subjects(url, run_id, noise=False, retry_errors=True) == {
        g["nl-m1"], g["nl-m2"], g["zh-m2"]}
    assert g["zh-m1"] not in _scores(url, run_id)
    assert store.scored_subjects(url, run_id, noise=True) == set()


def test_noise_scores_point_at_their_sample(corpus):
    url, ids = corpus
    t = ids["target"]
    uniform = config("bleu", noise="uniform")
    samples = store.add_noise_samples(url, uniform, {t["nl"]: "a b", t["zh"]: "c d"})
    noise_ids = {key: samples[t[key]][0] for key in ("nl", "zh")}
    run_id, _ = store.get_or_create_run(url, uniform, dict)
    store.insert_scores(url, run_id, _items(noise_ids, ["nl", "zh"], "noise"),
                        [PairScore(0.1, 0.1, 0.1), PairScore(0.2, 0.2, 0.2)], noise=True)
    assert store.scored_subjects(url, run_id, noise=True) == set(noise_ids.values())
    assert store.scored_subjects(url, run_id, noise=False) == set()
    with session_scope(url) as session:
        pointed = session.execute(select(MetricScore.noise_sample_id, MetricScore.generation_id)
                                  .where(MetricScore.run_id == run_id)).all()
    assert sorted(pointed) == sorted((n, None) for n in noise_ids.values())
