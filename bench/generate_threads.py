"""Seconds per generated token with 1 vs 2 torch threads: SmolLM2-135M, batch 4, 32 new tokens
(forced), greedy, CPU; each setting twice, alternating. `python bench/generate_threads.py`"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    import torch

    from models import load_causal_lm

    model, tok = load_causal_lm("HuggingFaceTB/SmolLM2-135M-Instruct", "cpu")
    prompt = "public class Rekenen {\n    /**\n     * Berekent de som van"
    batch = tok([prompt] * 4, return_tensors="pt", padding=True)
    for threads in [1, 2, 1, 2]:
        torch.set_num_threads(threads)
        started = time.perf_counter()
        with torch.inference_mode():
            model.generate(**batch, max_new_tokens=32, min_new_tokens=32, do_sample=False)
        seconds = time.perf_counter() - started
        print(f"threads={threads} batch=4 new=32: {seconds:.2f}s, {seconds / 32:.3f} s/token-step",
              flush=True)
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/generate_threads.py"))
