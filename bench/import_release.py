"""Benchmark of `db import --format release` at the study's size, bulk path against per record.

Generates a synthetic release laid out as on the hub (`<Config>/train-00000-of-00001.parquet`
for Chinese, Dutch, English, Greek, Polish), ROWS rows per language (default 500) and the
study's five models, so 5 x 500 x 5 = 12,500 generations, every one labelled by the expert
except where noted. Every file is ~2 KB of code; each model's FIM input is laid out in that
model's family (`corpus.fim`), so the targets are located from the FIM prefix. Mixed in:
- every 10th row's comment occurs twice in its file with identical 200+ character windows;
- every 40th generation is empty (`predict_` and `predicted_comment_` both "") and labelled;
- error codes in every cell form the release uses: "MS-LT, SE-HA1", "MS-ET; SE-MD",
  "['MS-LT', 'SE-HA1']", "None", "", null, and (the Greek table) a list<string> column.

Two timings in the same run, each on a fresh SQLite database whose schema is created before the
clock starts: (1) the whole release through the bulk path, in one transaction; (2) the
per-record path (`import_release(bulk=False)`, one `save_annotation` per label) on the first
SUBSET rows of each table, extrapolated linearly to the whole release (the per-record cost
grows at least linearly, so the extrapolation favours it). Prints both and their ratio.

    .venv/bin/python bench/import_release.py [--rows 500] [--subset 20] [--keep DIR]
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpus.fim import build_fim_prompt, family_for_model  # noqa: E402
from db import get_engine, session_scope  # noqa: E402
from db.__main__ import table_counts  # noqa: E402
from db.formats import STUDY_MODELS  # noqa: E402
from db.importer import import_release  # noqa: E402

CONFIGS = {"Chinese": "返回 列表 中 最大 的 元素 如果 为空 就 返回 默认 值 缓存 读取",
           "Dutch": "geef de grootste waarde van de lijst terug of een standaard als leeg",
           "English": "return the largest value of the list or a default when it is empty",
           "Greek": "επιστρέφει τη μεγαλύτερη τιμή της λίστας ή μια προεπιλογή αν είναι κενή",
           "Polish": "zwraca największą wartość listy lub wartość domyślną gdy jest pusta"}
CODE_CELLS = ("MS-LT, SE-HA1", "MS-ET; SE-MD", "['MS-LT', 'SE-HA1']", "None", "", None)
ACCURACY = ("Correct", "Partial", "Incorrect")


def _comment(rng: random.Random, words: list[str], config: str) -> str:
    joiner = "" if config == "Chinese" else " "
    return "# " + joiner.join(rng.sample(words, 8))


def _file(rng: random.Random, comment: str, row: int, repeated: bool) -> tuple[str, int]:
    """About 2 KB of Python holding `comment` (twice, with identical surroundings, when
    `repeated`) and the start of the occurrence that is the target."""
    before = "".join(f"import module_{row}_{i}\n" for i in range(12))
    body = "".join(f"    value_{i} = items[{i}] if len(items) > {i} else default\n"
                   for i in range(rng.randint(18, 24)))
    block = before + comment + f"\ndef largest_{row}(items, default=None):\n" + body
    content = block + block if repeated else block
    first = content.index(comment)
    return content, content.index(comment, first + 1) if repeated else first


def synthetic_release(root: Path, rows: int, seed: int = 0) -> int:
    """Write the release under `root`; returns the number of generations."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng, generations = random.Random(seed), 0
    for config, vocabulary in CONFIGS.items():
        words, table = vocabulary.split(), []
        for row in range(rows):
            comment = _comment(rng, words, config)
            content, start = _file(rng, comment, row, repeated=row % 10 == 0)
            record = {"file_id": f"{config}-{row:04d}", "content": content,
                      "repo": f"synthetic/{config.lower()}-{row % 37}", "path": f"src/m{row}.py",
                      "original_comment": comment}
            for model in STUDY_MODELS:
                fim = build_fim_prompt(content, start, start + len(comment),
                                       family_for_model(model))
                empty = generations % 40 == 39
                written = "" if empty else " " + " ".join(rng.sample(words, 3)) + "\n"
                codes = CODE_CELLS[generations % len(CODE_CELLS)]
                if config == "Greek":  # a list<string> column, as parquet can hold it
                    codes = [] if codes in (None, "", "None") else ["MS-LT", "SE-HA1"]
                record.update({
                    f"masked_data_{model}": fim.prompt, f"predict_{model}": written,
                    f"predicted_comment_{model}": "" if empty else fim.prime + written.rstrip(),
                    f"expert_accuracy_{model}": ACCURACY[generations % 3],
                    f"error_codes_{model}": codes})
                generations += 1
            table.append(record)
        (root / config).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(table), root / config / "train-00000-of-00001.parquet")
    return generations


def _timed_import(url: str, folder: Path, **kwargs) -> tuple[float, dict]:
    get_engine(url)  # schema first: not part of the import's time
    started = time.perf_counter()
    with session_scope(url) as session:
        import_release(session, [folder], **kwargs)
    return time.perf_counter() - started, table_counts(url)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=500, help="rows per language (default 500)")
    parser.add_argument("--subset", type=int, default=20,
                        help="rows per language for the per-record timing (default 20)")
    parser.add_argument("--keep", type=Path, help="write the release and databases here")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-import-"))
    try:
        work.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        total = synthetic_release(work / "release", args.rows)
        print(f"synthetic release: {total} generations, 5 languages x {args.rows} rows x "
              f"{len(STUDY_MODELS)} models ({time.perf_counter() - started:.1f} s to write)")

        bulk_s, counts = _timed_import(f"sqlite:///{work / 'bulk.db'}", work / "release")
        assert counts["generation"] == total, counts
        assert counts["annotation"] == counts["annotation_event"] == total, counts
        print(f"bulk path:       {bulk_s:7.2f} s for {total} generations "
              f"({total / bulk_s:,.0f}/s); {counts['annotation']} labels, "
              f"{counts['annotation_event']} history rows, {counts['annotation_code']} codes")

        subset = min(args.subset, args.rows)
        row_s, sub_counts = _timed_import(f"sqlite:///{work / 'per_record.db'}",
                                          work / "release", bulk=False, limit=subset)
        done = sub_counts["generation"]
        estimate = row_s * total / done
        print(f"per-record path: {row_s:7.2f} s for {done} generations ({done / row_s:,.0f}/s; "
              f"first {subset} rows of each table), extrapolated to {total}: {estimate:.1f} s")
        print(f"ratio: the bulk path is {estimate / bulk_s:.1f}x faster "
              f"(per-record extrapolated / bulk measured)")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/import_release.py"))
