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

from bench.grid_report import report  # noqa: E402


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

    def add(self, batch: int, length: int, real: int, per_token: float, attention: float,
            context: int = 0, head_rows: int = 0, head: float = 0.0) -> None:
        """``context``: positions attended (cached ones included; default ``length``);
        ``head_rows``: rows per input through an LM head of ``head`` FLOPs a row."""
        self.counts["batches"] += 1
        self.counts["padded_tokens"] += batch * length
        self.counts["tokens"] += real
        self.counts["flops"] += (batch * length * per_token + batch * length
                                 * (context or length) * attention + batch * head_rows * head)


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


GEMM: dict = {}


def gemm_rate(seconds: float = 3.0) -> float:
    """fp32 GFLOP/s of torch matrix products at the models' shapes ((2048 x 576) @ (576 x
    1536) and (2048 x 384) @ (384 x 1536)), best of repeated runs, this process's threads."""
    import torch

    best = 0.0
    for m, k, n in ((2048, 576, 1536), (2048, 384, 1536)):
        a, b = torch.randn(m, k), torch.randn(k, n)
        torch.mm(a, b)
        end = time.perf_counter() + seconds / 2
        while time.perf_counter() < end:
            started = time.perf_counter()
            torch.mm(a, b)
            best = max(best, 2 * m * k * n / (time.perf_counter() - started))
    return best


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


SEEN: set = set()  # every segment BERTScore was asked to embed in this process


def count_forward(scorer, work: ForwardWork, phases: Phases) -> None:
    """Count (and, for the LM, time) each forward of a loaded scorer."""
    from metrics.bertscore import BertScorer

    if isinstance(scorer, BertScorer):
        if getattr(BertScorer._forward, "counted", False):
            return  # the class is wrapped once; every BertScorer counts through it
        per_token, attention = flops_per_token(scorer.encoder.config, scorer.layer, False)
        forward = type(scorer)._forward

        def counted(self, encoded):
            work.counts["texts"] += len(encoded)
            length = max(len(e.input_ids) for e in encoded)
            work.add(len(encoded), length, sum(len(e.input_ids) for e in encoded), per_token,
                     attention)
            return forward(self, encoded)

        counted.counted = True
        BertScorer._forward = counted
        embed = BertScorer.embed

        def recorded(self, segments, *args, **kwargs):  # the minimum: each segment once a process
            fresh = {s for s in segments if s not in SEEN}
            work.counts["minimum_texts"] += len(fresh)
            SEEN.update(fresh)
            return embed(self, segments, *args, **kwargs)

        BertScorer.embed = recorded
        return
    model = scorer.model
    per_token, attention = flops_per_token(model.config, model.config.num_hidden_layers, False)
    head = flops_per_token(model.config, 0, True)[0]

    def hook(_module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        length = ids.shape[1]
        keep = kwargs.get("logits_to_keep", 0)
        rows = keep.numel() if hasattr(keep, "numel") else (keep or length)
        work.add(ids.shape[0], length,
                 int(mask[:, -length:].sum()) if mask is not None else ids.numel(), per_token,
                 attention, mask.shape[1] if mask is not None else length, rows, head)

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
                      loaded: dict, target_scale: float = 1.0) -> dict:
    from metrics.runner import score_configuration

    scorer = loaded.get((config.metric, config.model, config.backend), (None,))[0]
    if hasattr(scorer, "clear_cache"):  # as at full size (see the module docstring)
        from metrics.bertscore import _size

        scorer.clear_cache(references=False)  # a configuration's predictions outgrow it
        kept = sum(_size(seg, emb) for seg, emb in scorer._kept.items())
        while scorer._kept and kept * target_scale > scorer.cache_bytes:  # the oldest go first
            kept -= _size(*scorer._kept.popitem(last=False))
        scorer._cache_used = kept
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
                work=dict(work.counts), cache_mb=cache_mb, dtype=config.dtype,
                gemm=GEMM.get("rate"))


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
    GEMM["rate"] = gemm_rate()
    print(f"fp32 GEMM rate (torch.mm at the models' shapes, {torch.get_num_threads()} threads): "
          f"{GEMM['rate'] / 1e9:.0f} GFLOP/s; load average {loadavg()}", flush=True)
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
        result = run_configuration(config, url, population, phases, work, loaded,
                                   databases["all"][2] / targets)
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
    from testing.bench import run

    sys.exit(run(main, "bench/study_grid.py"))
