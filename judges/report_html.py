"""`judges.report --out DIR`'s page: DIR/report.html, one self-contained page over the CSVs and
PNGs written beside it: the runs and their settings, the per-run tables (verdict statuses and
failure rates, kappa and confusion against the humans, error codes, prompt position) with their
figures, and the three robustness studies, each with its figure and table (the sections
`align`'s page shows too: `agreement.robustness_report`).

Every name a user chose (judge model, endpoint, template file, run key) is HTML-escaped.
"""
from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from agreement.robustness_report import study_sections_html, table_html

_STYLE = ("body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
          "table.t{border-collapse:collapse;font-size:12px}table.t td,table.t th{border-bottom:"
          "1px solid #ddd;padding:2px 6px}img{max-width:100%;border:1px solid #eee}")
# per-run figures of write_figures, by file stem: the section they belong to
_RUN_FIGURES = {"failure_rates": "failures", "code_precision_recall": "codes"}


def _unknown(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def shown_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs table as people read it: a cost or token count that is not known (NULL: no
    price, a file without token usage) says "unknown", never 0 or nan; a temperature as given
    (0, 0.7), not as a rate."""
    return runs.assign(
        cost_usd=["unknown" if _unknown(c) else f"${c:.4f}" for c in runs["cost_usd"]],
        temperature=["" if _unknown(t) else f"{t:g}" for t in runs["temperature"]],
        **{k: ["unknown" if _unknown(n) else str(int(n)) for n in runs[k]]
           for k in ("prompt_tokens", "completion_tokens")})


def _image(path: Path, page: Path) -> str:
    src = html.escape(path.relative_to(page.parent).as_posix(), quote=True)
    return f"<p><a href='{src}'><img src='{src}' alt='{html.escape(path.stem)}'></a></p>"


def _confusion_html(report: dict) -> str:
    parts = []
    for run_id, matrix in sorted(report["confusion"].items()):
        frame = pd.DataFrame(matrix.counts, index=[f"human {lab}" for lab in matrix.labels],
                             columns=[f"judge {lab}" for lab in matrix.labels])
        parts.append(f"<p>run {int(run_id)} (n = {matrix.n})</p>"
                     + frame.to_html(classes="t", border=0))
    return "\n".join(parts) or "<p><em>none</em></p>"


def write_html(report: dict, path: Path, data_files: list[Path], figures: list[Path]) -> Path:
    """Write the page to `path` (in the folder of `data_files` and `figures`) and return it."""
    by_stem = {p.stem: p for p in figures}
    runs = report["runs"]
    runs = shown_runs(runs)
    rates, kappa = report["failure_rates"], report["kappa"]
    policy = html.escape(report["label_policy"])
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>judges.report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>LLM judges: failures and agreement with the humans</h1>",
        f"<p>human labels (label policy): <code>{policy}</code> · {report['human_labels']} "
        f"labelled generations · {len(runs)} judge run(s); each run is its own configuration, "
        f"never pooled.</p>",
        "<h2>Data files</h2><ul>" + "".join(
            f"<li><a href='{html.escape(p.name, quote=True)}'>{html.escape(p.name)}</a></li>"
            for p in data_files) + "</ul>",
        "<h2>Runs: settings, tokens and cost</h2>", table_html(runs),
        "<h2 id='failures'>Verdicts per run, one per generation (Figures 15-16)</h2>",
        "<p>Parse failures = parse_error + truncated + refused, as a share of the answered "
        "verdicts (api_error, batch_error, expired: no answer); empty = valid JSON without "
        "content.</p>",
        table_html(rates),
        "<h3>Why verdicts failed, per run and status, most frequent first</h3>",
        "<p>A verdict's reason is its response's error (its own part, where the error names each "
        "prediction); reasons differing only in their numbers are one (N), with an example.</p>",
        table_html(report["failure_reasons"]),
    ]
    parts += [_image(by_stem[stem], path) for stem, section in _RUN_FIGURES.items()
              if section == "failures" and stem in by_stem]
    parts += [
        "<h2 id='kappa'>Accuracy vs humans: quadratic weighted kappa, 95% bootstrap CI "
        "(Figures 17-18)</h2>", table_html(kappa),
        "<h3>Confusion matrices (rows human, columns judge)</h3>", _confusion_html(report),
        "<h2 id='codes'>Error codes vs humans, pooled per model x strategy (Figures 19-20)</h2>",
        "<p>low_count: fewer than 10 predicted or labelled; per run: "
        "<a href='codes_per_run.csv'>codes_per_run.csv</a>.</p>",
    ]
    pooled = report["codes_pooled"]
    parts.append(table_html(pooled[(pooled["support"] > 0) | (pooled["predicted"] > 0)]))
    parts += [_image(by_stem[stem], path) for stem, section in _RUN_FIGURES.items()
              if section == "codes" and stem in by_stem]
    parts += ["<h2 id='position'>Accuracy label by prompt position</h2>",
              table_html(report["position"]),
              "<h2>How much a verdict depends on the run, the prompt language and code-mixing</h2>",
              study_sections_html(report, {name: p.name for name, p in by_stem.items()},
                                  level=3),
              "</body></html>"]
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
