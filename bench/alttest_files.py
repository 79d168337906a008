"""Turn a dataset of the Alternative Annotator Test's repository (github.com/nitaytech/AltTest,
`data/<dataset>/human_annotations.json` and `llm_annotations.json`: {annotator or LLM: {key:
value}}) into the project's files: one pairs file per human annotator (imported with
`--annotator` its name) and one labels file per LLM (imported as a judge run), to run published
multi-annotator human labels and LLM labels through import -> judges.report -> align.

    python bench/alttest_files.py data/summeval --out alttest/ --model-part 1 \\
        --scale 1=incorrect,2=incorrect,3=partial,4=partial,5=correct

A key's `__`-separated parts name the item and, at `--model-part`, the generating model
(SummEval: `<document>__<system>__<aspect>`, so the item is `<document>__<aspect>`); without it
every key is an item of one model, `--model`. `--scale` maps each value to the accuracy scale:
this script's mapping, not the study's; keys with a value it does not map are left out and
counted. The texts are not in the files this reads (SummEval's are in its prompts.json): the
pairs files carry the item as reference and the key as prediction, which judges and align do
not read.
`--label-share 0.1` keeps the human labels of a random tenth of the keys (`--seed`; the same keys
for every annotator) and writes the others unlabelled: a study that labelled a sample, whose full
labels are known (docs/align.md's worked example of judge-assisted estimates).
Prints the commands that import the files.
"""
from __future__ import annotations

import argparse
import csv
import json
import random
from collections import Counter
from pathlib import Path


def split_key(key: str, model_part: int | None, model: str) -> tuple[str, str]:
    """(item, generating model) of an AltTest key."""
    if model_part is None:
        return key, model
    parts = key.split("__")
    return "__".join(parts[:model_part] + parts[model_part + 1:]), parts[model_part]


def rows_of(values: dict, scale: dict[str, str], model_part: int | None, model: str,
            skipped: Counter) -> list[dict]:
    out = []
    for key, value in sorted(values.items()):
        label = scale.get(str(value))
        if label is None:
            skipped[str(value)] += 1
            continue
        item, system = split_key(key, model_part, model)
        out.append({"item_id": item, "model": system, "label": label, "key": key})
    return out


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path, help="an AltTest data/<dataset> folder")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--scale", required=True, help="value=label,... (label: correct, partial, "
                   "incorrect)")
    p.add_argument("--model-part", type=int, help="which __-part of a key is the model")
    p.add_argument("--model", default="model", help="the model where keys name none")
    p.add_argument("--lang", default="en")
    p.add_argument("--dataset", default="alttest")
    p.add_argument("--label-share", type=float, default=1.0, metavar="SHARE",
                   help="keep the human labels of this random share of the keys (default 1)")
    p.add_argument("--seed", type=int, default=0, help="of --label-share's draw")
    args = p.parse_args(argv)
    scale = dict(pair.split("=", 1) for pair in args.scale.split(","))
    humans = json.loads((args.folder / "human_annotations.json").read_text(encoding="utf-8"))
    llms = json.loads((args.folder / "llm_annotations.json").read_text(encoding="utf-8"))
    args.out.mkdir(parents=True, exist_ok=True)
    skipped: Counter = Counter()
    commands = []
    draw = random.Random(args.seed)
    kept = {key for key in sorted({k for values in humans.values() for k in values})
            if draw.random() < args.label_share}
    for annotator, values in humans.items():
        rows = [{"item_id": r["item_id"], "language": args.lang, "model": r["model"],
                 "reference": r["item_id"], "prediction": r["key"],
                 "label": r["label"] if r["key"] in kept else ""}
                for r in rows_of(values, scale, args.model_part, args.model, skipped)]
        path = args.out / f"humans.{annotator}.csv"
        write_csv(path, rows)
        commands.append(f"python -m db import --format pairs {path} --dataset {args.dataset} "
                        f"--annotator {annotator}")
    for llm, values in llms.items():
        rows = [{k: v for k, v in r.items() if k != "key"}
                for r in rows_of(values, scale, args.model_part, args.model, skipped)]
        path = args.out / f"{llm}.labels.csv"
        write_csv(path, rows)
        commands.append(f"python -m judges.importer --format labels {path} --model {llm} "
                        f"--dataset {args.dataset}")
    print(f"{len(humans)} annotators, {len(llms)} LLMs; values left out (not in --scale): "
          f"{dict(skipped) or 'none'}")
    print("\n".join(commands))
    return 0


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/, not installed
    from testing.bench import run

    sys.exit(run(main, "bench/alttest_files.py"))
