"""The study's metric grid (metrics/grids/study.yaml) at the study's size: wall time per metric.

A synthetic database shaped like the demo and the study (`testing.synthetic.study_corpus`: 500
targets x 5 languages x 5 models = 12,500 generations, files of 1.5-12 KB) is scored through the
real path (`metrics.runner.score_configuration`, as `python -m metrics.score --grid` runs it: one
process, models loaded once per model and backend):

- lexical configurations on the whole database (12,500 generations; 2,500 noise samples per
  noise kind: noise is drawn once per target);
- neural configurations on a stratified sample of whole targets (the same number per language,
  each with all 5 generations, so a reference is shared by 5 predictions as at full size),
  extrapolated linearly to 12,500 / 2,500 items. BERTScore's embedding cache is cleared before
  every configuration: at full size one configuration's segments (15,000) outgrow the default
  256 MB cache, so the next configuration starts cold (printed: the cache size the sample
  reached, scaled up); on a sample everything would stay cached and later runs look too cheap.

Per configuration it prints items, wall s, CPU s (this process, all threads, plus children),
items/s, the load average before/after, and where the time went, from timers wrapped around the
runner's steps (exclusive time: a step nested in another counts once): database reads and
writes, noise creation, context building (`build_segment`), tokenisation + windowing, encoder/LM
forward, the rest of scoring (matching, log-softmax; lexical metrics: all of their scoring).
Model load (and the ONNX export when not cached) is timed once per model and backend, before
the clock. The forward passes' token counts give the FLOPs for a GPU estimate (an ESTIMATE from
a stated peak and utilisation, not a measurement).

    python bench/study_grid.py [--sample 10] [--lmscore-sample 2] [--lmscore-full-sample 1]
        [--torch-contexts none,full] [--metrics lexical,bertscore,lmscore] [--skip lmscore:full]
        [--json results.json]
    python bench/study_grid.py --report a.json b.json   # the tables of runs made separately
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GPU_PEAKS = {  # NVIDIA H100 SXM5 datasheet, dense (no sparsity), FLOP/s
    "float16": 989e12,  # FP16/BF16 tensor cores: BERTScore's default on a GPU
    "float32": 67e12,  # FP32 CUDA cores: lmscore runs float32 (TF32 matmul is off in torch)
}
GPU_UTILISATION = (0.05, 0.25)  # sustained share of peak for 33M/135M-parameter models (bench/README.md)
KERNEL_LAUNCH_S = 10e-6  # eager PyTorch, per kernel


class Phases:
    """Exclusive wall time per named step: a step's time less that of the steps inside it."""

    def __init__(self):
        self.seconds: Counter = Counter()
        self._stack: list = []

    def wrap(self, owner, attr: str, name: str) -> None:
        original = getattr(owner, attr)
        phases = self

        def timed(*args, **kwargs):
            frame = [name, time.perf_counter(), 0.0]  # name, start, children's time
            phases._stack.append(frame)
            try:
                return original(*args, **kwargs)
            finally:
                phases._stack.pop()
                elapsed = time.perf_counter() - frame[1]
                phases.seconds[name] += elapsed - frame[2]
                if phases._stack:
                    phases._stack[-1][2] += elapsed

        setattr(owner, attr, timed)


class ForwardWork:
    """Batches, tokens and FLOPs through an encoder or LM forward (counted per call)."""

    def __init__(self):
        self.counts: Counter = Counter()

    def add(self, batch: int, length: int, real: int, per_token: float, attention: float) -> None:
        self.counts["batches"] += 1
        self.counts["padded_tokens"] += batch * length
        self.counts["tokens"] += real
        self.counts["flops"] += batch * length * per_token + batch * length * length * attention


def flops_per_token(config, layers: int, lm_head: bool) -> tuple[float, float]:
    """(linear-layer FLOPs per token, attention FLOPs per token per attended position):
    q/k/v/o projections, the feed-forward (2 matrices, or 3 for gated ones), the LM head; the
    attention scores and weighted sum count the full square (4 h per pair, per layer)."""
    h, f = config.hidden_size, config.intermediate_size
    heads = config.num_attention_heads
    kv = getattr(config, "num_key_value_heads", heads) * (h // heads)
    gated = getattr(config, "hidden_act", "") == "silu"
    linear = (2 * h * h + 2 * h * kv) + (3 if gated else 2) * h * f
    total = 2.0 * linear * layers + (2.0 * h * config.vocab_size if lm_head else 0.0)
    return total, 4.0 * h * layers


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def build_databases(folder: Path, targets: int, samples: dict, seed: int) -> dict:
    """{name: (url, generations, targets)}: the whole corpus and one database per sample size
    (the first k of a seeded shuffle per language, so a smaller sample is inside a larger)."""
    from db import get_engine, session_scope
    from testing.synthetic import insert_corpus, study_corpus

    started = time.perf_counter()
    corpus = study_corpus(targets, seed=seed)
    order = {}
    for lang in sorted({r.lang for r in corpus}):
        indices = list(range(targets))
        random.Random(f"sample-{seed}-{lang}").shuffle(indices)
        order[lang] = indices
    out = {}
    for name, k in {"all": targets, **samples}.items():
        chosen = {(lang, i) for lang, indices in order.items() for i in indices[:k]}
        records = [r for r in corpus if (r.lang, r.index) in chosen]
        url = f"sqlite:///{folder / f'{name}.db'}"
        with session_scope(url) as session:
            n = insert_corpus(session, records, "study-synthetic")
        get_engine(url).dispose()
        out[name] = (url, n, len(records))
    print(f"databases built in {time.perf_counter() - started:.1f} s under {folder}: "
          + ", ".join(f"{name} {n:,} generations / {t:,} targets" for name, (_, n, t) in out.items()))
    return out, corpus


def describe_shape(corpus) -> None:
    """Comment and file lengths per language, and the files' tokens under both models."""
    import statistics

    from transformers import AutoTokenizer

    from models import resolve_model

    tokenizers = {name: AutoTokenizer.from_pretrained(str(resolve_model(name))) for name in
                  ("intfloat/multilingual-e5-small", "HuggingFaceTB/SmolLM2-135M-Instruct")}
    print("shape (median per language; files' tokens over a sample of 50 files per language):")
    for lang in sorted({r.lang for r in corpus}):
        rows = [r for r in corpus if r.lang == lang]
        some = rows[:50]
        tokens = {name: statistics.median(len(t(r.content, add_special_tokens=False)["input_ids"])
                                          for r in some) for name, t in tokenizers.items()}
        reference_chars = statistics.median(len(r.comment) for r in rows)
        print(f"  {lang}: {len(rows)} targets; reference {reference_chars:.0f} "
              f"chars, prediction {statistics.median(len(p[2]) for r in rows for p in r.predictions):.0f} "
              f"chars; file {statistics.median(len(r.content) for r in rows):.0f} chars = "
              + ", ".join(f"{v:.0f} {n.split('/')[1]} tokens" for n, v in tokens.items()))


def instrument(phases: Phases) -> None:
    """Wrap the runner's steps (module attributes looked up at call time) in timers."""
    import metrics.core
    import metrics.neural
    import metrics.runner
    import metrics.store as store
    from metrics.bertscore import BertScorer
    from metrics.likelihood import CausalLMScorer

    for attr in ("select_rows", "references", "scored_subjects", "get_or_create_run",
                 "file_contents", "noise_samples", "store_params", "dataset_texts"):
        phases.wrap(store, attr, "db reads")
    for attr in ("insert_scores", "add_noise_samples"):
        phases.wrap(store, attr, "db writes")
    phases.wrap(metrics.runner, "_ensure_noise", "noise")
    phases.wrap(metrics.core, "score_items", "scoring other")
    phases.wrap(metrics.neural, "build_segment", "context building")
    phases.wrap(BertScorer, "_encode", "tokenisation")
    phases.wrap(CausalLMScorer, "_input", "tokenisation")
    phases.wrap(BertScorer, "_forward", "forward")


def count_forward(scorer, work: ForwardWork, phases: Phases) -> None:
    """Count (and, for the LM, time) each forward of a loaded scorer."""
    from metrics.bertscore import BertScorer

    if isinstance(scorer, BertScorer):
        if getattr(BertScorer._forward, "counted", False):
            return  # the class is wrapped once; every BertScorer counts through it
        per_token, attention = flops_per_token(scorer.encoder.config, scorer.layer, False)
        forward = type(scorer)._forward

        def counted(self, encoded):
            length = max(len(e.input_ids) for e in encoded)
            work.add(len(encoded), length, sum(len(e.input_ids) for e in encoded), per_token,
                     attention)
            return forward(self, encoded)

        counted.counted = True
        BertScorer._forward = counted
        return
    model = scorer.model
    per_token, attention = flops_per_token(model.config, model.config.num_hidden_layers, True)

    def hook(_module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        work.add(ids.shape[0], ids.shape[1], int(mask.sum()) if mask is not None else ids.numel(),
                 per_token, attention)

    model.register_forward_pre_hook(hook, with_kwargs=True)
    phases.wrap(model, "forward", "forward")


def load_model(config, loaded: dict, phases: Phases, work: ForwardWork) -> float:
    """Load (once per model and backend) what a neural configuration needs; its seconds."""
    key = (config.metric, config.model, config.backend)
    if key in loaded:
        return 0.0
    started = time.perf_counter()
    scorer = config.implementation.prepare(config)
    if config.is_lexical:  # imports, WordNet: once per process, like a model load
        from metrics.core import ScoringItem, score_items

        score_items(config, [ScoringItem("generation", 0, 0, "warm up the metric",
                                         "warm the metric up", "en")])
    seconds = time.perf_counter() - started
    if scorer is not None:
        count_forward(scorer, work, phases)
    loaded[key] = (scorer, seconds)
    backend = getattr(scorer, "backend", "torch")
    what = f"{config.model} ({backend})" if scorer is not None else "(imports, data, first call)"
    print(f"load {config.metric} {what}: {seconds:.1f} s, before the clock (once per process, "
          f"as --grid does)", flush=True)
    return seconds


def run_configuration(config, url: str, population: int, phases: Phases, work: ForwardWork,
                      loaded: dict) -> dict:
    from metrics.runner import score_configuration

    scorer = loaded.get((config.metric, config.model, config.backend), (None,))[0]
    if hasattr(scorer, "clear_cache"):
        scorer.clear_cache()  # cold, as at full size (see the module docstring)
    phases.seconds.clear()
    work.counts.clear()
    before = loadavg()
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    summary = score_configuration(config, url, progress=False)
    wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
    after = loadavg()
    if summary.scored == 0 or summary.errors:
        print(f"  warning: {summary.line()}; e.g. {summary.error_examples[:2]}")
    cache_mb = getattr(scorer, "_cache_used", 0) / 2**20
    phases_s = dict(phases.seconds)
    phases_s["runner other"] = max(0.0, wall - sum(phases_s.values()))
    backend = None if scorer is None else getattr(scorer, "backend", "torch")
    return dict(metric=config.metric, context=config.context, noise=config.noise,
                backend=backend,
                items=summary.scored, errors=summary.errors, population=population,
                wall=wall, cpu=cpu, load_before=before, load_after=after, phases=phases_s,
                work=dict(work.counts), cache_mb=cache_mb, dtype=config.dtype)


def gpu_estimate(result: dict) -> tuple[float, float]:
    """(optimistic, pessimistic) seconds for the full population on one H100: the measured
    non-forward time scaled up, plus the forward FLOPs over an assumed sustained throughput
    (or the kernel-launch floor of the measured batch count, whichever is longer)."""
    scale = result["population"] / max(1, result["items"])
    rest = (result["wall"] - result["phases"].get("forward", 0.0)) * scale
    dtype = "float16" if result["metric"] == "bertscore" else "float32"
    kernels = 15 * (9 if result["metric"] == "bertscore" else 30)  # per forward, eager
    out = []
    for share in reversed(GPU_UTILISATION):
        compute = result["work"].get("flops", 0) * scale / (GPU_PEAKS[dtype] * share)
        floor = result["work"].get("batches", 0) * scale * kernels * KERNEL_LAUNCH_S
        out.append(rest + max(compute, floor))
    return out[0], out[1]


def report(results: list, loads: dict) -> None:
    head = (f"{'configuration':34s} {'items':>6s} {'wall s':>8s} {'CPU s':>8s} {'items/s':>8s} "
            f"{'x to full':>9s} {'full wall':>10s}  load before -> after")
    print("\n" + head)
    for r in results:
        scale = r["population"] / max(1, r["items"])
        name = f"{r['metric']} ctx={r['context']} noise={r['noise']}" + (
            f" [{r['backend']}]" if r["backend"] else "")
        print(f"{name:34s} {r['items']:6d} {r['wall']:8.1f} {r['cpu']:8.1f} "
              f"{r['items'] / r['wall']:8.1f} {scale:9.1f} {r['wall'] * scale:9.0f}s  "
              f"{r['load_before']} -> {r['load_after']}")
        share = ", ".join(f"{k} {v:.1f}s ({100 * v / r['wall']:.0f}%)"
                          for k, v in sorted(r["phases"].items(), key=lambda kv: -kv[1]) if v >= 0.05)
        print(f"    where: {share}")
        if r["work"]:
            w = r["work"]
            print(f"    forward: {w['batches']} batches, {w['tokens']:,} tokens "
                  f"({w['padded_tokens']:,} with padding), {w['flops'] / 1e12:.2f} TFLOP; "
                  f"{w['tokens'] / max(r['phases'].get('forward', 0), 1e-9):.0f} tokens/s in forward")
        if r["cache_mb"]:
            print(f"    BERTScore cache after this configuration: {r['cache_mb']:.1f} MB "
                  f"(x{scale:.0f} at full size = {r['cache_mb'] * scale:.0f} MB)")
    print("\ntotals (full size: lexical measured; neural extrapolated from the sample; model "
          "loads once per model and backend)")
    grand = grand_cpu = 0.0
    groups: dict = {}
    for r in results:
        key = (r["metric"] if r["metric"] in ("bertscore", "lmscore") else "lexical",
               r["backend"] if r["metric"] == "bertscore" else "")
        groups.setdefault(key, []).append(r)
    for (group, backend), rows in groups.items():
        wall = sum(r["wall"] * r["population"] / max(1, r["items"]) for r in rows)
        cpu = sum(r["cpu"] * r["population"] / max(1, r["items"]) for r in rows)
        load = sum(s for (m, b), s in loads.items() if m == group and (b == backend or not b))
        line = f"  {group}{f' [{backend}]' if backend else ''}: {len(rows)} configurations, " \
               f"{wall / 3600:.2f} h wall + {load:.0f} s model load; {cpu / 3600:.2f} h CPU"
        if group != "lexical":
            fast, slow = (sum(x) for x in zip(*(gpu_estimate(r) for r in rows)))
            line += f"; GPU ESTIMATE {fast / 3600:.2f}-{slow / 3600:.2f} h"
        by_context = {}
        for r in rows:
            by_context[r["context"]] = by_context.get(r["context"], 0.0) + \
                r["wall"] * r["population"] / max(1, r["items"])
        line += " (" + ", ".join(f"{c} {s / 3600:.2f} h" for c, s in by_context.items()) + ")"
        print(line)
        if not backend or backend == "onnx" or group != "bertscore":
            grand += wall + load
            grand_cpu += cpu
    print(f"  grid (default backends): {grand / 3600:.2f} h wall, {grand_cpu / 3600:.2f} h CPU")
    markdown(groups)


def _hours(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def markdown(groups: dict) -> None:
    """One row per metric (and backend) and context, its three noise kinds together."""
    print("\n| metric | context | items at full size | measured on | wall measured | CPU measured "
          "| wall at full size | CPU at full size | where the time goes | GPU estimate |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (group, backend), rows in groups.items():
        for metric, context in dict.fromkeys((r["metric"], r["context"]) for r in rows):
            part = [r for r in rows if r["context"] == context and r["metric"] == metric]
            items = sum(r["items"] for r in part)
            full = sum(r["population"] for r in part)
            wall = sum(r["wall"] for r in part)
            cpu = sum(r["cpu"] for r in part)
            wall_full = sum(r["wall"] * r["population"] / max(1, r["items"]) for r in part)
            cpu_full = sum(r["cpu"] * r["population"] / max(1, r["items"]) for r in part)
            phases = Counter()
            for r in part:
                phases.update(r["phases"])
            where = ", ".join(f"{k} {100 * v / wall:.0f}%" for k, v in phases.most_common(3)
                              if v / wall >= 0.01)
            measured = "all (measured)" if items == full else f"{items:,} (extrapolated)"
            gpu = "CPU only" if group == "lexical" else " to ".join(dict.fromkeys(
                _hours(sum(x)) for x in zip(*(gpu_estimate(r) for r in part))))
            name = metric + (f" ({backend})" if group == "bertscore" else "")
            print(f"| {name} | {context} | {full:,} | {measured} | {wall:.0f} s | {cpu:.0f} s "
                  f"| {_hours(wall_full)} | {_hours(cpu_full)} | {where} | {gpu} |")


def save(path: str, results: list, loads: dict) -> None:
    Path(path).write_text(json.dumps({"results": results, "loads": {
        f"{m}/{b}": s for (m, b), s in loads.items()}}, indent=1), encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default="metrics/grids/study.yaml")
    parser.add_argument("--targets-per-language", type=int, default=500)
    parser.add_argument("--sample", type=int, default=10,
                        help="targets per language for the neural configurations (x5 models)")
    parser.add_argument("--lmscore-sample", type=int, default=2,
                        help="targets per language for lmscore with context none/minimal")
    parser.add_argument("--lmscore-full-sample", type=int, default=1,
                        help="targets per language for lmscore with context full (slowest)")
    parser.add_argument("--metrics", default="lexical,bertscore,lmscore")
    parser.add_argument("--skip", default="",
                        help="configurations to leave out, e.g. lmscore:full,bertscore:minimal")
    parser.add_argument("--noise", default="none,uniform,targeted",
                        help="only these noise kinds")
    parser.add_argument("--threads", type=int,
                        help="torch intra-op threads (onnx follows torch); default torch's own")
    parser.add_argument("--torch-contexts", default="none,full",
                        help="BERTScore contexts also timed on the torch backend (noise none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", help="build the databases in this folder (default: a temp one)")
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--report", nargs="+", metavar="JSON",
                        help="only print the tables of earlier runs' --json files, together")
    args = parser.parse_args(argv)

    if args.report:
        results, loads = [], {}
        for path in args.report:
            saved = json.loads(Path(path).read_text(encoding="utf-8"))
            results += saved["results"]
            loads.update({tuple(k.split("/")): v for k, v in saved["loads"].items()})
        report(results, loads)
        return 0
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    from metrics.config import load_grid

    wanted = set(args.metrics.split(","))
    configs = [c.validated() for c in load_grid(args.grid)]
    configs = [c for c in configs if (c.metric if not c.is_lexical else "lexical") in wanted]
    skip = {tuple(x.split(":")) for x in args.skip.split(",") if x}
    noise = set(args.noise.split(","))
    configs = [c for c in configs if (c.metric, c.context) not in skip and c.noise in noise]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    torch_contexts = [c for c in args.torch_contexts.split(",") if c]
    configs += [replace(c, backend="torch").validated() for c in configs
                if c.metric == "bertscore" and c.noise == "none" and c.context in torch_contexts]
    folder = Path(args.keep or tempfile.mkdtemp(prefix="study-grid-"))
    folder.mkdir(parents=True, exist_ok=True)
    import torch

    print(f"machine: {os.cpu_count()} CPU cores, torch {torch.get_num_threads()} threads; "
          f"load average {loadavg()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    databases, corpus = build_databases(
        folder, args.targets_per_language,
        {f"sample{k}": k for k in {args.sample, args.lmscore_sample, args.lmscore_full_sample}},
        args.seed)
    describe_shape(corpus)
    del corpus

    phases, work, loaded = Phases(), ForwardWork(), {}
    instrument(phases)
    results, loads = [], Counter()
    for config in configs:
        if config.is_lexical:
            db = "all"
        elif config.metric == "lmscore":
            db = f"sample{args.lmscore_full_sample if config.context == 'full' else args.lmscore_sample}"
        else:
            db = f"sample{args.sample}"
        url, generations, targets = databases[db]
        group = (config.metric if not config.is_lexical else "lexical",
                 config.backend if config.metric == "bertscore" else "")
        loads[group] += load_model(config, loaded, phases, work)
        population = databases["all"][1] if config.noise == "none" else databases["all"][2]
        result = run_configuration(config, url, population, phases, work, loaded)
        results.append(result)
        if args.json:  # after every configuration: an interrupted run keeps what it measured
            save(args.json, results, loads)
        backend = result["backend"] or ("lexical" if config.is_lexical else "torch")
        print(f"{config.metric} ctx={config.context} noise={config.noise} "
              f"[{backend}] on {db}: {result['items']} items in "
              f"{result['wall']:.1f} s wall, {result['cpu']:.1f} s CPU; load "
              f"{result['load_before']} -> {result['load_after']}", flush=True)
    report(results, dict(loads))
    return 0 if results and all(r["items"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
