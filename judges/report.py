"""Judge reports: how often judges fail to answer, and how far their answers agree with humans.

`python -m judges.report [--db URL] [--out DIR]` prints, per judge run (one model x target
language x strategy x prompt version x order policy):

- response statuses and the parse-failure and empty-response rates (the study's Figures 15-16).
  A parse failure is parse_error + truncated + refused (malformed JSON, repetition until the
  token limit, refusals: the study's three causes); empty is valid JSON without content. Both are
  shares of the answered requests: api_error (no answer from the endpoint) is counted apart;
- quadratically weighted Cohen's kappa of the judge's accuracy label against the humans, with a
  bootstrap 95% interval, and the confusion matrix (Figures 17-18);
- per error code precision and recall against the humans (Figures 19-20), per run and pooled per
  model x strategy; codes predicted or labelled fewer than 10 times are flagged (the study's *);
- the accuracy label per prompt position, to see a position effect under shuffle/rotate;
- per run, the settings that tell runs apart (endpoint, temperature, seed, max tokens, order,
  context, structured output, prompt template and its hash) and its tokens and cost.

The human label of a generation is its adjudicated gold label if there is one, else the label of
the annotators with role "expert" (`--labels` picks another of metrics.align's policies). Human
labels come from `metrics.align.data`, statistics from `metrics.align.agreement`; nothing is
re-implemented here.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from sqlmodel import Session, select

from db import models
from db.engine import add_database_argument, session_scope
from metrics.align.agreement import bootstrap_ci, code_precision_recall, confusion, weighted_kappa
from metrics.align.data import LABEL_SOURCES, load_human_labels
from taxonomy import ACCURACY_LABELS, default_taxonomy

FAILURE_STATUSES = ("parse_error", "truncated", "refused")
STATUS_COLUMNS = ("ok", "parse_error", "truncated", "refused", "empty", "api_error")
LOW_COUNT = 10  # the study marks codes predicted or labelled fewer times than this
RUN_COLUMNS = ["run_id", "model", "strategy", "language", "prompt_language", "prompt_version",
               "order"]


@dataclass(frozen=True)
class HumanLabel:
    accuracy: str | None
    codes: frozenset[str]
    source: str  # "gold" | "expert" | ... (metrics.align.data's label sources)


# ---------------------------------------------------------------- loading


DEFAULT_LABELS = "gold-else-expert"


def human_labels(db_url: str | None, source: str = DEFAULT_LABELS) -> dict[int, HumanLabel]:
    """generation id -> its human label, chosen by metrics.align's policy. The default is the
    study's comparison: the adjudicated gold label, else the expert annotators' label (their
    majority if several); never the other annotators'."""
    frame = load_human_labels(db_url, "auto" if source == DEFAULT_LABELS else source)
    if source == DEFAULT_LABELS:
        frame = frame[frame["source"].isin(("gold", "expert"))]
    return {int(row.generation_id): HumanLabel(row.label, frozenset(row.codes), row.source)
            for row in frame.itertuples()}


def _run_info(session: Session) -> dict[int, dict]:
    return {run.id: {"run_id": run.id, "model": run.model, "strategy": run.strategy,
                     "prompt_language": run.prompt_language, "prompt_version": run.prompt_version,
                     "order": (run.params or {}).get("order", "fixed"),
                     "language": (run.params or {}).get("target_language", run.prompt_language)}
            for run in session.exec(select(models.JudgeRun)).all()}


def load_response_rows(session: Session) -> pd.DataFrame:
    runs = _run_info(session)
    rows = [{**runs[r.run_id], "status": r.status}
            for r in session.exec(select(models.JudgeResponse)).all()]
    return pd.DataFrame(rows, columns=RUN_COLUMNS + ["status"])


def load_verdict_rows(session: Session) -> pd.DataFrame:
    runs = _run_info(session)
    rows = [{**runs[v.run_id], "generation_id": v.generation_id, "status": v.status,
             "accuracy": v.accuracy, "codes": frozenset(c["code"] for c in v.codes),
             "position": v.position}
            for v in session.exec(select(models.JudgeVerdict)).all()]
    return pd.DataFrame(rows, columns=RUN_COLUMNS + ["generation_id", "status", "accuracy",
                                                     "codes", "position"])


SETTINGS_COLUMNS = ["run_id", "model", "strategy", "prompt_language", "prompt_version",
                    "template", "endpoint", "temperature", "seed", "max_tokens", "order",
                    "context_chars", "structured", "prompt_tokens", "completion_tokens",
                    "cost_usd"]


def run_settings(session: Session) -> pd.DataFrame:
    """Per run: what tells it apart from another run of the same judge, and what it cost
    (cost_usd None: a price was unknown)."""
    rows = []
    for run in session.exec(select(models.JudgeRun).order_by(models.JudgeRun.id)).all():
        params = run.params or {}
        sampling = params.get("sampling") or {}
        template = params.get("template")
        order = params.get("order", "fixed")
        rows.append({
            "run_id": run.id, "model": run.model, "strategy": run.strategy,
            "prompt_language": run.prompt_language, "prompt_version": run.prompt_version,
            "template": f"{template['file']} sha256:{template['sha256'][:12]}" if template else "",
            "endpoint": params.get("endpoint", ""),
            "temperature": sampling.get("temperature"), "seed": sampling.get("seed"),
            "max_tokens": sampling.get("max_tokens"),
            "order": order if order == "fixed" else f"{order} (seed {params.get('order_seed')})",
            "context_chars": params.get("context_chars"), "structured": params.get("structured"),
            "prompt_tokens": run.prompt_tokens, "completion_tokens": run.completion_tokens,
            "cost_usd": run.cost_usd,
        })
    return pd.DataFrame(rows, columns=SETTINGS_COLUMNS)


def _cost(value) -> str:
    return "unknown" if value is None or (isinstance(value, float) and math.isnan(value)) else f"${value:.4f}"


# ---------------------------------------------------------------- pure statistics


def failure_rates(responses: pd.DataFrame) -> pd.DataFrame:
    """Per run: counts of each status, parse-failure rate and empty rate over answered requests."""
    out = []
    for key, group in responses.groupby(RUN_COLUMNS, sort=True):
        counts = group["status"].value_counts()
        row = dict(zip(RUN_COLUMNS, key))
        row.update({s: int(counts.get(s, 0)) for s in STATUS_COLUMNS})
        row["requests"] = len(group)
        answered = len(group) - row["api_error"]
        failures = sum(row[s] for s in FAILURE_STATUSES)
        row["parse_failure_rate"] = failures / answered if answered else math.nan
        row["empty_rate"] = row["empty"] / answered if answered else math.nan
        out.append(row)
    columns = RUN_COLUMNS + ["requests", *STATUS_COLUMNS, "parse_failure_rate", "empty_rate"]
    return pd.DataFrame(out, columns=columns)


def _paired(verdicts: pd.DataFrame, humans: dict[int, HumanLabel]) -> pd.DataFrame:
    ok = verdicts[verdicts["status"] == "ok"]
    return ok[ok["generation_id"].isin(list(humans))]


def accuracy_agreement(verdicts: pd.DataFrame, humans: dict[int, HumanLabel],
                       n_resamples: int = 1000) -> tuple[pd.DataFrame, dict]:
    """Per run: weighted kappa (quadratic) with a 95% bootstrap interval, plus each run's
    confusion matrix (rows human, columns judge) keyed by run id."""
    paired = _paired(verdicts, humans)
    paired = paired[paired["accuracy"].notna()]
    rows, matrices = [], {}
    for key, group in paired.groupby(RUN_COLUMNS, sort=True):
        human = [humans[g].accuracy for g in group["generation_id"]]
        keep = [h is not None for h in human]
        human = [h for h, k in zip(human, keep) if k]
        judge = [a for a, k in zip(group["accuracy"], keep) if k]
        row = dict(zip(RUN_COLUMNS, key))
        row["pairs"] = len(human)
        row["kappa"] = weighted_kappa(human, judge, labels=ACCURACY_LABELS)
        _, row["kappa_low"], row["kappa_high"] = bootstrap_ci(
            human, judge, n_resamples=n_resamples, labels=ACCURACY_LABELS)
        rows.append(row)
        matrices[int(row["run_id"])] = confusion(human, judge, labels=ACCURACY_LABELS)
    columns = RUN_COLUMNS + ["pairs", "kappa", "kappa_low", "kappa_high"]
    return pd.DataFrame(rows, columns=columns), matrices


def code_scores(verdicts: pd.DataFrame, humans: dict[int, HumanLabel], codes: list[str],
                group_by: list[str]) -> pd.DataFrame:
    """Per group and code: precision, recall, F1, support (human) and predicted counts, with
    `low_count` where either count is below LOW_COUNT."""
    paired = _paired(verdicts, humans)
    frames = []
    for key, group in paired.groupby(group_by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        table = code_precision_recall([set(humans[g].codes) for g in group["generation_id"]],
                                      [set(c) for c in group["codes"]], codes).reset_index()
        for column, value in zip(group_by, key):
            table.insert(0, column, value)
        table["low_count"] = (table["support"] < LOW_COUNT) | (table["predicted"] < LOW_COUNT)
        frames.append(table)
    if not frames:
        return pd.DataFrame(columns=group_by + ["code", "precision", "recall", "f1", "support",
                                                "predicted", "low_count"])
    return pd.concat(frames, ignore_index=True)


def position_effect(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per run and prompt position: judged items and the share of each accuracy label."""
    ok = verdicts[(verdicts["status"] == "ok") & verdicts["accuracy"].notna()]
    rows = []
    for key, group in ok.groupby(RUN_COLUMNS + ["position"], sort=True):
        row = dict(zip(RUN_COLUMNS + ["position"], key))
        row["judged"] = len(group)
        for label in ACCURACY_LABELS:
            row[f"share_{label}"] = float((group["accuracy"] == label).mean())
        rows.append(row)
    return pd.DataFrame(rows, columns=RUN_COLUMNS + ["position", "judged"]
                        + [f"share_{label}" for label in ACCURACY_LABELS])


# ---------------------------------------------------------------- the shell


def build_report(db_url: str | None, n_resamples: int = 1000,
                 labels: str = DEFAULT_LABELS) -> dict:
    tax = default_taxonomy()
    with session_scope(db_url) as session:
        responses = load_response_rows(session)
        verdicts = load_verdict_rows(session)
        settings = run_settings(session)
    humans = human_labels(db_url, labels)
    kappa, matrices = accuracy_agreement(verdicts, humans, n_resamples)
    codes = [c.id for c in tax.labelable()]
    return {
        "failure_rates": failure_rates(responses),
        "kappa": kappa,
        "confusion": matrices,
        "codes_per_run": code_scores(verdicts, humans, codes, RUN_COLUMNS),
        "codes_pooled": code_scores(verdicts, humans, codes, ["model", "strategy"]),
        "position": position_effect(verdicts),
        "human_labels": len(humans),
        "runs": settings,
    }


def _fmt(value) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def _print_table(console, title: str, frame: pd.DataFrame, columns: list[str]) -> None:
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column)
    for _, row in frame.iterrows():
        table.add_row(*(_fmt(row[c]) for c in columns))
    console.print(table)


def _print_runs(console, runs: pd.DataFrame) -> None:
    shown = runs.assign(cost_usd=[_cost(c) for c in runs["cost_usd"]])
    shown = shown.astype(object).where(shown.notna(), "")
    _print_table(console, "Runs: what they ask, and where", shown,
                 ["run_id", "model", "strategy", "prompt_version", "template", "endpoint"])
    _print_table(console, "Runs: the settings that tell them apart, tokens and cost", shown,
                 ["run_id", "temperature", "seed", "max_tokens", "order", "context_chars",
                  "structured", "prompt_tokens", "completion_tokens", "cost_usd"])


def write_report(report: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("runs", "failure_rates", "kappa", "codes_per_run", "codes_pooled", "position"):
        path = out / f"{name}.csv"
        report[name].to_csv(path, index=False)
        written.append(path)
    path = out / "confusion.json"
    path.write_text(json.dumps({str(k): m.to_dict() for k, m in report["confusion"].items()},
                               indent=2), encoding="utf-8")
    written.append(path)
    return written


def _run_label(row) -> str:
    return f"{row['model']} | {row['language']} | {row['strategy']} (run {row['run_id']})"


def _paired_bars(labels: list[str], frame: pd.DataFrame, panels, row_height: float,
                 path: Path) -> Path:
    """Two horizontal bar charts side by side over the same rows; panels = (column, title,
    colour) twice. Values are rates in 0..1 (a missing one is drawn as 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 1.2 + row_height * len(frame)), sharey=True)
    for ax, (column, title, colour) in zip(axes, panels):
        ax.barh(labels, frame[column].fillna(0.0), color=colour)
        ax.set_xlim(0, 1)
        ax.set_title(title)
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_figures(report: dict, out: Path) -> list[Path]:
    """PNG counterparts of Figures 15-16 (failure and empty rates per run) and 19 (pooled
    per-code precision/recall; * = fewer than 10 predicted or labelled)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    rates = report["failure_rates"]
    if not rates.empty:
        written.append(_paired_bars(
            [_run_label(r) for _, r in rates.iterrows()], rates,
            (("parse_failure_rate", "parse failures", "#b04a4a"),
             ("empty_rate", "empty responses", "#4a6fb0")),
            0.35, out / "failure_rates.png"))
    codes = report["codes_pooled"]
    codes = codes[(codes["support"] > 0) | (codes["predicted"] > 0)]
    if not codes.empty:
        names = [f"{r['model']} | {r['strategy']} | {r['code']}{' *' if r['low_count'] else ''}"
                 for _, r in codes.iterrows()]
        written.append(_paired_bars(
            names, codes, (("precision", "precision", "#5a8f5a"), ("recall", "recall", "#5a8f5a")),
            0.3, out / "code_precision_recall.png"))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m judges.report", description=__doc__.split("\n\n")[0])
    add_database_argument(parser)
    parser.add_argument("--out", type=Path, help="also write CSV/JSON tables into this folder")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (kappa CI)")
    parser.add_argument("--labels", default=DEFAULT_LABELS,
                        metavar="SOURCE", help="human labels to compare with: gold-else-expert "
                        "(default), or a metrics.align source: " + ", ".join(LABEL_SOURCES))
    args = parser.parse_args(argv)
    from rich.console import Console

    console = Console(width=200)
    try:
        report = build_report(args.db, args.bootstrap, args.labels)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rates = report["failure_rates"]
    if rates.empty:
        console.print("no judge responses in this database; run `python -m judges.run` first")
        return 0
    base = ["run_id", "model", "language", "strategy"]
    _print_runs(console, report["runs"])
    _print_table(console, "Responses per run (parse failures = parse_error + truncated + refused)",
                 rates, base + ["requests", *STATUS_COLUMNS, "parse_failure_rate", "empty_rate"])
    console.print(f"human labels available: {report['human_labels']} generations")
    if report["kappa"].empty:
        console.print("no usable (status ok) judge verdict has a human label to compare with")
    else:
        _print_table(console, "Accuracy vs humans (quadratic weighted kappa, 95% bootstrap CI)",
                     report["kappa"], base + ["pairs", "kappa", "kappa_low", "kappa_high"])
        for run_id, matrix in report["confusion"].items():
            console.print(f"run {run_id} confusion (rows human, columns judge; "
                          f"{', '.join(matrix.labels)}): {matrix.counts.tolist()}")
        pooled = report["codes_pooled"]
        pooled = pooled[(pooled["support"] > 0) | (pooled["predicted"] > 0)]
        _print_table(console, "Error codes vs humans, pooled per model x strategy "
                     "(low_count: < 10 predicted or labelled)", pooled,
                     ["model", "strategy", "code", "precision", "recall", "support", "predicted",
                      "low_count"])
    if args.out:
        for path in write_report(report, args.out) + write_figures(report, args.out):
            console.print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
