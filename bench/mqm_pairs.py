"""Turn a WMT MQM human-evaluation table (github.com/google/wmt-mqm-human-evaluation: one row per
rater x segment x error, columns system, doc, doc_id, seg_id, rater, source, target, category,
severity) into the project's pairs format, to run real human judgements through
import -> score -> align.

    python bench/mqm_pairs.py mqm_ted_zhen.tsv --lang en --out ted_zhen.pairs.jsonl

`--label-share 0.1` keeps the label of a random tenth of the pairs (`--seed`) and writes the
others unlabelled: a study that labelled a sample, whose full labels are known (docs/align.md's
worked example of judge- and metric-assisted estimates).

The reference is the `ref` system's translation of the segment (`--reference-system`); every
other system's translation is a prediction. Its MQM score is the mean over its raters of the
error weights (Major 5, Minor 1, Minor Fluency/Punctuation 0.1, Non-translation 25, Neutral or
no error 0; the weights of Freitag et al. 2021), and the label is `correct` for 0, `partial` up
to `--partial-max` (default 5: at most one major error) and `incorrect` above. This mapping is
this script's, for testing the tooling on real judgements; it is not part of the study.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

TAG = re.compile(r"</?v>")


def weight(category: str, severity: str) -> float:
    severity, category = severity.strip().lower(), category.strip().lower()
    if category.startswith("non-translation"):
        return 25.0
    if severity == "major":
        return 5.0
    if severity == "minor":
        return 0.1 if category == "fluency/punctuation" else 1.0
    return 0.0


def convert(path: Path, lang: str, reference_system: str, partial_max: float) -> list[dict]:
    csv.field_size_limit(sys.maxsize)
    penalties: dict = defaultdict(float)  # (doc, seg, system, rater) -> summed weight
    texts: dict = {}  # (doc, seg, system) -> translation without the error tags
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            key = (row["doc"], row["seg_id"], row["system"])
            texts.setdefault(key, TAG.sub("", row["target"]).strip())
            penalties[key + (row["rater"],)] += weight(row["category"], row["severity"])
    by_item: dict = defaultdict(list)
    for (doc, seg, system, _), penalty in penalties.items():
        by_item[(doc, seg, system)].append(penalty)
    rows = []
    for (doc, seg, system), scores in sorted(by_item.items()):
        reference = texts.get((doc, seg, reference_system))
        prediction = texts[(doc, seg, system)]
        if system == reference_system or not reference:
            continue
        score = sum(scores) / len(scores)
        label = "correct" if score == 0 else "partial" if score <= partial_max else "incorrect"
        rows.append({"item_id": f"{doc}#{seg}", "language": lang, "model": system,
                     "reference": reference, "prediction": prediction, "label": label})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--lang", required=True, help="language of the translations (en, de...)")
    parser.add_argument("--reference-system", default="ref")
    parser.add_argument("--partial-max", type=float, default=5.0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label-share", type=float, default=1.0, metavar="SHARE",
                        help="keep the labels of this random share of the pairs (default 1: all)")
    parser.add_argument("--seed", type=int, default=0, help="of --label-share's draw")
    args = parser.parse_args(argv)
    if not 0 < args.label_share <= 1:
        print(f"--label-share must be above 0 and at most 1, not {args.label_share}",
              file=sys.stderr)
        return 2
    rows = convert(args.table, args.lang, args.reference_system, args.partial_max)
    if args.label_share < 1:
        import random

        draw = random.Random(args.seed)
        for row in rows:
            if draw.random() >= args.label_share:
                row["label"] = ""
    if not rows:
        print(f"{args.table}: no segment has a {args.reference_system!r} translation", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    counts = defaultdict(int)
    for row in rows:
        counts[row["label"] or "unlabelled"] += 1
    print(f"{len(rows)} pairs ({dict(counts)}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/, not installed
    from testing.bench import run

    sys.exit(run(main, "bench/mqm_pairs.py"))
