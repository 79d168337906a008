"""Judge reports: how often judges fail to answer, and how far their answers agree with humans.

`python -m judges.report [--db URL] [--out DIR]` prints (and with --out writes as CSV/JSON, PNG
figures and one report.html page: `judges.report_html`), per judge run (one model x target
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
  context, structured output, prompt template and its hash) and its tokens and cost;
- where such runs exist, the robustness studies (`agreement.robustness`, the same tables and
  figures `align` shows): stability over K runs, prompt language, code-mixed prompts.

Each run is its own row (runs are never pooled); `key` is the configuration name that
`align` shows for the same run. Failure counts are over the verdicts, one per generation,
by the verdict status `judges.parse` stores (a response that judges only some of its predictions
has ok verdicts for those and failed ones for the rest). The human label of a generation follows
the label policy (`--labels`, default `auto`: gold, else the experts', else the annotators'
majority; `agreement.labels`) and every output names it. Labels, failure counts and agreement come
from `agreement` (the path `align` and the app take too); nothing is re-implemented here.
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

from agreement.judges import (  # noqa: F401  (FAILURE_STATUSES: re-exported)
    FAILURE_STATUSES,
    OK,
    config_names,
    failure_reasons,
    judge_agreement,
    load_verdicts,
    status_counts,
)
from agreement.labels import DEFAULT_POLICY, POLICY_HELP, describe_policy, load_labels, parse_policy
from agreement.robustness import STUDIES, study_tables
from agreement.robustness_report import study_figures
from agreement.statistics import code_precision_recall
from db import models
from db.engine import add_database_argument, read_only_url, session_scope
from nlce.cli import EXIT_OK, run_main
from nlce.outputs import check_output_folder, output_set, write_csv
from taxonomy import ACCURACY_LABELS, default_taxonomy

STATUS_COLUMNS = ("ok", "parse_error", "truncated", "refused", "empty", "api_error",
                  "batch_error", "expired")
REASONS_SHOWN = 3  # per run and status on the terminal; every one in failure_reasons.csv
LOW_COUNT = 10  # the study marks codes predicted or labelled fewer times than this
# the robustness studies (agreement.robustness): K runs, prompt language, code-mixing
STUDY_TABLES = STUDIES
RUN_COLUMNS = ["run_id", "key", "model", "strategy", "language", "prompt_language",
               "prompt_version", "order"]


@dataclass(frozen=True)
class HumanLabel:
    accuracy: str | None
    codes: frozenset[str]
    source: str  # the label policy's rule that gave it: "gold" | "expert" | ...


# ---------------------------------------------------------------- loading


DEFAULT_LABELS = DEFAULT_POLICY


def human_labels(db_url: str | None, source: str = DEFAULT_LABELS) -> dict[int, HumanLabel]:
    """generation id -> its human label under the label policy `source` (agreement.labels)."""
    return {g: HumanLabel(r.accuracy, r.codes, r.source)
            for g, r in load_labels(db_url, source).items()}


def _run_info(session: Session) -> dict[int, dict]:
    runs = session.exec(select(models.JudgeRun)).all()
    names = config_names(runs)
    return {run.id: {"run_id": run.id, "key": names[run.id], "model": run.model,
                     "strategy": run.strategy,
                     "prompt_language": run.prompt_language, "prompt_version": run.prompt_version,
                     "order": (run.params or {}).get("order", "fixed"),
                     "language": (run.params or {}).get("target_language", run.prompt_language)}
            for run in runs}


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
                    "cost_usd", "jury_of"]


INTEGER_SETTINGS = ("seed", "max_tokens", "context_chars", "prompt_tokens", "completion_tokens")


def run_settings(session: Session) -> pd.DataFrame:
    """Per run: what tells it apart from another run of the same judge, and what it cost
    (cost_usd None: a price was unknown). A jury's tokens and cost are its members' (`jury_of`
    names them): a total over runs leaves out the rows with `jury_of` set, or counts twice."""
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
            "jury_of": ",".join(str(m["run_id"]) for m in
                                (params.get("jury") or {}).get("members", [])),
        })
    frame = pd.DataFrame(rows, columns=SETTINGS_COLUMNS)
    # integers stay integers beside a run without them (a jury, an import: NA, not 42.0)
    return frame.astype({c: "Int64" for c in INTEGER_SETTINGS})


# ---------------------------------------------------------------- pure statistics


def failure_rates(responses: pd.DataFrame, verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per run: requests sent, and over its verdicts (one per generation) the count of each status,
    the parse-failure and empty rates of the answered ones (`agreement.judges.status_counts`)."""
    requests = responses.groupby("run_id").size().to_dict() if len(responses) else {}
    out = []
    for key, group in verdicts.groupby(RUN_COLUMNS, sort=True):
        row = dict(zip(RUN_COLUMNS, key))
        counts = status_counts(list(group.drop_duplicates("generation_id")["status"]))
        row["requests"] = int(requests.get(row["run_id"], 0))
        row.update({c: counts[c] for c in ("verdicts", *STATUS_COLUMNS, "failure_rate",
                                           "parse_failure_rate", "empty_rate")})
        out.append(row)
    columns = RUN_COLUMNS + ["requests", "verdicts", *STATUS_COLUMNS, "failure_rate",
                             "parse_failure_rate", "empty_rate"]
    return pd.DataFrame(out, columns=columns)


def _paired(verdicts: pd.DataFrame, humans: dict[int, HumanLabel]) -> pd.DataFrame:
    ok = verdicts[verdicts["status"] == OK]
    return ok[ok["generation_id"].isin(list(humans))]


def accuracy_agreement(verdicts: pd.DataFrame, humans: dict[int, HumanLabel],
                       n_resamples: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """Per run with at least one usable pair: `agreement.judges.judge_agreement` (n, quadratic
    weighted kappa with a 95% bootstrap interval), plus each run's confusion matrix (rows human,
    columns judge) keyed by run id."""
    labels = {g: h.accuracy for g, h in humans.items() if h.accuracy is not None}
    rows, matrices = [], {}
    for key, group in verdicts.groupby(RUN_COLUMNS, sort=True):
        result = judge_agreement(group, labels, bootstrap=n_resamples, seed=seed)
        if not result.n:
            continue
        row = dict(zip(RUN_COLUMNS, key))
        row.update({"n_verdicts": result.n_verdicts, "n": result.n, "kappa": result.kappa,
                    "kappa_low": result.kappa_low, "kappa_high": result.kappa_high})
        rows.append(row)
        matrices[int(row["run_id"])] = result.confusion
    columns = RUN_COLUMNS + ["n_verdicts", "n", "kappa", "kappa_low", "kappa_high"]
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
    ok = verdicts[(verdicts["status"] == OK) & verdicts["accuracy"].notna()]
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
        reasons = failure_reasons(session)
    humans = human_labels(db_url, labels)
    kappa, matrices = accuracy_agreement(verdicts, humans, n_resamples)
    codes = [c.id for c in tax.labelable()]
    accuracy = {g: h.accuracy for g, h in humans.items() if h.accuracy is not None}
    # the robustness studies: the rows and grouping `align` uses too
    studies = study_tables(load_verdicts(db_url), accuracy,
                           {g: h.codes for g, h in humans.items()}, codes)
    return {
        **studies,
        "label_policy": describe_policy(labels),
        "failure_rates": failure_rates(responses, verdicts),
        "failure_reasons": reasons,
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
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for _, row in frame.iterrows():  # escaped: a key's "[rubric,zh,...]" is no Rich markup
        table.add_row(*(escape(_fmt(row[c])) for c in columns))
    console.print(table)


def _print_runs(console, runs: pd.DataFrame) -> None:
    from judges.report_html import shown_runs

    shown = shown_runs(runs)
    shown = shown.astype(object).where(shown.notna(), "")
    _print_table(console, "Runs: what they ask, and where", shown,
                 ["run_id", "model", "strategy", "prompt_version", "template", "endpoint"])
    _print_table(console, "Runs: the settings that tell them apart, tokens and cost", shown,
                 ["run_id", "temperature", "seed", "max_tokens", "order", "context_chars",
                  "structured", "prompt_tokens", "completion_tokens", "cost_usd", "jury_of"])


def _print_reasons(console, reasons: pd.DataFrame) -> None:
    """Why verdicts failed: per run and status, the most frequent reasons (the rest: in
    failure_reasons.csv)."""
    if reasons.empty:
        return
    shown = reasons.groupby(["run_id", "status"], sort=False).head(REASONS_SHOWN)
    left = len(reasons) - len(shown)
    _print_table(console, "Why verdicts failed, per run and status, most frequent first"
                 + (f" ({left} rarer reason(s): failure_reasons.csv with --out)" if left else ""),
                 shown, ["run_id", "status", "verdicts", "example"])


def _print_studies(console, report: dict) -> None:
    """The robustness tables, each only where such runs exist."""
    where = ["judge", "strategy", "language"]
    if not report["stability"].empty:
        _print_table(console, "Stability over K runs (U@K: some run disagrees with the human; "
                     "I@K: all K do; flip: the label changes across runs)", report["stability"],
                     where + ["runs", "k", "n", "u_at_k", "i_at_k", "flip_rate", "kappa_min",
                              "kappa_max", "kappa_spread"])
        codes = report["stability_codes"]
        codes = codes[codes["found_in_all"] + codes["found_in_some"] > 0]
        _print_table(console, "Error codes found in some runs, not all", codes,
                     where + ["code", "n", "found_in_all", "found_in_some", "flip_rate",
                              "u_at_k", "i_at_k"])
    if not report["language_consistency"].empty:
        _print_table(console, "Prompt language: English prompt vs the comment's language (CR: "
                     "agrees with the human; CDR: under exactly one; McNemar on those)",
                     report["language_consistency"],
                     where + ["english_run", "native_run", "n", "cr_en", "cr_x", "cr_bi", "cdr",
                              "en_only", "x_only", "p_mcnemar"])
    if not report["code_mix"].empty:
        _print_table(console, "Code-mixed prompts: agreement against CMD (share of the prompt in "
                     "English)", report["code_mix"],
                     where + ["cmd", "run_id", "n", "exact_agreement", "kappa",
                              "parse_failure_rate"])


# what `--out` holds (anything else in an existing folder: refused, as it would be replaced)
OWNED = ("*.csv", "*.json", "*.png", "report.html")


def write_report(report: dict, out: Path) -> list[Path]:
    """Every table as CSV (text cells spreadsheet-safe) and the confusion matrices as JSON
    into the folder `out` (main writes them through `nlce.outputs.output_set`)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("runs", "failure_rates", "failure_reasons", "kappa", "codes_per_run",
                 "codes_pooled", "position", *STUDY_TABLES):
        path = out / f"{name}.csv"
        frame = report[name]
        if name in STUDY_TABLES and frame.empty:  # only where such runs exist
            continue
        if name not in ("runs", "failure_rates", "failure_reasons", "position"):  # vs humans
            frame = frame.assign(label_policy=report["label_policy"])
        write_csv(path, frame)
        written.append(path)
    path = out / "confusion.json"
    path.write_text(json.dumps({"label_policy": report["label_policy"],
                                "runs": {str(k): m.to_dict()
                                         for k, m in report["confusion"].items()}},
                               indent=2), encoding="utf-8")
    written.append(path)
    return written


def _printable(text: str) -> str:
    """A name as a figure label: control characters (a tab in a model name) as spaces, which
    the font has (matplotlib warns on stderr for each glyph it lacks)."""
    return "".join(c if c.isprintable() else " " for c in text)


def _run_label(row) -> str:
    return _printable(f"{row['model']} | {row['language']} | {row['strategy']} "
                      f"(run {row['run_id']})")


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
        names = [_printable(f"{r['model']} | {r['strategy']} | {r['code']}"
                            f"{' *' if r['low_count'] else ''}")
                 for _, r in codes.iterrows()]
        written.append(_paired_bars(
            names, codes, (("precision", "precision", "#5a8f5a"), ("recall", "recall", "#5a8f5a")),
            0.3, out / "code_precision_recall.png"))
    for name, fig in study_figures(report).items():  # stability, language_consistency, code_mix
        path = out / f"{name}.png"
        fig.savefig(path, dpi=120)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m judges.report", description=__doc__.split("\n\n")[0])
    add_database_argument(parser)
    parser.add_argument("--out", type=Path, help="also write report.html with its figures (PNG) "
                        "and every table as CSV/JSON into this folder")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (kappa CI)")
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument("--labels", default=DEFAULT_LABELS, metavar="POLICY",
                        help=POLICY_HELP.replace("%", "%%"))
    args = parser.parse_args(argv)
    from rich.console import Console

    console = Console(width=200)
    parse_policy(args.labels)  # a bad --labels fails before anything is read
    if args.out:
        check_output_folder(args.out, OWNED)  # and a wrong --out (OutputError)
    # a report only reads: the database is opened read-only (a read-only disk will do)
    report = build_report(read_only_url(args.db), args.bootstrap, args.labels)
    rates = report["failure_rates"]
    if rates.empty:
        console.print("no judge responses in this database; run `python -m judges.run` first")
        return EXIT_OK
    base = ["run_id", "model", "language", "strategy"]
    _print_runs(console, report["runs"])
    _print_table(console, "Verdicts per run, one per generation (parse failures = parse_error + "
                 "truncated + refused, of the answered)", rates,
                 base + ["requests", "verdicts", *STATUS_COLUMNS, "parse_failure_rate",
                         "empty_rate"])
    _print_reasons(console, report["failure_reasons"])
    console.print(f"human labels available: {report['human_labels']} generations "
                  f"(label policy {report['label_policy']})")
    if report["kappa"].empty:
        console.print("no usable (status ok) judge verdict has a human label to compare with")
    else:
        _print_table(console, "Accuracy vs humans (quadratic weighted kappa, 95% bootstrap CI)",
                     report["kappa"], base + ["key", "n", "kappa", "kappa_low", "kappa_high"])
        for run_id, matrix in report["confusion"].items():
            console.print(f"run {run_id} confusion (rows human, columns judge; "
                          f"{', '.join(matrix.labels)}): {matrix.counts.tolist()}")
        pooled = report["codes_pooled"]
        pooled = pooled[(pooled["support"] > 0) | (pooled["predicted"] > 0)]
        _print_table(console, "Error codes vs humans, pooled per model x strategy "
                     "(low_count: < 10 predicted or labelled)", pooled,
                     ["model", "strategy", "code", "precision", "recall", "support", "predicted",
                      "low_count"])
    _print_studies(console, report)
    if args.out:
        from judges.report_html import write_html

        with output_set(args.out, OWNED) as folder:  # whole or not at all (OutputError)
            data_files = write_report(report, folder)
            figures = [] if args.no_figures else write_figures(report, folder)
            page = write_html(report, folder / "report.html", data_files, figures)
        for path in data_files + figures:
            console.print(f"wrote {args.out / path.relative_to(folder)}")
        console.print(f"report: {args.out / page.relative_to(folder)}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m judges.report"))
