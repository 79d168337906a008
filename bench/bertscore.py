"""Benchmark: this project's BERTScore against the `bert-score` package, same run, same model.

The workload is the study's shape: 500 references x 5 predictions = 2,500 pairs, 100 references
in each of en, nl, pl, el, zh, synthesised from comment templates (identifiers, numbers, CJK) with
seeded variations for the predictions (dropped/swapped/replaced words, truncation, additions,
an unrelated comment). Both scorers load the model before the clock starts and are warmed up;
each is timed `--repeats` times (alternating) and the best wall time (and, for shared machines,
the best CPU time of this process) is reported. The F values must agree within
`--tolerance` (default 1e-4) or the script exits with status 1.

It also counts the tokens each scorer's encoder ran on (batch padding included) and prints
tokens/s and the share of the CPU's float32 GEMM peak that rate is (the encoder's linear-layer
FLOPs per token against `torch.nn.functional.linear` timed at the encoder's shapes, here, before
the runs), and the most an exact scorer can gain over the package on this machine: tokens saved
x (GEMM peak / the package's share of it), since both are bound by fp32 matrix products.
Columns: the package, this project on the torch backend, and on the ONNX Runtime backend
(metrics.encoders; its load and one-time export are timed and the export's size shown);
the tolerance applies to both. `--bf16` adds torch in bfloat16, outside the tolerance. The
machine's load average is printed before and after: wall times mean little on a busy machine,
so the CPU-time ratio (this process's CPU seconds over all its threads, busy-waiting included)
is printed next to the wall-time speed-up.

    python bench/bertscore.py [--model intfloat/multilingual-e5-small] [--layer 9] [--bf16]
        [--study] [--repeats 3] [--backends torch,onnx,openvino]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TEMPLATES = {
    "en": ["Returns the {obj} of the current {ctx}.", "Compute the {obj} for each {ctx} in `{ident}`.",
           "Checks whether {ident} is valid before writing the {obj}.",
           "Initialise the {obj} cache and reset {ident} to {num}.",
           "Helper that converts the {obj} into a {ctx} string, see {call}."],
    "nl": ["Geeft de {obj} van de huidige {ctx} terug.", "Bereken de {obj} voor elke {ctx} in `{ident}`.",
           "Controleert of {ident} geldig is voordat de {obj} wordt geschreven.",
           "Initialiseer de {obj}-cache en zet {ident} op {num}.",
           "Hulpfunctie die de {obj} omzet naar een {ctx}, zie {call}."],
    "pl": ["Zwraca {obj} bieżącego {ctx}.", "Oblicza {obj} dla każdego {ctx} w `{ident}`.",
           "Sprawdza, czy {ident} jest poprawny przed zapisaniem {obj}.",
           "Inicjalizuje pamięć podręczną {obj} i ustawia {ident} na {num}.",
           "Funkcja pomocnicza, która zamienia {obj} na {ctx}, zobacz {call}."],
    "el": ["Επιστρέφει το {obj} του τρέχοντος {ctx}.", "Υπολογίζει το {obj} για κάθε {ctx} στο `{ident}`.",
           "Ελέγχει αν το {ident} είναι έγκυρο πριν γράψει το {obj}.",
           "Αρχικοποιεί την κρυφή μνήμη {obj} και θέτει το {ident} σε {num}.",
           "Βοηθητική συνάρτηση που μετατρέπει το {obj} σε {ctx}, δείτε {call}."],
    "zh": ["返回当前{ctx}的{obj}。", "为`{ident}`中的每个{ctx}计算{obj}。",
           "在写入{obj}之前检查{ident}是否有效。", "初始化{obj}缓存并将{ident}设置为{num}。",
           "将{obj}转换为{ctx}字符串的辅助函数，参见{call}。"],
}
WORDS = {
    "en": (["user name", "checksum", "file size", "timeout", "index", "token list", "matrix"],
           ["session", "request", "node", "record", "window", "batch"]),
    "nl": (["gebruikersnaam", "controlesom", "bestandsgrootte", "time-out", "index", "matrix"],
           ["sessie", "aanvraag", "knoop", "record", "venster", "batch"]),
    "pl": (["nazwę użytkownika", "sumę kontrolną", "rozmiar pliku", "limit czasu", "indeks"],
           ["sesji", "żądania", "węzła", "rekordu", "okna", "partii"]),
    "el": (["όνομα χρήστη", "άθροισμα ελέγχου", "μέγεθος αρχείου", "χρονικό όριο", "ευρετήριο"],
           ["συνεδρίας", "αιτήματος", "κόμβου", "εγγραφής", "παραθύρου", "δέσμης"]),
    "zh": (["用户名", "校验和", "文件大小", "超时时间", "索引", "矩阵"],
           ["会话", "请求", "节点", "记录", "窗口", "批次"]),
}
IDENTS = ["user_id", "maxRetries", "self.buffer", "config.get()", "parseHeader()", "MAX_SIZE"]


def _comment(rng: random.Random, lang: str) -> str:
    objs, ctxs = WORDS[lang]
    text = rng.choice(TEMPLATES[lang]).format(
        obj=rng.choice(objs), ctx=rng.choice(ctxs), ident=rng.choice(IDENTS),
        num=rng.randint(0, 4096), call=f"{rng.choice(IDENTS).rstrip('()')}()")
    if rng.random() < 0.4:  # longer comments too: a second sentence
        text += " " + rng.choice(TEMPLATES[lang]).format(
            obj=rng.choice(objs), ctx=rng.choice(ctxs), ident=rng.choice(IDENTS),
            num=rng.randint(0, 99), call="run()")
    return text


def _variation(rng: random.Random, lang: str, ref: str, k: int) -> str:
    units = list(ref) if lang == "zh" else ref.split()
    join = "".join if lang == "zh" else " ".join
    kind = k % 5
    if kind == 0 and len(units) > 3:  # drop a unit
        del units[rng.randrange(len(units))]
    elif kind == 1 and len(units) > 3:  # swap two neighbours
        i = rng.randrange(len(units) - 1)
        units[i], units[i + 1] = units[i + 1], units[i]
    elif kind == 2:  # replace a unit with a word of the language
        units[rng.randrange(len(units))] = rng.choice(WORDS[lang][0])
    elif kind == 3:  # truncate (early termination) or extend (late termination)
        units = units[:max(2, len(units) * 2 // 3)] if rng.random() < 0.5 else units + units[:3]
    else:  # an unrelated comment of the same language
        return _comment(rng, lang)
    return join(units)


def workload(n_refs: int = 500, preds_per_ref: int = 5, seed: int = 0):
    """(predictions, references, languages): n_refs x preds_per_ref pairs over five languages."""
    rng = random.Random(seed)
    langs = list(TEMPLATES)
    preds, refs, pair_langs = [], [], []
    seen = set()
    for i in range(n_refs):
        lang = langs[i % len(langs)]
        ref = _comment(rng, lang)
        while ref in seen:  # distinct references
            ref = _comment(rng, lang)
        seen.add(ref)
        for k in range(preds_per_ref):
            preds.append(_variation(rng, lang, ref, k))
            refs.append(ref)
            pair_langs.append(lang)
    return preds, refs, pair_langs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="intfloat/multilingual-e5-small")
    parser.add_argument("--layer", type=int, default=9)
    parser.add_argument("--refs", type=int, default=500)
    parser.add_argument("--preds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="the bert-score package's batch size")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--device", default=None)
    parser.add_argument("--backends", default="torch,onnx,openvino",
                        help="this project's encoder backends to time (comma-separated)")
    parser.add_argument("--full", type=int, default=0, metavar="N_REFS",
                        help="also time torch against onnx with context full on the first N_REFS "
                             "references, each inside a synthetic file that fills the model's "
                             "512-token window (the package has no context: no column for it)")
    parser.add_argument("--bf16", action="store_true",
                        help="also time this project in bfloat16 (faster on CPUs with bfloat16 "
                             "units, not within the tolerance)")
    parser.add_argument("--study", action="store_true",
                        help="also time the study's shape: one call per generating model, then "
                             "two noise kinds, all against the same references (encoded once "
                             "here, once per call by the package)")
    args = parser.parse_args(argv)

    import torch
    from bert_score import BERTScorer as PackageScorer

    from metrics.bertscore import BertScorer
    from models import pick_device, resolve_model

    device = pick_device(args.device)
    folder = str(resolve_model(args.model))
    preds, refs, langs = workload(args.refs, args.preds)
    print(f"workload: {len(preds)} pairs, {len(set(refs))} references, "
          f"{len(set(preds) | set(refs))} distinct texts, languages {sorted(set(langs))}")
    print(f"model {args.model} layer {args.layer} on {device}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")

    print(f"load average (1, 5, 15 min) before: {_load()}")
    package = PackageScorer(model_type=folder, num_layers=args.layer, batch_size=args.batch_size,
                            device=device)
    from models import load_encoder

    started = time.perf_counter()
    model, tokenizer = load_encoder(args.model, device=device)
    print(f"model load (torch, from the model cache): {time.perf_counter() - started:.1f} s")
    package_tokens = _count_encoder_tokens(package._model)
    scorers = {"bert-score": None}
    from metrics.encoders import RUNTIMES, onnx_available

    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if backend in RUNTIMES and not onnx_available(RUNTIMES[backend]):
            print(f"backend {backend}: {RUNTIMES[backend]} is not installed; skipped "
                  f"(pip install -e '.[bench]')")
            continue
        started = time.perf_counter()
        scorer = BertScorer(model, tokenizer, args.layer, model_name=args.model, device=device,
                            dtype="float32", backend=backend)  # batching by token budget
        if scorer.backend != backend:
            print(f"backend {backend} is not available here; skipped")
            continue
        scorers[backend] = scorer
        if backend == "onnx":
            _describe_export(scorer, time.perf_counter() - started)
    ours = next(s for s in scorers.values() if s is not None)
    if args.bf16:
        scorers["torch bfloat16"] = BertScorer(ours.encoder, ours.tokenizer, None, device=device,
                                               dtype="bfloat16", backend="torch")
    peak = _gemm_peak(ours.encoder.config, ours.max_batch_tokens)
    peaks = [peak]  # measured again between the rounds: under load the first can be low
    flops_per_token = _linear_flops_per_token(ours.encoder.config, ours.layer)
    print(f"fp32 GEMM peak at the encoder's shapes (torch linear, {torch.get_num_threads()} "
          f"threads, best of 5): {peak / 1e9:.0f} GFLOP/s before the runs; encoder linear "
          f"layers: {flops_per_token / 1e6:.1f} MFLOP/token")
    ok = True

    def run(name, jobs):
        if name == "bert-score":
            return [package.score(p, r, batch_size=args.batch_size)[2].tolist() for p, r in jobs]
        scorer = scorers[name]
        scorer.clear_cache()  # every timed repetition starts cold
        return [[s.f for s in scorer.score(p, r)] for p, r in jobs]

    def padded_tokens(name):  # encoder tokens so far, padding included
        return (package_tokens["padded"] if name == "bert-score"
                else scorers[name].work["padded_tokens"])

    def compare(title, jobs):
        nonlocal ok
        n_pairs = sum(len(p) for p, _ in jobs)
        best = {name: float("inf") for name in scorers}
        cpu = dict(best)
        tokens, f_values = {}, {}
        for rep in range(args.repeats):  # alternate (order reversed every other round), best of
            for name in (list(scorers) if rep % 2 == 0 else list(scorers)[::-1]):
                before = padded_tokens(name)
                started, started_cpu = time.perf_counter(), time.process_time()
                f_values[name] = [x for fs in run(name, jobs) for x in fs]
                best[name] = min(best[name], time.perf_counter() - started)
                cpu[name] = min(cpu[name], time.process_time() - started_cpu)
                tokens[name] = padded_tokens(name) - before
            peaks.append(_gemm_peak(ours.encoder.config, ours.max_batch_tokens))
        peak = max(peaks)
        print(f"\n{title}: {n_pairs} pairs in {len(jobs)} call(s); fp32 GEMM peak (torch linear, "
              f"best before and between the rounds): {peak / 1e9:.0f} GFLOP/s")
        print("  scorer            wall s   pairs/s  CPU s  encoder tokens  tokens/s  GEMM peak  "
              "speed-up  CPU-time ratio  max|F diff|")
        for name in scorers:
            f_list = f_values[name]
            bad = sum(1 for x in f_list if x is None)
            diff = max(abs(a - b) for a, b in zip(f_list, f_values["bert-score"]) if a is not None)
            rate = tokens[name] / best[name]
            print(f"  {name:16s} {best[name]:7.2f} {n_pairs / best[name]:9.1f} {cpu[name]:6.1f} "
                  f"{tokens[name]:15,d} {rate:9.0f} {rate * flops_per_token / peak:9.0%} "
                  f"{best['bert-score'] / best[name]:8.2f}x  {cpu['bert-score'] / cpu[name]:13.2f}x"
                  f"  {diff:.2e}"
                  + (f"  failed items: {bad}" if bad else ""))
            if name in ("torch", "onnx", "openvino"):
                ok = ok and diff <= args.tolerance and not bad
        saved = tokens['bert-score'] / tokens[list(scorers)[1]]
        print(f"  tolerance {args.tolerance:g} applies to torch, onnx, openvino (float32); tokens "
              f"include batch padding. Token ratio (the speed-up if both ran tokens equally "
              f"fast): {saved:.2f}x; load average now: {_load()}")
        # the encoder is bound by fp32 matrix products: an exact scorer can save tokens and run
        # them at the GEMM peak at most, so the package's own share of that peak caps the ratio;
        # a backend whose kernels beat torch's linear shows the peak is higher than measured
        rates = {name: tokens[name] / best[name] * flops_per_token for name in scorers}
        top = max(peak, *rates.values())
        share = rates["bert-score"] / top
        above = (f" (peak: {max(rates, key=rates.get)}'s rate, {top / 1e9:.0f} GFLOP/s, above "
                 f"torch's linear)" if top > peak else "")
        print(f"  limit on this machine: tokens saved x (GEMM peak / bert-score's share of it) "
              f"= {saved:.2f} x (1 / {share:.0%}) = {saved / share:.2f}x{above}")

    for name in scorers:  # warm each up (thread pools, first-call costs)
        run(name, [(preds[:20], refs[:20])])
    compare(f"one call: {args.refs} references x {args.preds} predictions", [(preds, refs)])
    if args.study:
        from metrics.noise import hf_noise_tokenizer, make_noise

        tok = hf_noise_tokenizer(tokenizer, args.model)
        distinct = list(dict.fromkeys(refs))
        contexts = [_code_context(random.Random(i), i) for i in range(len(distinct))]
        uniform = [make_noise("uniform", r, tok, 0, i) for i, r in enumerate(distinct)]
        targeted = [make_noise("targeted", r, tok, 0, i, context=c)
                    for i, (r, c) in enumerate(zip(distinct, contexts))]
        per_model = [(preds[k::args.preds], refs[k::args.preds]) for k in range(args.preds)]
        compare(f"study shape: a call per generating model ({args.preds}, as the release's "
                f"predict_<model> files come), then uniform and targeted noise",
                per_model + [(uniform, distinct), (targeted, distinct)])
    if args.full:
        ok = _compare_full_context(scorers, preds, refs, langs, args) and ok
    return 0 if ok else 1


def _compare_full_context(scorers, preds, refs, langs, args) -> bool:
    """torch vs onnx on long inputs: context full, windows of up to the model's maximum."""
    from metrics.context import build_segment

    backends = [n for n in ("torch", "onnx", "openvino") if n in scorers]
    n_pairs = args.full * args.preds
    segments = ([], [])
    for i in range(n_pairs):
        rng = random.Random(i // args.preds)
        before = "\n".join(_code_context(rng, k) for k in range(12)) + "\n# "
        content = before + refs[i] + "\n" + "\n".join(_code_context(rng, k) for k in range(6))
        span = (len(before), len(before) + len(refs[i]))
        segments[0].append(build_segment(preds[i], "full", langs[i], content, span))
        segments[1].append(build_segment(refs[i], "full", langs[i], content, span))
    best, f_values, tokens = {}, {}, {}
    for rep in range(args.repeats):
        for name in (backends if rep % 2 == 0 else backends[::-1]):
            scorer = scorers[name]
            scorer.clear_cache()
            before_tokens = scorer.work["padded_tokens"]
            started = time.perf_counter()
            f_values[name] = [s.f for s in scorer.score_segments(*segments, match_special=False)]
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
            tokens[name] = scorer.work["padded_tokens"] - before_tokens
    print(f"\ncontext full: {n_pairs} pairs, each text inside a file windowed to "
          f"{scorers[backends[0]].max_tokens} tokens")
    for name in backends:
        print(f"  {name:16s} {best[name]:7.2f} s {n_pairs / best[name]:9.1f} pairs/s "
              f"{tokens[name]:12,d} tokens {tokens[name] / best[name]:9.0f} tokens/s "
              f"{best[backends[0]] / best[name]:6.2f}x")
    if len(backends) < 2:
        return True
    first, diff = backends[0], 0.0
    for name in backends[1:]:
        d = max(abs(a - b) for a, b in zip(f_values[first], f_values[name]))
        print(f"  max |F {first} - F {name}| = {d:.2e} (tolerance {args.tolerance:g})")
        diff = max(diff, d)
    return diff <= args.tolerance


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def _describe_export(scorer, seconds: float) -> None:
    import json

    from metrics.encoders import EXPORT_MANIFEST

    folder = scorer.engine.path.parent
    manifest = json.loads((folder / EXPORT_MANIFEST).read_text(encoding="utf-8"))
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    print(f"onnx backend: ready in {seconds:.1f} s here (export + session start, or session "
          f"start from the cache); the export took {manifest['export_seconds']} s when made; "
          f"cache {folder} holds {size / 2**20:.0f} MiB")


def _linear_flops_per_token(config, layers: int) -> float:
    """Multiply-adds x 2 of one token through ``layers`` encoder layers' linear layers (q, k, v,
    attention output, the two feed-forward layers); attention scores are left out (short texts)."""
    h, f = config.hidden_size, config.intermediate_size
    return 2.0 * (4 * h * h + 2 * h * f) * layers


def _gemm_peak(config, tokens: int) -> float:
    """Best fp32 FLOP/s of torch's linear at the encoder's shapes and batch size (token budget)."""
    import torch

    h, f = config.hidden_size, config.intermediate_size
    x_h, x_f = torch.randn(tokens, h), torch.randn(tokens, f)
    shapes = [(x_h, torch.randn(h, h)), (x_h, torch.randn(f, h)), (x_f, torch.randn(h, f))]
    best = 0.0
    with torch.inference_mode():
        for _ in range(5):
            started = time.perf_counter()
            flops = 0.0
            for x, w in shapes:
                for _ in range(4):
                    torch.nn.functional.linear(x, w)
                    flops += 2.0 * x.shape[0] * x.shape[1] * w.shape[0]
            best = max(best, flops / (time.perf_counter() - started))
    return best


def _count_encoder_tokens(model) -> dict:
    """Count the tokens (padding included) that go through ``model``'s forward."""
    counted = {"padded": 0}

    def hook(_module, args, kwargs):
        ids = args[0] if args else kwargs["input_ids"]
        counted["padded"] += ids.numel()

    model.register_forward_pre_hook(hook, with_kwargs=True)
    return counted


def _code_context(rng: random.Random, i: int) -> str:
    """A few lines of code around a comment, for targeted noise."""
    lines = [f"def {rng.choice(IDENTS).split('.')[-1].rstrip('()')}_{i}(values, limit={i}):",
             f"    result = {rng.choice(IDENTS).rstrip('()')}(values)",
             "    for index, item in enumerate(values):",
             f"        if item > limit: result.append(item * {rng.randint(2, 9)})",
             "    return result"]
    return "\n".join(lines)


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/bertscore.py", needs=('bert_score',)))
