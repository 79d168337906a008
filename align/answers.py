"""The answers first: what the terminal and report.html open with, from one summary of a report.

1. per language (and over all), the generating models ranked by human-judged quality, with
   intervals and compact letters (`StudyAnswers.ranking`, `align.quality.ranked_models`);
2. which metric and which judge agree best with the humans (kappa over all items, its rank);
3. which judges pass the alternative annotator test (`replace.csv`);
4. how many human labels each judge is worth (`estimates.csv`, mean score over all items).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

import pandas as pd

from align.pipeline import AlignReport
from align.text import display_name, number_text


def _number(value) -> str:
    return number_text(value, 2)


def _interval(low, high, digits: int = 2) -> str:
    if pd.isna(low) or pd.isna(high):
        return "no interval"
    return f"{low:.{digits}f}–{high:.{digits}f}"


@dataclass
class Summary:
    """The answers of one report, as plain data both views print."""
    ranking: pd.DataFrame  # ranked_models
    best: dict[str, dict] = field(default_factory=dict)  # "metric"/"judge" -> kappa row + ties
    replace: pd.DataFrame = field(default_factory=pd.DataFrame)  # replace.csv rows
    worth: pd.DataFrame = field(default_factory=pd.DataFrame)  # estimates.csv, mean score, all
    alpha: float = 0.05
    epsilon: float = 0.2


def summarise(report: AlignReport) -> Summary:
    answers = report.answers
    alpha = report.options.alpha
    ranking = answers.ranking if answers is not None else pd.DataFrame()
    summary = Summary(ranking=ranking, alpha=alpha, epsilon=report.options.alt_epsilon)
    for kind, result in (("metric", report.metrics), ("judge", report.judges)):
        if result is None or result.kappa.empty:
            continue
        rows = result.kappa[(result.kappa.slice == "all") & result.kappa.kappa.notna()]
        if rows.empty:
            continue
        rows = rows.sort_values(["kappa", "key"], ascending=[False, True])
        top = rows.iloc[0]
        rank = top.get("rank")
        ties = [] if rank is None or pd.isna(rank) else [
            k for k, r in zip(rows.key[1:], rows["rank"][1:]) if r == rank]
        summary.best[kind] = {"key": top.key, "kappa": top.kappa, "low": top.kappa_low,
                              "high": top.kappa_high, "n": int(top.n), "ties": ties}
    if answers is not None:
        summary.replace = answers.replace
        estimates = answers.estimates
        summary.worth = estimates[(estimates.slice == "all") & (estimates.estimand == "mean_score")
                                  & estimates.estimate.notna()] if len(estimates) else estimates
    return summary


def _best_line(kind: str, best: dict | None) -> str:
    if best is None:
        return f"which {kind} agrees best with the humans: no {kind} to compare"
    ties = (f"; not told apart from {', '.join(display_name(k) for k in best['ties'])}"
            if best["ties"] else "")
    return (f"which {kind} agrees best with the humans (kappa, all {best['n']:,} items): "
            f"{display_name(best['key'])} {number_text(best['kappa'], 3)} "
            f"({_interval(best['low'], best['high'])}){ties}")


def _replace_lines(summary: Summary) -> list[str]:
    table = summary.replace
    if table is None or table.empty:
        return ["can a judge replace the annotators: no judge run to test (alt-test)"]
    lines = [f"can a judge replace the annotators (alt-test, epsilon {summary.epsilon}; passes "
             f"at winning rate >= 0.5):"]
    for judge, rows in table.groupby("judge", sort=True):
        parts = []
        for r in rows.itertuples():
            where = "all" if r.slice == "all" else r.slice_value
            if pd.isna(r.winning_rate):
                parts.append(f"{where} not testable ({r.method.removeprefix('no test: ')})")
            else:
                parts.append(f"{where} {'PASSES' if r.passed else 'fails'} (omega "
                             f"{r.winning_rate:.2f}, rho {r.advantage_probability:.2f}, "
                             f"{r.n_annotators} annotators)")
        lines.append(f"  {display_name(judge)}: " + "; ".join(parts))
    return lines


def _worth_lines(summary: Summary) -> list[str]:
    worth = summary.worth
    if worth is None or worth.empty:
        return []
    lines = ["what a judge or metric adds to the labels (mean score, all items):"]
    for r in worth.sort_values("effective_labels", ascending=False).itertuples():
        effective = ("–" if pd.isna(r.effective_labels) else f"{r.effective_labels:,.0f}")
        verdict = ("" if not r.effective_labels < r.n_labelled else
                   " (less than the labels alone: its predictions add nothing here, use the "
                   "labels' interval)")
        lines.append(f"  {display_name(r.predictor)}: {r.n_labelled:,} labels + {r.n_unlabelled:,} "
                     f"predictions are worth about {effective} labels{verdict}; estimate "
                     f"{_number(r.estimate)} ({_interval(r.ci_low, r.ci_high)}) vs "
                     f"{_number(r.classical_estimate)} "
                     f"({_interval(r.classical_low, r.classical_high)}) from the labels alone")
    return lines


RANKING_TITLE = ("which model writes the best comments (human labels; #rank, mean score: correct "
                 "1, partial 0.5, incorrect 0, 95% interval; within a column, models sharing a "
                 "letter are not told apart, Holm alpha {alpha}; quality.csv)")


def ranking_grid(summary: Summary) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(groups, rows): a row per model, in the order of the first group ("all"), and per group
    a cell '#rank mean (low-high) letters' ('' where the model has no label there)."""
    ranking = summary.ranking
    groups = list(dict.fromkeys(ranking.group))
    cell = {}
    for group, rows in ranking.groupby("group", sort=False):
        for rank, r in enumerate(rows.itertuples(), 1):
            cell[(group, r.model)] = (f"#{rank} {_number(r.mean_score)} "
                                      f"({_interval(r.mean_score_low, r.mean_score_high)}) "
                                      f"{r.letters}")
    models = list(dict.fromkeys(ranking.model))
    return groups, [(display_name(m), [cell.get((g, m), "") for g in groups]) for m in models]


def _blocks(report: AlignReport, summary: Summary) -> list[tuple[str, list[str]]]:
    """The answers after the ranking as (line, lines under it): what both views print."""
    blocks = [(_best_line("metric", summary.best.get("metric")), [])]
    if report.judges is not None:
        blocks.append((_best_line("judge", summary.best.get("judge")), []))
    for lines in (_replace_lines(summary), _worth_lines(summary)):
        if lines:
            blocks.append((lines[0], lines[1:]))
    return blocks


def answer_lines(report: AlignReport, summary: Summary | None = None) -> list[str]:
    """The answers after the ranking, as plain lines (the caller escapes rich markup)."""
    return [line for head, subs in _blocks(report, summary or summarise(report))
            for line in (head, *subs)]


def answers_html(report: AlignReport, figure: str = "") -> str:
    """report.html's opening section: the same answers, the ranking as a table and `figure`
    (an embedded figure's HTML) beside it."""
    summary = summarise(report)
    parts = ["<h2>The answers</h2>"]
    groups, rows = ranking_grid(summary)
    if rows:
        head = "<tr><th>model</th>" + "".join(f"<th>{html.escape(g)}</th>" for g in groups) + \
            "</tr>"
        body = "".join(f"<tr><td>{html.escape(model)}</td>"
                       + "".join(f"<td class='n'>{html.escape(c)}</td>" for c in cells) + "</tr>"
                       for model, cells in rows)
        parts.append("<h3>Which model writes the best comments</h3>"
                     f"<div class='scroll'><table class='t' id='quality'><thead>{head}</thead>"
                     f"<tbody>{body}</tbody></table></div>{figure}"
                     "<p class='meta'>Per column (all items, then each language): the model's "
                     "rank, the mean score of the human labels (correct 1, partial 0.5, incorrect "
                     "0) and its 95% interval (Student's t); models sharing a letter are not told "
                     "apart (exact paired permutation tests on the targets both have labelled, "
                     f"Holm within each column, alpha {summary.alpha}). Shares with Wilson "
                     "intervals: <a href='quality.csv'>quality.csv</a>; every pair: "
                     "<a href='quality_tests.csv'>quality_tests.csv</a>.</p>")
    blocks = _blocks(report, summary)
    parts.append("<ul class='answers'>" + "".join(
        f"<li>{html.escape(text)}" + ("<ul>" + "".join(f"<li>{html.escape(s.strip())}</li>"
                                                        for s in subs) + "</ul>" if subs else "")
        + "</li>" for text, subs in blocks) + "</ul>")
    return "\n".join(parts)


__all__ = ["RANKING_TITLE", "Summary", "answer_lines", "answers_html", "ranking_grid",
           "summarise"]
