"""`python -m align`: how well each metric and judge agrees with the humans.

Start-up stays light (argparse only); numpy/pandas/matplotlib load after the arguments parse and
torch only with --demo when scores must be computed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from agreement.correlation import STATISTICS
from agreement.labels import DEFAULT_POLICY, POLICY_HELP, parse_policy
from db.engine import add_database_argument, project_database, read_only_url, resolve_url
from nlce.cli import EXIT_NOTHING_DONE, EXIT_OK, InputError, UserError, run_main

DEFAULT_OUT = "reports/align"
ALL_STATISTICS = ("kappa", *STATISTICS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m align",
        description="Fit KDE thresholds per metric configuration, reclassify every generation, "
                    "and measure agreement with the human labels (quadratic weighted kappa, "
                    "confusion matrices, noise separation, context effect, model groups, judges). "
                    "Writes a table to the terminal and CSV/JSON/PNG/HTML under --out.")
    add_database_argument(parser)
    parser.add_argument("--metric", nargs="+", metavar="NAME",
                        help="only these metrics (as stored in metric_run.metric); default all")
    parser.add_argument("--slice", nargs="+", default=["all", "language", "model"],
                        choices=["all", "language", "model"],
                        help="fit and report per language, per generating model and/or over all "
                             "(default: all three)")
    parser.add_argument("--weighting", choices=["equal", "prior"], default="equal",
                        help="equal (default): each class density normalised on its own; prior: "
                             "densities times class shares (Bayes; collapses to the majority "
                             "class on imbalanced data, which the output flags)")
    parser.add_argument("--bandwidth", default="scott",
                        help="scott (default), silverman, or a number (scipy's bw_method factor)")
    parser.add_argument("--labels", default=DEFAULT_POLICY, metavar="POLICY",
                        help=POLICY_HELP.replace("%", "%%"))
    parser.add_argument("--resamples", "--bootstrap", dest="resamples", type=int, default=1000,
                        metavar="N",
                        help="resamples for every interval and paired test: kappa's 95%% interval, "
                             "the paired bootstrap and the permutations (default 1000; at least "
                             "100 and 5/alpha; 0 = no intervals, tests or ranks)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of every resampling (default 0): equal seeds, equal numbers")
    parser.add_argument("--significance", nargs="+", metavar="STAT",
                        default=list(ALL_STATISTICS), choices=[*ALL_STATISTICS, "none"],
                        help="statistics whose pairwise differences are tested and ranked: "
                             f"{', '.join(ALL_STATISTICS)} (default all) or none")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the rank clusters and of the labels needed "
                             "(default 0.05)")
    parser.add_argument("--min-items", type=int, default=20, metavar="N",
                        help="a slice with fewer labelled items shows 'too few': no kappa, "
                             "interval or rank there (default 20)")
    parser.add_argument("--fit-on", metavar="SPLIT",
                        help="fit thresholds only on this split: language=CODE[,..], "
                             "model=NAME[,..], random:SHARE (whole targets) or all")
    parser.add_argument("--apply-to", metavar="SPLIT",
                        help="classify and evaluate this split with them (default: rest, i.e. "
                             "everything not fitted on); unlabelled generations get predictions")
    parser.add_argument("--thresholds", metavar="FILE",
                        help="apply thresholds saved earlier (thresholds.json) instead of fitting")
    parser.add_argument("--dataset", action="append", default=[], metavar="NAME",
                        help="only this dataset (repeatable); model names found in several "
                             "datasets are sliced per dataset either way")
    parser.add_argument("--families", nargs="+", default=[], metavar="YAML",
                        help="extra model-family tables (entries override the packaged one)")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help=f"folder for CSV/JSON/figures/report.html (default {DEFAULT_OUT})")
    parser.add_argument("--format", choices=["table", "csv", "json"], default="table",
                        help="what to print on stdout (files are always written)")
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument("--no-judges", action="store_true", help="leave the LLM judges out")
    parser.add_argument("--monotone", action="store_true",
                        help="where a configuration's KDE regions are out of order for its "
                             "direction (low scores classed correct), fit ordered thresholds "
                             "instead (the study's method, the default, lets regions fall where "
                             "the densities cross)")
    parser.add_argument("--alt-epsilon", type=float, default=0.2, metavar="EPSILON",
                        help="the alternative annotator test's cost-benefit margin: how much "
                             "worse than an annotator a judge may match the others and still "
                             "count as their equal (default 0.2, the authors' value for expert "
                             "annotators; 0.15 skilled, 0.1 crowd workers); replace.csv")
    parser.add_argument("--alt-scoring", choices=["accuracy", "neg_rmse"], default="accuracy",
                        help="how the alternative annotator test scores a label against the other "
                             "annotators': accuracy (the share with the same label, default) or "
                             "neg_rmse (minus the root mean squared difference on the ordinal "
                             "scale)")
    parser.add_argument("--grid-size", type=int, default=1024,
                        help="grid points for the KDE crossings (default 1024)")
    parser.add_argument("--demo", action="store_true",
                        help="build the demo database if missing, score it with the offline "
                             "demo grid (lexical metrics, BERTScore with the e5 encoder at "
                             "none/minimal/full context, noise), then align")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rich.console import Console

    # Piped output is not cut to 80 columns (rich's default without a terminal); COLUMNS wins.
    wide = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200
    console = Console(stderr=args.format != "table", width=wide)
    from align.kde import parse_bandwidth

    # bad options fail here, before anything is read (InputError: one line, exit 2), and the
    # first before pandas and the report's figures are imported
    bandwidth = parse_bandwidth(args.bandwidth)
    from align.pipeline import AlignOptions, check_resamples, parse_split
    from align.report import OWNED
    from align.thresholds import load_thresholds
    from nlce.outputs import check_output_folder, write_csv

    for spec in (args.fit_on, args.apply_to):
        if spec:
            parse_split(spec)
    if args.apply_to and not args.fit_on:
        raise InputError("--apply-to needs --fit-on")
    if not 0 < args.alpha < 1:
        raise InputError(f"--alpha must be between 0 and 1, not {args.alpha}")
    if not 0 <= args.alt_epsilon < 1:
        raise InputError(f"--alt-epsilon must be at least 0 and below 1 (a share of items), not "
                         f"{args.alt_epsilon}")
    check_resamples(args.resamples, args.alpha, "--resamples")
    if args.min_items < 3:
        raise InputError(f"--min-items {args.min_items}: a slice needs at least 3 labelled items "
                         "for a kappa and its paired tests")
    saved = load_thresholds(args.thresholds) if args.thresholds else None
    parse_policy(args.labels)
    check_output_folder(args.out, OWNED)  # a wrong --out fails before the work (OutputError)
    if args.demo:
        from align.demo import prepare_demo

        url = project_database(args.db, create=True)
        prepare_demo(url, console)
    else:
        url = resolve_url(args.db)
        read_only_url(url)  # a missing database is named now, before anything is read
    options = AlignOptions(metrics=args.metric, slices=tuple(dict.fromkeys(args.slice)),
                           weighting=args.weighting, bandwidth=bandwidth,
                           bootstrap=args.resamples, seed=args.seed, labels=args.labels,
                           significance=() if "none" in args.significance
                           else tuple(dict.fromkeys(args.significance)), alpha=args.alpha,
                           monotone=args.monotone, progress=sys.stderr.isatty(),
                           families=tuple(args.families), fit_on=args.fit_on,
                           apply_to=args.apply_to, thresholds=saved, grid_size=args.grid_size,
                           judges=not args.no_judges, datasets=tuple(args.dataset),
                           alt_scoring=args.alt_scoring, alt_epsilon=args.alt_epsilon,
                           min_items=args.min_items)
    from align.pipeline import nothing_aligned, run_alignment
    from align.report import summary, tables, to_json, write_report
    from align.terminal import print_table

    started = time.perf_counter()
    # aligning only reads: the database is opened read-only (a read-only disk will do)
    report = run_alignment(read_only_url(url), options)
    aligned = time.perf_counter() - started
    why = nothing_aligned(report)
    if why:  # an empty report would replace the last one: --out is left as it was
        raise UserError(f"nothing aligned: {why}; {args.out} left as it was",
                        exit_code=EXIT_NOTHING_DONE)
    written = write_report(report, Path(args.out), with_figures=not args.no_figures)
    if args.format == "table":
        print_table(report, console)
    elif args.format == "csv":
        write_csv(sys.stdout, tables(report)["kappa"])  # kappa.csv, label policy and all
    else:
        import json

        print(json.dumps(to_json(report), indent=1, ensure_ascii=False))
    console.print(f"aligned {summary(report)} in {aligned:.2f}s; report: {written['html']}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m align"))
