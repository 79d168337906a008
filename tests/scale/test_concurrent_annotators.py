"""Many annotators saving labels on the same items at once, on SQLite and on PostgreSQL.

Eight workers (threads in one process, or eight processes) each make 30 saves through
`db.annotations.save_annotation`, one transaction per save, cycling over the same five
generations. Workers come in pairs sharing one annotator account (two browser tabs of one
person): the even worker saves with `expected_revision` (the app's compare-and-set, reloading and
retrying when someone else saved in between), the odd one without (last writer wins). Every save
carries a unique note, so afterwards each submitted label can be found in the history.

Afterwards, for every (generation, annotator): exactly one annotation row; one AnnotationEvent
per submitted save, each submitted label present exactly once; revisions 1..n with no gap or
repeat; each worker's saves in the order it made them; the current label equal to the newest
event; and nothing from another annotator in it.
"""
from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter, defaultdict

import pytest
from sqlalchemy import func, select

from taxonomy import ACCURACY_LABELS, default_taxonomy

WORKERS = 8
SAVES_PER_WORKER = 30
ITEMS = 5
ANNOTATORS = WORKERS // 2  # two workers per annotator account
MAX_STALE_RETRIES = 500


def label_of(worker: int, save: int, leaves: list[str]) -> dict:
    """The label a worker submits in its `save`-th save: unique note and seconds."""
    codes = sorted({leaves[(worker * 7 + save) % len(leaves)],
                    leaves[(worker + save * 3) % len(leaves)]})
    accuracy = ACCURACY_LABELS[(worker + save) % len(ACCURACY_LABELS)]
    if accuracy == "correct":
        codes = []
    return dict(accuracy=accuracy, codes=codes, note=f"w{worker}:s{save}",
                seconds_spent=float(worker * 1000 + save))


def item_of(worker: int, save: int, generation_ids: list[int]) -> int:
    return generation_ids[(worker + save) % len(generation_ids)]


def annotator_of(worker: int, annotator_ids: list[int]) -> int:
    return annotator_ids[worker // 2]


def run_worker(url: str, worker: int, generation_ids: list[int], annotator_ids: list[int],
               barrier) -> dict:
    """Make SAVES_PER_WORKER saves; returns what was submitted and how often a CAS went stale."""
    from db import session_scope
    from db.annotations import StaleAnnotationError, get_annotation, save_annotation

    leaves = sorted(code.id for code in default_taxonomy().leaves())
    annotator_id = annotator_of(worker, annotator_ids)
    compare_and_set = worker % 2 == 0
    submitted, stale = [], 0
    barrier.wait()
    started = time.perf_counter()
    for save in range(SAVES_PER_WORKER):
        generation_id = item_of(worker, save, generation_ids)
        label = label_of(worker, save, leaves)
        for _attempt in range(MAX_STALE_RETRIES):
            try:
                with session_scope(url) as session:
                    expected = None
                    if compare_and_set:
                        current = get_annotation(session, generation_id, annotator_id)
                        expected = current.revision if current else 0
                    save_annotation(session, generation_id=generation_id,
                                    annotator_id=annotator_id, expected_revision=expected,
                                    **label)
                break
            except StaleAnnotationError:
                stale += 1  # someone saved in between: reload and save again, as the app does
        else:
            raise AssertionError(f"worker {worker} save {save}: stale {MAX_STALE_RETRIES} times")
        submitted.append(dict(generation_id=generation_id, annotator_id=annotator_id, **label))
    return dict(worker=worker, submitted=submitted, stale=stale,
                seconds=time.perf_counter() - started)


def _process_main(url, worker, generation_ids, annotator_ids, barrier, results):
    try:
        results.put(run_worker(url, worker, generation_ids, annotator_ids, barrier))
    except BaseException as error:  # report to the parent instead of dying silently
        results.put(dict(worker=worker, error=f"{type(error).__name__}: {error}"))


def run_in_threads(url, generation_ids, annotator_ids) -> list[dict]:
    barrier = threading.Barrier(WORKERS)
    results, errors = [], []

    def target(worker):
        try:
            results.append(run_worker(url, worker, generation_ids, annotator_ids, barrier))
        except BaseException as error:
            errors.append(f"worker {worker}: {type(error).__name__}: {error}")
            barrier.abort()

    threads = [threading.Thread(target=target, args=(w,)) for w in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


def run_in_processes(url, generation_ids, annotator_ids) -> list[dict]:
    from db import get_engine

    # fork, not spawn: spawn re-imports SQLAlchemy and the taxonomy in eight fresh interpreters
    # (seconds each on a busy 2-core box). The parent's pool is emptied first so that no child
    # inherits (and shares) one of its database connections.
    get_engine(url).dispose()
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(WORKERS), context.Queue()
    processes = [context.Process(target=_process_main,
                                 args=(url, w, generation_ids, annotator_ids, barrier, results))
                 for w in range(WORKERS)]
    for process in processes:
        process.start()
    collected = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0, f"worker process exited with {process.exitcode}"
    errors = [r["error"] for r in collected if "error" in r]
    assert not errors, errors
    return collected


def seed(url: str) -> tuple[list[int], list[int]]:
    from db import session_scope
    from db.annotations import get_or_create_annotator
    from db.models import Dataset, Generation, SourceFile, Target

    with session_scope(url) as session:
        dataset = Dataset(name="concurrency")
        session.add(dataset)
        session.flush()
        source = SourceFile(dataset_id=dataset.id, natural_language="nl",
                            programming_language="python", repo="r", path="a.py",
                            content="x = 1  # zet x\n" * ITEMS, content_sha256="0" * 64)
        session.add(source)
        session.flush()
        generation_ids = []
        for i in range(ITEMS):
            target = Target(source_file_id=source.id, span_start=16 * i + 7,
                            span_end=16 * i + 14, original_comment="# zet x")
            session.add(target)
            session.flush()
            generation = Generation(target_id=target.id, model="m", predicted_comment=f"# {i}")
            session.add(generation)
            session.flush()
            generation_ids.append(generation.id)
        annotator_ids = [get_or_create_annotator(session, f"annotator{k}", languages=["nl"]).id
                         for k in range(ANNOTATORS)]
    return generation_ids, annotator_ids


def check_store(url: str, results: list[dict]) -> None:
    from db import session_scope
    from db.annotations import annotation_codes, annotation_history
    from db.models import Annotation, AnnotationEvent

    submitted = defaultdict(list)  # (generation, annotator) -> labels in submission order
    by_worker_order = {}
    for result in results:
        for order, label in enumerate(result["submitted"]):
            submitted[label["generation_id"], label["annotator_id"]].append(label)
            by_worker_order[label["note"]] = (result["worker"], order)
    assert sum(len(v) for v in submitted.values()) == WORKERS * SAVES_PER_WORKER

    def fingerprint(label):
        return (label["accuracy"], tuple(sorted(label["codes"])), label["note"],
                float(label["seconds_spent"]))

    with session_scope(url) as session:
        rows = session.execute(select(Annotation)).scalars().all()
        keys = Counter((row.generation_id, row.annotator_id) for row in rows)
        assert keys == Counter({key: 1 for key in submitted}), \
            "one annotation row per (generation, annotator) that was labelled, no other"
        total_events = session.execute(select(func.count()).select_from(AnnotationEvent)).scalar()
        assert total_events == WORKERS * SAVES_PER_WORKER
        for row in rows:
            expected = submitted[row.generation_id, row.annotator_id]
            events = annotation_history(session, row.id)
            where = f"generation {row.generation_id}, annotator {row.annotator_id}"
            assert [e.revision for e in events] == list(range(1, len(expected) + 1)), where
            assert row.revision == len(expected), where
            assert {e.annotator_id for e in events} == {row.annotator_id}, where
            stored = [(e.accuracy, tuple(sorted(e.codes)), e.note, float(e.seconds_spent))
                      for e in events]
            assert Counter(stored) == Counter(fingerprint(label) for label in expected), \
                f"{where}: every submitted label exactly once, and nothing else"
            # a worker saves one label after another: its labels keep that order in the history
            per_worker = defaultdict(list)
            for event in events:
                per_worker[by_worker_order[event.note][0]].append(by_worker_order[event.note][1])
            for worker, orders in per_worker.items():
                assert orders == sorted(orders), f"{where}: worker {worker} out of order"
            newest = events[-1]
            assert (row.accuracy, row.note, row.seconds_spent, row.status) == (
                newest.accuracy, newest.note, newest.seconds_spent, newest.status), where
            assert annotation_codes(session, row.id) == tuple(sorted(newest.codes)), where


@pytest.mark.postgres
@pytest.mark.parametrize("workers", ["threads", "processes"])
def test_concurrent_annotators_keep_every_label_and_its_history(any_db_url, workers):
    from db import get_engine

    generation_ids, annotator_ids = seed(any_db_url)
    started = time.perf_counter()
    run = run_in_threads if workers == "threads" else run_in_processes
    results = run(any_db_url, generation_ids, annotator_ids)
    elapsed = time.perf_counter() - started
    assert sorted(r["worker"] for r in results) == list(range(WORKERS))
    check_store(any_db_url, results)
    stale = sum(r["stale"] for r in results)
    print(f"{workers}: {WORKERS * SAVES_PER_WORKER} saves in {elapsed:.1f}s "
          f"(slowest worker {max(r['seconds'] for r in results):.1f}s after the barrier), "
          f"{stale} stale compare-and-set retries")
    get_engine(any_db_url).dispose()
