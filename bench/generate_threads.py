"""Seconds per generated token with 1 vs 2 torch threads: SmolLM2-135M, batch 4, 32 new tokens
(forced), greedy, CPU; each setting twice, alternating. `python bench/generate_threads.py`"""
import time

import torch

from models import load_causal_lm

model, tok = load_causal_lm("HuggingFaceTB/SmolLM2-135M-Instruct", "cpu")
prompt = "public class Rekenen {\n    /**\n     * Berekent de som van"
batch = tok([prompt]*4, return_tensors="pt", padding=True)
for threads in [1, 2, 1, 2]:
    torch.set_num_threads(threads)
    t = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**batch, max_new_tokens=32, min_new_tokens=32, do_sample=False)
    dt = time.perf_counter() - t
    print(f"threads={threads} batch=4 new=32: {dt:.2f}s, {dt/32:.3f} s/token-step", flush=True)
