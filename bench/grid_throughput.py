"""Throughput of the metric grid on each executor: in-process, a local process pool, Ray (a local
cluster, or a running one at --ray-address, e.g. two nodes started with `ray start`).

Scores the same grid (by default BLEU, ROUGE-L and chrF, plus BERTScore with multilingual-e5-small
at layer 6, no context; `--grid lmscore`: SmolLM2's likelihood, no context) over the same
synthetic corpus, through the metrics runner (`metrics.runner.score_configuration`), once per
executor, each on a fresh SQLite database, and prints:

- items/s end to end (start-up, model loading and database writes included) and the ratio
  against in-process;
- per-worker throughput (items / seconds that worker spent computing scores);
- overheads: executor start-up (pool spawn or Ray start, until the first result, less its
  computing time), model loading per worker (`prepare` of the first shard each worker ran),
  serialisation of a shard and its scores (pickle, measured in the driver on the same data),
  and dispatch (round trip less computing, which includes queueing behind busy workers).

    python bench/grid_throughput.py --targets-per-language 40 --models 5 --workers 2
    python bench/grid_throughput.py --grid lmscore --executors inprocess,ray-cluster \
        --ray-address auto --workers 2      # after `ray start --head` + `ray start --address`

The model that a neural configuration needs is loaded once in the driver first (the runner checks
it before creating a run) and not counted in any executor's figures; it is printed on its own.
"""
from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metrics.config import ScoringConfig  # noqa: E402
from metrics.core import ScoringItem, score_items  # noqa: E402
from metrics.parallel import InProcessExecutor, ProcessPoolExecutor, RayExecutor, Shard  # noqa: E402
from testing.synthetic import MODELS, add_synthetic_corpus  # noqa: E402


def grid(kind: str, layer: int) -> list[ScoringConfig]:
    lexical = [ScoringConfig(m).validated() for m in ("bleu", "rouge_l", "chrf")]
    neural = [ScoringConfig("bertscore", layer=layer, context="none").validated()]
    if kind == "lmscore":
        return [ScoringConfig("lmscore", context="none").validated()]
    return {"lexical": lexical, "bertscore": neural, "both": lexical + neural}[kind]


def seed(url: str, targets: int, models: int) -> int:
    from db import get_engine, session_scope

    with session_scope(url) as session:
        n = add_synthetic_corpus(session, targets_per_language=targets, models=MODELS[:models])
    get_engine(url).dispose()
    return n


def serialisation_cost(configs, chunk: int) -> dict:
    """Pickle round trip of one shard (config, setup, items) and of its scores, in the driver."""
    items = [ScoringItem("generation", i, i, "Geeft de som van twee getallen terug",
                         "# Geeft de som van twee getallen terug", "nl")
             for i in range(chunk)]
    shard = Shard("probe", (configs[0], None), tuple(items))
    scores = score_items(ScoringConfig("chrf").validated(), items)
    out = {}
    for name, payload in (("shard", shard), ("scores", scores)):
        started = time.perf_counter()
        for _ in range(20):
            blob = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(blob)
        out[name] = ((time.perf_counter() - started) / 20, len(blob))
    return out


def run_one(name: str, executor, configs, url: str, chunk: int) -> dict:
    from metrics.runner import score_configuration

    started = time.perf_counter()
    summaries = []
    with executor:
        start_s = time.perf_counter() - started
        for config in configs:
            summaries.append(score_configuration(config, url, progress=False, chunk_size=chunk,
                                                 executor=executor))
    wall = time.perf_counter() - started
    history = executor.history
    items = sum(s.scored for s in summaries)
    assert all(s.unscored == 0 for s in summaries), [s.line() for s in summaries]
    per_worker = defaultdict(lambda: [0, 0.0, 0.0])  # items, score s, prepare s
    per_metric = defaultdict(lambda: [0, 0.0])  # (worker, metric) -> items, score s
    for result in history:
        stats = per_worker[result.worker]
        stats[0] += len(result.shard)
        stats[1] += result.score_s
        stats[2] += result.prepare_s
        metric = per_metric[result.worker, result.shard.payload[0].metric]
        metric[0] += len(result.shard)
        metric[1] += result.score_s
    first = min(history, key=lambda r: r.round_trip_s) if history else None
    dispatch = [r.round_trip_s - r.prepare_s - r.score_s for r in history]
    return dict(name=name, describe=executor.describe(), wall=wall, items=items,
                shards=len(history), start_s=start_s,
                first_overhead=(history[0].round_trip_s - history[0].prepare_s
                                - history[0].score_s) if history else 0.0,
                per_worker=dict(per_worker), per_metric=dict(per_metric),
                dispatch_median=statistics.median(dispatch) if dispatch else 0.0, fastest=first)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets-per-language", type=int, default=40)
    parser.add_argument("--models", type=int, default=5, help="generations per target (<= 5)")
    parser.add_argument("--grid", choices=("lexical", "bertscore", "both", "lmscore"), default="both")
    parser.add_argument("--layer", type=int, default=6)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--chunk", type=int, default=128, help="items per shard")
    parser.add_argument("--executors", default="inprocess,process,ray",
                        help="of inprocess, process, ray (a local cluster started for the run) "
                             "and ray-cluster (the running cluster at --ray-address)")
    parser.add_argument("--ray-address", default="auto",
                        help="the cluster ray-cluster joins (default: the one `ray start` made)")
    args = parser.parse_args(argv)

    configs = grid(args.grid, args.layer)
    folder = Path(tempfile.mkdtemp(prefix="grid-bench-"))
    print(f"machine: {os.cpu_count()} CPU cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    neural = [c for c in configs if not c.is_lexical]
    if neural:
        started = time.perf_counter()
        for config in neural:
            config.implementation.prepare(config)
        print(f"driver model load (runner's check, not counted below): "
              f"{time.perf_counter() - started:.1f}s")
    probe = serialisation_cost(configs, args.chunk)
    print(f"serialisation (pickle dumps+loads, {args.chunk}-item shard): shard "
          f"{probe['shard'][0] * 1e3:.2f} ms / {probe['shard'][1] / 1024:.0f} KiB, scores "
          f"{probe['scores'][0] * 1e3:.2f} ms / {probe['scores'][1] / 1024:.0f} KiB")

    factories = {"inprocess": InProcessExecutor,
                 "process": lambda: ProcessPoolExecutor(args.workers),
                 "ray": lambda: RayExecutor(workers=args.workers),
                 "ray-cluster": lambda: RayExecutor(args.ray_address, workers=args.workers)}
    results = []
    for name in args.executors.split(","):
        url = f"sqlite:///{folder / f'{name}.db'}"
        n = seed(url, args.targets_per_language, args.models)
        print(f"\n[{name}] {n} generations x {len(configs)} configurations "
              f"({', '.join(c.metric for c in configs)}), shards of {args.chunk}", flush=True)
        result = run_one(name, factories[name](), configs, url, args.chunk)
        results.append(result)
        rate = result["items"] / result["wall"]
        print(f"  {result['describe']}: {result['items']} items in {result['wall']:.1f}s = "
              f"{rate:.1f} items/s ({result['shards']} shards)")
        print(f"  start-up {result['start_s']:.2f}s; first shard's non-compute time "
              f"{result['first_overhead']:.2f}s (spawn/import/connect); median dispatch+queue "
              f"per shard {result['dispatch_median'] * 1e3:.0f} ms")
        for worker, (items, score_s, prepare_s) in sorted(result["per_worker"].items()):
            rates = ", ".join(f"{metric} {n / t:.0f}/s" for (w, metric), (n, t)
                              in sorted(result["per_metric"].items()) if w == worker and t)
            print(f"  worker {worker}: {items} items in {score_s:.1f}s computing "
                  f"({items / score_s if score_s else 0:.1f} items/s: {rates}), model load "
                  f"{prepare_s:.1f}s")

    base = next((r for r in results if r["name"] == "inprocess"), None)
    print("\nsummary (items/s end to end; ratio against in-process)")
    for r in results:
        rate = r["items"] / r["wall"]
        ratio = f"{rate / (base['items'] / base['wall']):.2f}x" if base else "-"
        compute = sum(s for _, s, _ in r["per_worker"].values())
        load = max((p for _, _, p in r["per_worker"].values()), default=0.0)
        workers = len(r["per_worker"]) or 1
        warm = r["items"] / (compute / workers) if compute else 0.0
        print(f"  {r['name']:<10} {rate:8.1f} items/s  {ratio:>6}  wall {r['wall']:6.1f}s  "
              f"workers {workers}  compute {compute:6.1f}s  slowest model load {load:5.1f}s  "
              f"warm {warm:6.1f} items/s (items / compute per worker)")
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/grid_throughput.py"))
