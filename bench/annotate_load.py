"""Load on the labelling app: N simulated annotators working through their queues at once on
PostgreSQL, with per-action latency percentiles, for N = 1, 2, 4, ... 64.

Each simulated annotator signs in (loads its queue: `service.QueueState.load`; the password
check itself, scrypt under load, is `bench/signin_cost.py`) and then, step
after step, does what the label page does on "save and next":

- save: `service.save_label` with the revision it last saw (compare-and-set), committed, then
  `QueueState.record`;
- next: `service.next_open` on the held queue, then `service.load_item` (the item, its file and
  the annotator's own label) in a new transaction.

Annotators are threads of one process by default, like the sessions of one Streamlit server
(``--processes`` runs each in its own process instead, like several app servers). With no think
time (``--think-ms 0``, the default) every annotator clicks again the moment the previous click
returns: far harsher than people, who spend seconds to minutes per item. The database holds the
study's 12,500 generations (500 files x 5 languages x 5 models); every annotator speaks all five
languages and each generation is assigned to two of the annotators (as many as the largest N).
Everyone signs in first (the sign-in line times that, all at once); then all start clicking
together, and "steps/s" is the throughput of the whole team.

    .venv/bin/python bench/annotate_load.py [--steps 15] [--levels 1,2,4,8,16,32,64,128]

Without --db it starts a throwaway PostgreSQL server on loopback (testing.pgtemp).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotate import service  # noqa: E402
from db import get_engine, session_scope  # noqa: E402
from db.passwords import FAST_HASHES_ENV  # noqa: E402

LABELS = ("correct", "partial", "incorrect")
PATHS = ("baseline", "current")  # bench/load_baseline.py (before issue 17) and annotate.service


def path_functions(path: str):
    """(session_scope, save_label, load_item) of one code path."""
    if path == "baseline":
        from bench import load_baseline as old

        return old.session_scope, old.save_label, old.load_item
    return session_scope, service.save_label, service.load_item
PASSWORD = "load-bench-pass"
TARGET_P95_MS = 300.0
TARGET_P99_MS = 1000.0


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def build_database(url: str, annotators: int) -> list[int]:
    """12,500 generations, `annotators` accounts speaking every language, two per item."""
    from taxonomy import LANGUAGES
    from testing.synthetic import add_synthetic_corpus

    started = time.perf_counter()
    with session_scope(url) as session:
        n = add_synthetic_corpus(session, targets_per_language=500)
    # The accounts' passwords are never checked here ("sign-in" is the queue load; the password
    # check under load is bench/signin_cost.py): hashed at the test-only cost, so that 128
    # accounts take milliseconds instead of a minute of scrypt.
    os.environ[FAST_HASHES_ENV], before = "1", os.environ.get(FAST_HASHES_ENV)
    try:
        with session_scope(url) as session:
            ids = [service.create_annotator(session, username=f"annotator{k:02d}",
                                            password=PASSWORD, languages=list(LANGUAGES),
                                            acting=service.OPERATOR).id
                   for k in range(annotators)]
    finally:
        if before is None:
            del os.environ[FAST_HASHES_ENV]
        else:
            os.environ[FAST_HASHES_ENV] = before
    with session_scope(url) as session:
        assigned = service.assign(session, annotator_ids=ids, per_item=2, strategy="stratified",
                                  acting=service.OPERATOR)
    print(f"database: {n} generations, {annotators} annotators, {assigned} assignments "
          f"(built in {time.perf_counter() - started:.1f}s)", flush=True)
    return ids


def annotate_steps(url: str, annotator_id: int, steps: int, think_s: float, barrier,
                   seed: int, path: str = "current") -> dict:
    """One simulated annotator: sign in, then `steps` x (save, next). Returns latencies (ms)."""
    session_scope, save_label, load_item = path_functions(path)
    out = {"signin": [], "save": [], "next": [], "stale": 0, "errors": []}
    started = time.perf_counter()
    with session_scope(url) as session:
        queue = service.QueueState.load(session, annotator_id, time.time())
    out["signin"].append((time.perf_counter() - started) * 1000)
    index = service.first_open(queue.entries)
    if index is None:
        out["errors"].append("queue already finished")
        barrier.wait()
        return out
    with session_scope(url) as session:
        view = load_item(session, queue.entries[index].generation_id, annotator_id)
    revision = view.own.revision or 0
    barrier.wait()  # everyone signed in: all start clicking together
    for k in range(steps):
        gid = queue.entries[index].generation_id
        label = LABELS[(seed + k) % 3]
        t0 = time.perf_counter()
        try:
            with session_scope(url) as session:
                saved = save_label(session, generation_id=gid, annotator_id=annotator_id,
                                   accuracy=label, codes=["LG-GR1"] if k % 2 else [],
                                   note="", seconds_spent=30.0, status="done",
                                   expected_revision=revision)
            queue.record(gid, saved.status, label)
        except service.StaleAnnotationError:
            out["stale"] += 1  # cannot happen here: one session per annotator
        out["save"].append((time.perf_counter() - t0) * 1000)
        t1 = time.perf_counter()
        index = service.next_open(queue.entries, index)
        if index is None:
            break
        with session_scope(url) as session:
            view = load_item(session, queue.entries[index].generation_id, annotator_id)
        revision = view.own.revision or 0
        out["next"].append((time.perf_counter() - t1) * 1000)
        if think_s:
            time.sleep(think_s)
    return out


def _process_main(url, annotator_id, steps, think_s, barrier, seed, results, path):
    try:
        results.put(annotate_steps(url, annotator_id, steps, think_s, barrier, seed, path))
    except BaseException as error:  # noqa: BLE001 - reported by the parent
        barrier.abort()
        results.put({"signin": [], "save": [], "next": [], "stale": 0,
                     "errors": [f"{type(error).__name__}: {error}"]})


def run_level(url: str, annotator_ids: list[int], steps: int, think_s: float,
              processes: bool, path: str = "current") -> tuple[dict, float]:
    started = time.perf_counter()
    if processes:
        get_engine(url).dispose()  # no pooled connection crosses the fork
        context = multiprocessing.get_context("fork")
        queue, barrier = context.Queue(), context.Barrier(len(annotator_ids))
        workers = [context.Process(target=_process_main, args=(url, a, steps, think_s,
                                                               barrier, k, queue, path))
                   for k, a in enumerate(annotator_ids)]
        for worker in workers:
            worker.start()
        results = [queue.get(timeout=600) for _ in workers]
        for worker in workers:
            worker.join()
    else:
        results = []
        lock, barrier = threading.Lock(), threading.Barrier(len(annotator_ids))

        def target(k, annotator_id):
            try:
                result = annotate_steps(url, annotator_id, steps, think_s, barrier, k, path)
            except BaseException as error:  # noqa: BLE001
                barrier.abort()
                result = {"signin": [], "save": [], "next": [], "stale": 0,
                          "errors": [f"{type(error).__name__}: {error}"]}
            with lock:
                results.append(result)

        threads = [threading.Thread(target=target, args=(k, a))
                   for k, a in enumerate(annotator_ids)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    merged = {"signin": [], "save": [], "next": [], "stale": 0, "errors": []}
    for result in results:
        for key in ("signin", "save", "next", "errors"):
            merged[key] += result[key]
        merged["stale"] += result["stale"]
    return merged, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="a database URL (default: a throwaway PostgreSQL server)")
    parser.add_argument("--levels", default="1,2,4,8,16,32,64,128")
    parser.add_argument("--steps", type=int, default=15, help="save+next steps per annotator")
    parser.add_argument("--think-ms", type=float, default=0.0,
                        help="pause after each step (default 0: click again at once)")
    parser.add_argument("--processes", action="store_true",
                        help="one process per annotator instead of one thread")
    parser.add_argument("--paths", default=",".join(PATHS),
                        help="code paths to measure, in order: baseline (before issue 17, "
                             "bench/load_baseline.py), current (annotate.service); default both")
    parser.add_argument("--no-fsync", action="store_true",
                        help="the throwaway server without fsync (default: fsync on)")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if not paths or any(p not in PATHS for p in paths):
        parser.error(f"--paths takes {', '.join(PATHS)}")

    with ExitStack() as stack:
        url = args.db
        if url is None:
            from testing.pgtemp import temporary_postgres

            server = stack.enter_context(temporary_postgres(durable=not args.no_fsync))
            url = server.create_database("annotate_load")
        backend = url.split(":", 1)[0]
        print(f"machine: {os.cpu_count()} CPU cores, load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; database {backend}; "
              f"annotators as {'processes' if args.processes else 'threads'}; think time "
              f"{args.think_ms:.0f} ms; {args.steps} steps each; "
              + ("server as given" if args.db else "fsync off" if args.no_fsync else "fsync on"),
              flush=True)
        ids = build_database(url, max(levels))
        pool = get_engine(url).pool
        print(f"connection pool: {type(pool).__name__} size {getattr(pool, 'size', lambda: '?')()}"
              f" + overflow {getattr(pool, '_max_overflow', '?')} (db.engine defaults, as the app)")
        header = (f"{'path':<8} {'N':>3} {'action':<7} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} "
                  f"{'p99 ms':>8} {'max ms':>8}  steps/s")
        print(header)
        best: dict[str, int | None] = {path: None for path in paths}
        for n in levels:
            figures: dict[str, dict] = {}
            for path in paths:  # the baseline first, on the same database and machine state
                merged, wall = run_level(url, ids[:n], args.steps, args.think_ms / 1000,
                                         args.processes, path)
                figures[path] = merged
                if merged["errors"]:
                    print(f"{path:<8} {n:>3} errors: {merged['errors'][:3]}")
                for action in ("signin", "save", "next"):
                    samples = merged[action]
                    rate = f"  {len(merged['save']) / wall:.1f}" if action == "next" else ""
                    print(f"{path:<8} {n:>3} {action:<7} {len(samples):>5} "
                          f"{percentile(samples, .5):8.1f} {percentile(samples, .95):8.1f} "
                          f"{percentile(samples, .99):8.1f} "
                          f"{max(samples) if samples else float('nan'):8.1f}{rate}", flush=True)
                ok = (not merged["errors"]
                      and all(percentile(merged[a], .95) < TARGET_P95_MS and
                              percentile(merged[a], .99) < TARGET_P99_MS
                              for a in ("save", "next")))
                if ok and (best[path] is None or n > best[path]):
                    best[path] = n
            if len(figures) == 2:
                def ratio(action, q, figures=figures):
                    return (percentile(figures["current"][action], q)
                            / percentile(figures["baseline"][action], q))

                for action in ("save", "next"):
                    ratios = " ".join(
                        f"p{int(q * 100)} x{ratio(action, q):.2f}"
                        for q in (.5, .95, .99))
                    print(f"ratio    {n:>3} {action:<7} current/baseline: {ratios}")
        for path in paths:
            print(f"{path}: largest N with save and next under {TARGET_P95_MS:.0f} ms at p95 and "
                  f"{TARGET_P99_MS:.0f} ms at p99: "
                  f"{best[path] if best[path] is not None else 'none'}")
        get_engine(url).dispose()
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/annotate_load.py"))
