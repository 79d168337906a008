"""The tables of bench/study_grid.py: per configuration, per metric and context, and the
GPU estimate (an ESTIMATE from a stated peak and utilisation, not a measurement)."""
from __future__ import annotations

from collections import Counter

GPU_PEAKS = {  # NVIDIA H100 SXM5 datasheet, dense (no sparsity), FLOP/s
    "float16": 989e12,  # FP16/BF16 tensor cores: BERTScore's default on a GPU
    "float32": 67e12,  # FP32 CUDA cores: lmscore runs float32 (TF32 matmul is off in torch)
}
GPU_UTILISATION = (0.05, 0.25)  # sustained share of peak for 33M/135M-parameter models (bench/README.md)
KERNEL_LAUNCH_S = 10e-6  # eager PyTorch, per kernel


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
            if w.get("texts"):
                print(f"    encoder windows/texts: {w['texts']:,} encoded, minimum "
                      f"{w.get('minimum_texts', 0):,} (each distinct segment once per process)")
            if r.get("gemm"):
                rate = w["flops"] / max(r["phases"].get("forward", 0), 1e-9)
                print(f"    achieved {rate / 1e9:.0f} GFLOP/s in forward = "
                      f"{100 * rate / r['gemm']:.0f}% of the measured fp32 GEMM rate "
                      f"({r['gemm'] / 1e9:.0f} GFLOP/s)")
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


