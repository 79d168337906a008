"""metrics.parallel: shards scored in this process, in a real spawned process pool and on a local
Ray cluster; what the driver does with a failing shard, a hopeless one and a worker process that
dies; the executor options of every grid CLI. The scoring functions the workers run live in
testing/shard_functions.py (importable by name in a spawned process or a Ray worker). The metrics
runner on these executors (same stored scores, resuming): tests/scale/test_executors.py."""
from __future__ import annotations

import argparse
import os
import socket
from types import SimpleNamespace

import pytest

from metrics.parallel import (
    RAY_CONNECT_TIMEOUT_ENV,
    ExecutorError,
    InProcessExecutor,
    ProcessPoolExecutor,
    RayExecutor,
    Shard,
    ShardFailure,
    ShardResult,
    add_executor_arguments,
    check_ray_reachable,
    executor_from_args,
    iter_results,
    make_executor,
    run_shards,
    score_chunks,
    score_shard,
)
from testing import shard_functions


@pytest.fixture(scope="module")
def pool():
    """One spawned worker for the whole module (a worker imports torch as it starts: seconds;
    the runner's grid on two workers is tests/scale/test_executors.py)."""
    executor = ProcessPoolExecutor(workers=1, threads_per_worker=1)
    executor.start()
    yield executor
    executor.close()


@pytest.fixture(params=["inprocess", "process", pytest.param("ray", marks=pytest.mark.slow)])
def executor(request):
    if request.param == "inprocess":
        return InProcessExecutor()
    if request.param == "process":
        return request.getfixturevalue("pool")
    request.getfixturevalue("ray_cluster")
    return RayExecutor()


# ---------------------------------------------------------------- one shard in a worker


def test_score_shard_prepares_scores_and_checks_the_count():
    out = score_shard(shard_functions.prepare_then_report, "payload", ("a", "b"))
    assert [s["item"] for s in out["scores"]] == ["a", "b"]
    assert out["scores"][0]["prepared"][-1] == "payload"  # prepare ran first, with the payload
    assert out["worker"] == f"{socket.gethostname()}:{os.getpid()}"
    assert out["prepare_s"] >= 0 and out["score_s"] >= 0
    with pytest.raises(ExecutorError, match="wrong_count returned 1 scores for 2 items"):
        score_shard(shard_functions.wrong_count, None, ("a", "b"))


# ---------------------------------------------------------------- the driver on each executor


def test_failed_shard_is_retried_and_a_hopeless_one_reported(executor, tmp_path):
    shards = [Shard(f"s{k}", dict(name="flaky", fail_dir=str(tmp_path),
                                  fail_times=1 if k < 3 else 0),
                    tuple(dict(id=10 * k + j, x=10 * k + j) for j in range(3)))
              for k in range(5)]
    shards.append(Shard("hopeless", dict(name="hopeless", fail_dir=str(tmp_path), fail_times=99),
                        (dict(id=999, x=1),)))
    stored = {}

    def store(result):
        assert result.shard.key not in stored, "a shard is written once"
        stored[result.shard.key] = result.scores

    report = run_shards(shards, shard_functions.double_or_fail, executor, on_result=store,
                        retries=2)
    assert sorted(stored) == [f"s{k}" for k in range(5)]
    assert all(s["value"] == 2 * s["id"] for scores in stored.values() for s in scores)
    assert {r.shard.key: r.attempts for r in report.done} == {
        "s0": 2, "s1": 2, "s2": 2, "s3": 1, "s4": 1}
    assert list(report.failed) == ["hopeless"]
    assert "failing attempt 3 on purpose" in report.failed["hopeless"]
    assert report.retried == {"s0": 1, "s1": 1, "s2": 1, "hopeless": 3}
    assert (tmp_path / "hopeless-999").read_text() == "3"  # 1 try + 2 retries, then given up
    assert report.items == 15 and report.wall_s >= report.start_s >= 0


def test_pool_workers_are_other_processes_that_keep_what_they_prepared(pool):
    shards = [Shard(f"s{k}", f"payload-{k}", (k,)) for k in range(6)]
    results = []
    report = run_shards(shards, shard_functions.prepare_then_report, pool, on_result=results.append)
    assert sorted(r.shard.key for r in results) == [f"s{k}" for k in range(6)]
    scores = [(r, r.scores[0]) for r in results]
    pids = {score["pid"] for _, score in scores}
    assert os.getpid() not in pids and len(pids) == 1
    assert all(r.worker.endswith(f":{score['pid']}") for r, score in scores)
    assert {score["omp"] for _, score in scores} == {"1"}  # its share of the cores' threads
    for result, score in scores:
        assert score["prepared"][-1] == result.shard.payload  # prepared in that worker, first
    seen = sorted(len(score["prepared"]) for _, score in scores)
    assert seen == list(range(seen[0], seen[0] + 6))  # the worker keeps its state between shards
    assert report.done == results and set(map(id, results)) <= set(map(id, pool.history))


@pytest.mark.e2e  # a pool worker process dies (os._exit) and a new one is spawned: seconds
def test_a_worker_that_dies_is_replaced_and_its_shard_scored(pool, tmp_path):
    shards = [Shard(f"s{k}", dict(die_at=2, fail_dir=str(tmp_path)), (dict(id=k, x=k),))
              for k in range(4)]
    stored = {}
    report = run_shards(shards, shard_functions.double_or_die, pool, retries=2,
                        on_result=lambda r: stored.update({r.shard.key: r.scores}))
    assert report.failed == {}
    assert stored == {f"s{k}": [dict(id=k, value=2 * k, pid=stored[f"s{k}"][0]["pid"])]
                      for k in range(4)}
    assert (tmp_path / "died").read_text() == "2"  # died once, scored on the second attempt
    assert {r.shard.key: r.attempts for r in report.done}["s2"] == 2
    assert report.retried["s2"] >= 1  # the others in flight when it died were retried too


def test_iter_results_yields_each_outcome_as_it_comes(tmp_path):
    shards = [Shard("good", dict(name="g", fail_dir=str(tmp_path), fail_times=0),
                    (dict(id=1, x=1),)),
              Shard("bad", dict(name="b", fail_dir=str(tmp_path), fail_times=9),
                    (dict(id=2, x=2),))]
    failures = []
    outcomes = list(iter_results(shards, shard_functions.double_or_fail, InProcessExecutor(),
                                 retries=1, on_failure=lambda *f: failures.append(f)))
    assert [type(o) for o in outcomes] == [ShardResult, ShardFailure]
    assert outcomes[0].scores == [dict(id=1, value=2, pid=os.getpid())]
    assert (outcomes[1].shard.key, outcomes[1].attempts) == ("bad", 2)
    assert [(shard.key, attempt) for shard, _error, attempt in failures] == [("bad", 1), ("bad", 2)]
    assert "failing attempt 2 on purpose" in outcomes[1].error


def test_score_chunks_lazily_in_order_or_as_shards_with_failures():
    calls = []

    def times(payload, items):
        calls.append([item.subject_id for item in items])
        if any(item.subject_id == 13 for item in items):
            raise ValueError("thirteen")
        return [payload * item.subject_id for item in items]

    a, b, c, bad = (SimpleNamespace(subject_id=k) for k in (1, 2, 3, 13))
    lazy = score_chunks(times, 10, iter([[a, b], [c]]))
    assert calls == []  # nothing scored before it is asked for
    assert next(lazy) == ([a, b], [10, 20], None) and calls == [[1, 2]]
    assert list(lazy) == [([c], [30], None)]

    calls.clear()
    out = list(score_chunks(times, 10, [[a, b], [], [bad, c]], InProcessExecutor(), retries=1))
    assert out[0] == ([a, b], [10, 20], None)
    assert out[1][:2] == ([bad, c], None) and "ValueError: thirteen" in out[1][2]
    assert calls == [[1, 2], [13, 3], [13, 3]]  # the empty chunk is no shard; 1 retry


# ---------------------------------------------------------------- choosing an executor


def _args(*argv):
    parser = argparse.ArgumentParser()
    add_executor_arguments(parser)
    return parser.parse_args(list(argv))


def test_executor_options():
    assert isinstance(executor_from_args(_args()), InProcessExecutor)
    assert _args().retries == 2
    process = executor_from_args(_args("--executor", "process", "--workers", "3"))
    assert isinstance(process, ProcessPoolExecutor) and process.workers == 3
    assert process.threads == max(1, (os.cpu_count() or 1) // 3)
    assert process.capacity == 6 and process.describe().startswith("process x3")
    ray = executor_from_args(_args("--executor", "ray", "--address", "ray://head:10001"))
    assert isinstance(ray, RayExecutor) and ray.address == "ray://head:10001"
    with pytest.raises(ExecutorError, match="--address is for --executor ray"):
        executor_from_args(_args("--address", "auto"))
    with pytest.raises(ExecutorError, match="--workers must be at least 1, got 0"):
        executor_from_args(_args("--executor", "process", "--workers", "0"))
    with pytest.raises(ExecutorError, match="unknown executor 'dask'; choose one of inprocess"):
        make_executor("dask")


def _closed_port() -> int:
    with socket.socket() as sock:  # bound then released: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_ray_address_is_named_in_seconds(monkeypatch):
    port = _closed_port()
    monkeypatch.setenv(RAY_CONNECT_TIMEOUT_ENV, "3")
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(ExecutorError, match=f"no Ray cluster reachable at {address} "
                                                f"\\(127.0.0.1:{port}: "):
            check_ray_reachable(address)
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(ExecutorError, match="no Ray cluster reachable at auto"):
        check_ray_reachable("auto")


def test_ray_executor_sizes_itself_from_the_cluster(ray_cluster):
    executor = RayExecutor()
    executor.start()
    assert executor.workers == 2 and executor.describe() == "ray x2 (local)"
    executor.close()  # the session's cluster was not started by it: it stays up
    assert ray_cluster.is_initialized()
