"""How far the token estimate is from the target model families' real tokenizers, per language.

    python bench/token_counts.py --lang zh ROOT_ZH --lang el ROOT_EL ... [--files 400]

Reads up to `--files` source files per language (seeded sample; decoded as corpus.extract does),
counts each with `approx-bpe:v2` (`count`), its context-window estimate (`window_count`) and
every family vocabulary of `models.vocabs` (run `python -m models prepare-vocabs` first), and
prints per language and tokenizer: the median estimate / real ratio and its 2-98% range for files
of 1,000 real tokens or more, and how many files at most `--window` real tokens each estimate
would have dropped (a file a real tokenizer keeps).
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

from corpus.encoding import SourceReadError, decode_source
from corpus.languages import language_for_path
from corpus.tokens import ApproxTokenCounter, VocabTokenCounter
from models.vocabs import vocab_names, vocab_path


def sample(root: Path, lang: str, n: int, seed: int = 7) -> list[str]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and language_for_path(p))
    random.Random(seed).shuffle(files)
    texts = []
    for path in files:
        raw = path.read_bytes()
        if not 200 <= len(raw) <= 300_000:
            continue
        try:
            texts.append(decode_source(raw, lang).text)
        except SourceReadError:
            continue
        if len(texts) >= n:
            break
    return texts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lang", nargs=2, action="append", metavar=("CODE", "ROOT"),
                        required=True)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--window", type=int, default=4096)
    args = parser.parse_args(argv)
    real = {name: VocabTokenCounter(vocab_path(name)) for name in vocab_names()}
    approx = ApproxTokenCounter()
    print(f"{'lang':4} {'files':>5} {'tokenizer':10} {'v2 median [2-98%]':>20} "
          f"{'window median [2-98%]':>22} {'kept by it, dropped by v2 / window':>36}")
    for lang, root in args.lang:
        texts = sample(Path(root), lang, args.files)
        v2 = np.array([approx.count(t) for t in texts])
        window = np.array([approx.window_count(t) for t in texts])
        for name, counter in real.items():
            counts = np.array([counter.count(t) for t in texts])
            big = counts >= 1000
            kept = counts <= args.window
            cells = []
            for estimate in (v2, window):
                ratio = estimate[big] / counts[big]
                cells.append(f"{np.median(ratio):.2f} [{np.quantile(ratio, .02):.2f}-"
                             f"{np.quantile(ratio, .98):.2f}]" if big.any() else "-")
            wrong = [int(np.sum(kept & (e > args.window))) for e in (v2, window)]
            print(f"{lang:4} {len(texts):5} {name:10} {cells[0]:>20} {cells[1]:>22} "
                  f"{wrong[0]:>14} / {wrong[1]} of {int(kept.sum())}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/, not installed
    from testing.bench import run

    sys.exit(run(main, "bench/token_counts.py", needs=("llama_cpp",)))
