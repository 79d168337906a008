"""Where scoring runs: in this process, in a local process pool, or on Ray.

Work is cut into shards, one (payload, batch of items) each (`Shard`). A worker only computes:
it calls the scoring function it was given (a picklable, module-level function
``function(payload, items) -> list of scores``; its optional ``prepare(payload)`` attribute
warms models once per worker process) and returns plain data. The driver (`iter_results`,
`run_shards`) keeps a bounded number of shards in flight, hands each finished shard to the
caller (which writes it to the database: one writer, once), resubmits a failed shard up to
``retries`` times, and reports the ones that still failed while the rest goes on.

    executor = make_executor("ray", address="auto")          # or "inprocess", "process"
    report = run_shards(shards, metrics.core.score_chunk, executor, on_result=store)

The metrics runner (`python -m metrics.score ... --executor process --workers 4`, or
``--executor ray --address auto``) uses `score_chunks` with `metrics.core.score_chunk`.

Executors: `InProcessExecutor` (default; no start-up, no serialisation), `ProcessPoolExecutor`
(``--workers N`` spawned processes, torch threads split between them), `RayExecutor`
(``--address auto`` for a running cluster, ``ray://host:10001`` for a remote one, none for a
local one started here; one GPU per task where the cluster has GPUs).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import socket
import sys
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional

from nlce.cli import UserError

EXECUTORS = ("inprocess", "process", "ray")


class ExecutorError(UserError, RuntimeError, ValueError):
    """An executor that cannot start (Ray missing, cluster unreachable, bad option)."""


@dataclass(frozen=True)
class Shard:
    """One unit of work: a payload and the items to score (picklable plain data)."""
    key: str
    payload: Any  # what the function needs besides the items (the runner: config, setup)
    items: tuple

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class ShardResult:
    """What a worker sent back for a shard, with where and how long."""
    shard: Shard
    scores: list
    worker: str  # host:pid
    prepare_s: float  # loading models for the configuration (0 once memoised in that worker)
    score_s: float  # computing the scores
    round_trip_s: float  # submit to result on the driver (includes queueing and serialisation)
    attempts: int


@dataclass
class GridReport:
    """Outcome of `run_shards`."""
    done: list = field(default_factory=list)  # ShardResult
    failed: dict = field(default_factory=dict)  # shard key -> last error (traceback tail)
    retried: dict = field(default_factory=dict)  # shard key -> number of failed attempts
    wall_s: float = 0.0
    start_s: float = 0.0  # executor start-up (pool spawn, Ray connect)

    @property
    def items(self) -> int:
        return sum(len(r.shard) for r in self.done)


# ------------------------------------------------------------------------------ worker side

def score_shard(function: Callable, payload, items: tuple) -> dict:
    """Run in a worker: score one shard, return scores and timings (plain data)."""
    prepare = getattr(function, "prepare", None)
    started = time.perf_counter()
    if prepare is not None:
        prepare(payload)
    prepared = time.perf_counter()
    scores = function(payload, list(items))
    if len(scores) != len(items):
        name = getattr(function, "__qualname__", repr(function))
        raise ExecutorError(f"{name} returned {len(scores)} scores for {len(items)} items")
    return dict(scores=scores, worker=f"{socket.gethostname()}:{os.getpid()}",
                prepare_s=prepared - started, score_s=time.perf_counter() - prepared)


def _init_process_worker(threads: int, path: list) -> None:
    # Spawned interpreters share the machine's cores: give each its share of torch threads
    # instead of letting every one of them start one thread per core.
    sys.path[:0] = [p for p in path if p not in sys.path]
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["MKL_NUM_THREADS"] = str(threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:  # a scorer without torch
        pass


# ------------------------------------------------------------------------------ executors

class Executor:
    """Submit shards, get `concurrent.futures.Future`s of `score_shard`'s result.

    `history` accumulates the ShardResults (worker, timings) of every run on this executor, for
    benchmarks and reports."""
    name = "?"
    workers = 1

    @property
    def history(self) -> list:
        if "_history" not in self.__dict__:
            self._history = []
        return self._history

    @property
    def capacity(self) -> int:
        """How many shards the driver keeps in flight (enough to keep every worker busy)."""
        return max(1, 2 * self.workers)

    def start(self) -> None:
        pass

    def submit(self, shard: Shard, function: Callable) -> cf.Future:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return f"{self.name} x{self.workers}"

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()


class InProcessExecutor(Executor):
    """Scores in the calling process, one shard at a time (the default)."""
    name = "inprocess"

    @property
    def capacity(self) -> int:
        return 1

    def submit(self, shard: Shard, function: Callable) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(score_shard(function, shard.payload, shard.items))
        except Exception as error:  # noqa: BLE001 - handed to the driver like a remote failure
            future.set_exception(error)
        return future


class ProcessPoolExecutor(Executor):
    """`workers` spawned processes on this machine; each keeps its models between shards."""
    name = "process"

    def __init__(self, workers: int | None = None, threads_per_worker: int | None = None):
        cores = os.cpu_count() or 1
        self.workers = max(1, workers or cores)
        self.threads = threads_per_worker or max(1, cores // self.workers)
        self._pool: cf.ProcessPoolExecutor | None = None

    def start(self) -> None:
        if self._pool is not None:
            return  # already running: keep the workers and the models they loaded
        import multiprocessing

        # spawn, not fork: the driver may already run torch threads, and a forked OpenMP
        # runtime can hang; spawned workers import what they need and keep it.
        self._pool = cf.ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_process_worker, initargs=(self.threads, list(sys.path)))

    def submit(self, shard: Shard, function: Callable) -> cf.Future:
        if self._pool is None:
            self.start()
        try:
            return self._pool.submit(score_shard, function, shard.payload, shard.items)
        except cf.process.BrokenProcessPool:
            # a worker died (out of memory, killed): the pool is unusable, start a new one
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            self.start()
            return self._pool.submit(score_shard, function, shard.payload, shard.items)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def describe(self) -> str:
        return f"process x{self.workers} ({self.threads} torch thread(s) each)"


RAY_CONNECT_TIMEOUT_ENV = "NLCE_RAY_CONNECT_TIMEOUT_S"  # default 10 s


def _ray_bootstrap_address(address: str) -> str | None:
    """host:port behind an --address ("auto": $RAY_ADDRESS or the file `ray start` writes);
    None when Ray itself will say at once that there is nothing to join."""
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "")
        if not address:
            try:
                with open("/tmp/ray/ray_current_cluster") as handle:
                    address = handle.read().strip()
            except OSError:
                return None
    address = address.split("://", 1)[-1].rstrip("/")
    return address if ":" in address else None


def check_ray_reachable(address: str) -> None:
    """Fail in seconds, with the address, where ray.init would wait minutes for a head node that
    is not there (it retries silently, printing only its own warnings)."""
    target = _ray_bootstrap_address(address)
    if target is None:
        return
    host, _, port = target.rpartition(":")
    timeout = float(os.environ.get(RAY_CONNECT_TIMEOUT_ENV, 10))
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except (OSError, ValueError) as error:
        reason = "no answer" if isinstance(error, socket.timeout) else (
            error.strerror or str(error) if isinstance(error, OSError) else str(error))
        raise ExecutorError(
            f"no Ray cluster reachable at {address} ({target}: {reason} within {timeout:g} s; "
            f"${RAY_CONNECT_TIMEOUT_ENV} sets the wait): start one with `ray start --head` or "
            f"fix --address") from None


class RayExecutor(Executor):
    """Ray tasks on a cluster (`address`: "auto", "ray://host:10001", or None for a local one).

    Each task takes `cpus_per_task` CPUs and, where the cluster has GPUs, `gpus_per_task` GPUs
    (default 1), so workers load their models onto their own GPU. Ray reuses worker processes,
    so a model is loaded once per worker process, not per shard.
    """
    name = "ray"

    def __init__(self, address: str | None = None, *, workers: int | None = None,
                 cpus_per_task: float = 1, gpus_per_task: float | None = None,
                 init_kwargs: dict | None = None):
        self.address = address
        self.requested_workers = workers
        self.cpus_per_task = cpus_per_task
        self.gpus_per_task = gpus_per_task
        self.init_kwargs = dict(init_kwargs or {})
        self.workers = workers or 1
        self._remote = None
        self._started_ray = False

    def start(self) -> None:
        if self._remote is not None:
            return
        token = os.path.expanduser("~/.ray/auth_token")
        if self.address and "RAY_AUTH_MODE" not in os.environ and os.path.exists(token):
            # `ray start` turns token authentication on when this file exists, but a Ray 2.60
            # driver joining a cluster only sends the token when told to (before import).
            os.environ["RAY_AUTH_MODE"] = "token"
        try:
            import ray
        except ImportError as error:
            raise ExecutorError("the ray executor needs Ray: pip install 'ray[default]'") from error
        if not ray.is_initialized():
            kwargs = dict(include_dashboard=False, log_to_driver=False, **self.init_kwargs)
            if self.address:
                kwargs["address"] = self.address
            elif self.requested_workers:
                kwargs.setdefault("num_cpus", self.requested_workers)
            if not self.address and "PYTHONPATH" not in os.environ:
                # A local cluster's workers are children of this process: let them import a
                # scorer from wherever the driver can (a cluster's nodes need the package
                # installed instead).
                os.environ["PYTHONPATH"] = os.pathsep.join(
                    p for p in sys.path if p and os.path.isdir(p))
            if self.address:
                check_ray_reachable(self.address)
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as error:
                where = self.address or "a new local cluster"
                raise ExecutorError(f"could not start Ray at {where}: {error}") from error
            self._started_ray = True
        resources = ray.cluster_resources()
        gpus = resources.get("GPU", 0)
        num_gpus = (self.gpus_per_task if self.gpus_per_task is not None else 1) if gpus else 0
        slots = (gpus / num_gpus) if num_gpus else resources.get("CPU", 1) / self.cpus_per_task
        self.workers = max(1, int(self.requested_workers or slots))
        self.num_gpus = num_gpus
        # Retries are the driver's (same policy on every executor), so Ray's are off.
        self._remote = ray.remote(score_shard).options(
            num_cpus=self.cpus_per_task, num_gpus=num_gpus, max_retries=0)

    def submit(self, shard: Shard, function: Callable) -> cf.Future:
        if self._remote is None:
            self.start()
        return self._remote.remote(function, shard.payload, shard.items).future()

    def close(self) -> None:
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False

    def describe(self) -> str:
        gpu = f", {self.num_gpus} GPU/task" if getattr(self, "num_gpus", 0) else ""
        return f"ray x{self.workers} ({self.address or 'local'}{gpu})"


def make_executor(name: str = "inprocess", *, workers: int | None = None,
                  address: str | None = None) -> Executor:
    """The executor a CLI asked for (`add_executor_arguments`)."""
    if name == "inprocess":
        return InProcessExecutor()
    if name == "process":
        return ProcessPoolExecutor(workers)
    if name == "ray":
        return RayExecutor(address, workers=workers)
    raise ExecutorError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """--executor, --workers, --address, --retries: the same flags on every grid CLI."""
    group = parser.add_argument_group("where to score")
    group.add_argument("--executor", choices=EXECUTORS, default="inprocess",
                       help="inprocess (default), a local process pool, or Ray")
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help="process pool size (default: CPU count); Ray: tasks at once "
                            "(default: the cluster's CPUs, or GPUs where it has them)")
    group.add_argument("--address", default=None, metavar="ADDR",
                       help="Ray cluster: 'auto' (a cluster started with `ray start`), "
                            "'ray://HOST:10001'; default: a local Ray started for this run")
    group.add_argument("--retries", type=int, default=2, metavar="N",
                       help="resubmit a failed shard up to N times before reporting it (default 2)")


def executor_from_args(args: argparse.Namespace) -> Executor:
    if args.address and args.executor != "ray":
        raise ExecutorError("--address is for --executor ray")
    if args.workers is not None and args.workers < 1:
        raise ExecutorError(f"--workers must be at least 1, got {args.workers}")
    return make_executor(args.executor, workers=args.workers, address=args.address)


# ------------------------------------------------------------------------------ driver

def _error_text(error: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    return text[-2000:]


@dataclass
class ShardFailure:
    """A shard given up after its retries."""
    shard: Shard
    error: str
    attempts: int


def iter_results(shards: Iterable[Shard], function: Callable, executor: Executor, *,
                 retries: int = 2,
                 report: GridReport | None = None,
                 on_failure: Callable[[Shard, str, int], None] | None = None
                 ) -> Iterator[ShardResult | ShardFailure]:
    """Score every shard on `executor` (taken from `shards` one at a time, as workers get
    free), yielding a ShardResult per finished shard in completion order, or a ShardFailure
    once a shard has failed 1 + `retries` times (the others go on). The caller writes results
    as they come: one writer, in the driver."""
    report = report if report is not None else GridReport()
    started = time.perf_counter()
    executor.start()
    report.start_s = time.perf_counter() - started
    pending: deque[Shard] = deque()  # shards to retry, before new ones
    source = iter(shards)  # pulled only when a worker is free (the runner claims as it goes)
    attempts: dict[str, int] = {}
    in_flight: dict[cf.Future, tuple[Shard, float]] = {}

    def next_shard() -> Shard | None:
        return pending.popleft() if pending else next(source, None)

    try:
        while True:
            while len(in_flight) < executor.capacity:
                shard = next_shard()
                if shard is None:
                    break
                attempts[shard.key] = attempts.get(shard.key, 0) + 1
                in_flight[executor.submit(shard, function)] = (shard, time.perf_counter())
            if not in_flight:
                break
            finished, _ = cf.wait(list(in_flight), return_when=cf.FIRST_COMPLETED)
            for future in finished:
                shard, submitted = in_flight.pop(future)
                try:
                    out = future.result()
                except Exception as error:  # noqa: BLE001 - any worker failure is retried
                    message = _error_text(error)
                    report.retried[shard.key] = report.retried.get(shard.key, 0) + 1
                    if on_failure is not None:
                        on_failure(shard, message, attempts[shard.key])
                    if attempts[shard.key] <= retries:
                        pending.append(shard)
                    else:
                        report.failed[shard.key] = message
                        yield ShardFailure(shard, message, attempts[shard.key])
                    continue
                result = ShardResult(shard, out["scores"], out["worker"], out["prepare_s"],
                                     out["score_s"], time.perf_counter() - submitted,
                                     attempts[shard.key])
                report.done.append(result)
                executor.history.append(result)
                yield result
    finally:
        for future in in_flight:
            future.cancel()
        report.wall_s = time.perf_counter() - started


def run_shards(shards: Iterable[Shard], function: Callable, executor: Executor, *,
               on_result: Callable[[ShardResult], None], retries: int = 2,
               progress: Callable[[ShardResult], None] | None = None,
               on_failure: Callable[[Shard, str, int], None] | None = None) -> GridReport:
    """`iter_results` with a callback: `on_result` is called once per finished shard, in the
    driver (write it to the database there); failures end up in `GridReport.failed`."""
    report = GridReport()
    for outcome in iter_results(shards, function, executor, retries=retries, report=report,
                                on_failure=on_failure):
        if isinstance(outcome, ShardResult):
            on_result(outcome)
            if progress is not None:
                progress(outcome)
    return report


# ------------------------------------------------------------------------------ chunks

def score_chunks(function: Callable, payload, chunks: Iterable[list],
                 executor: Executor | None = None, *, retries: int = 2, key: str = "chunk"
                 ) -> Iterator[tuple[list, Optional[list], Optional[str]]]:
    """(items, scores, None) per chunk, or (items, None, error) for a chunk that failed
    1 + `retries` times. Without an executor: ``function(payload, items)`` in this process, one
    chunk after the other, lazily. With one: every chunk is a shard, results come in
    completion order."""
    if executor is None:
        for items in chunks:
            yield items, function(payload, items), None
        return
    shards = (Shard(f"{key}:{items[0].subject_id}-{items[-1].subject_id}", payload, tuple(items))
              for items in chunks if items)  # lazily: one chunk when a worker is free
    for outcome in iter_results(shards, function, executor, retries=retries):
        if isinstance(outcome, ShardResult):
            yield list(outcome.shard.items), outcome.scores, None
        else:
            yield list(outcome.shard.items), None, outcome.error
