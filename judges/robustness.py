"""How much a verdict depends on the run, the prompt language and code-mixing: the report tables
of `judges.report` for the runs `judges.run --repeats/--prompt-lang/--code-mix` stored.

The statistics themselves live in `agreement.judges` (the one judge-vs-human path, same label
policy and kappa as every other report); this module only groups the stored runs:

- **stability**: runs with the same params.repeat.group are one configuration judged K times;
- **prompt language**: a run with an English prompt and one with the target language's prompt,
  alike in every other setting (model, strategy, endpoint, sampling, order, context, ...);
- **code-mixing**: runs with params.code_mix, per model x base strategy x language x CMD.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from agreement.judges import code_stability, judge_agreement, language_consistency, verdict_stability

STABILITY_COLUMNS = ["model", "strategy", "language", "prompt_language", "group", "runs", "k",
                     "n", "u_at_k", "i_at_k", "flip_rate", "kappa_min", "kappa_max",
                     "kappa_spread"]
LANGUAGE_COLUMNS = ["model", "strategy", "language", "english_run", "native_run", "n", "cr_en",
                    "cr_x", "cr_bi", "cdr", "en_only", "x_only", "p_mcnemar"]
CODE_MIX_COLUMNS = ["model", "strategy", "language", "cmd", "seed", "run_id", "n_verdicts", "n",
                    "exact_agreement", "kappa", "parse_failure_rate"]


def _first(group: pd.DataFrame, column: str):
    return group[column].iloc[0]


def stability_tables(verdicts: pd.DataFrame, params: dict[int, dict], labels: dict,
                     human_codes: dict, codes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per repeat group: K, n, U@K, I@K, flip rate, kappa min/max/spread;
    per repeat group and code: n, found in all / some runs, flip rate, U@K, I@K)."""
    groups: dict[str, list[int]] = {}
    for run_id, p in params.items():
        group = (p.get("repeat") or {}).get("group")
        if group:
            groups.setdefault(group, []).append(run_id)
    rows, code_frames = [], []
    for group, run_ids in sorted(groups.items()):
        runs = [verdicts[verdicts.run_id == r] for r in sorted(run_ids)]
        runs = [r for r in runs if len(r)]
        if not runs:
            continue
        head = runs[0]
        info = {"model": _first(head, "model"), "strategy": _first(head, "strategy"),
                "language": _first(head, "language"),
                "prompt_language": _first(head, "prompt_language"), "group": group,
                "runs": " ".join(str(r) for r in sorted(run_ids))}
        rows.append({**info, **verdict_stability(runs, labels).row()})
        table = code_stability(runs, human_codes, codes)
        for column, value in reversed(list(info.items())):
            table.insert(0, column, value)
        code_frames.append(table)
    per_code = (pd.concat(code_frames, ignore_index=True) if code_frames
                else pd.DataFrame(columns=list(STABILITY_COLUMNS[:6]) + ["code", "n"]))
    return pd.DataFrame(rows, columns=STABILITY_COLUMNS), per_code


def _pairing_key(run_id: int, verdicts: pd.DataFrame, settings: dict[int, str]) -> tuple:
    v = verdicts[verdicts.run_id == run_id]
    return (_first(v, "model"), _first(v, "strategy"), _first(v, "language"), settings[run_id])


def language_table(verdicts: pd.DataFrame, settings: dict[int, str], labels: dict) -> pd.DataFrame:
    """Per English-prompt run and its native-prompt twin (same settings otherwise): CR_en, CR_x,
    CR_bi, CDR and McNemar's p; `settings` maps run id -> its settings as one string."""
    english, native = {}, {}
    for run_id, v in verdicts.groupby("run_id"):
        language, prompt = _first(v, "language"), _first(v, "prompt_language")
        if language == "en":
            continue
        key = _pairing_key(run_id, verdicts, settings)
        if prompt == "en":
            english[key] = run_id
        elif prompt == language:
            native[key] = run_id
    rows = []
    for key in sorted(set(english) & set(native), key=str):
        model, strategy, language, _ = key
        result = language_consistency(verdicts[verdicts.run_id == english[key]],
                                      verdicts[verdicts.run_id == native[key]], labels)
        rows.append({"model": model, "strategy": strategy, "language": language,
                     "english_run": english[key], "native_run": native[key], **result.row()})
    return pd.DataFrame(rows, columns=LANGUAGE_COLUMNS)


def code_mix_table(verdicts: pd.DataFrame, params: dict[int, dict], labels: dict) -> pd.DataFrame:
    """Per code-mixed run: its CMD, n, the share of exact agreement with the humans, kappa and
    the parse-failure rate (a plain run of the same base strategy is not mixed in: CMD 0 is its
    own run with the native wording)."""
    rows = []
    for run_id, v in verdicts.groupby("run_id"):
        mix = params.get(run_id, {}).get("code_mix")
        if not mix:
            continue
        result = judge_agreement(v, labels, bootstrap=0)
        exact = (float(result.confusion.counts.trace() / result.n) if result.n else float("nan"))
        rows.append({"model": _first(v, "model"), "strategy": mix.get("base"),
                     "language": _first(v, "language"), "cmd": float(mix["cmd"]),
                     "seed": mix.get("seed"), "run_id": run_id, "n_verdicts": result.n_verdicts,
                     "n": result.n, "exact_agreement": exact, "kappa": result.kappa,
                     "parse_failure_rate": result.statuses["parse_failure_rate"]})
    frame = pd.DataFrame(rows, columns=CODE_MIX_COLUMNS)
    return frame.sort_values(["model", "strategy", "language", "cmd", "run_id"], ignore_index=True)


def write_code_mix_figure(table: pd.DataFrame, out: Path) -> list[Path]:
    """Judge agreement against CMD, one line per model x strategy x language (kappa and exact
    agreement side by side)."""
    if table.empty:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for (model, strategy, language), group in table.groupby(["model", "strategy", "language"]):
        curve = group.groupby("cmd")[["kappa", "exact_agreement"]].mean()
        for ax, column in zip(axes, ("kappa", "exact_agreement")):
            ax.plot(curve.index, curve[column], marker="o", label=f"{model} | {strategy} | {language}")
    for ax, title in zip(axes, ("quadratic weighted kappa", "exact agreement with humans")):
        ax.set_xlabel("CMD (share of the prompt's switchable segments in English)")
        ax.set_title(title)
        ax.set_xlim(-0.05, 1.05)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "code_mix.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]
