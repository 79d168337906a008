"""`judges.importer --format labels`: a CSV/TSV/JSONL of (item, generating model, label, codes,
language) written anywhere becomes one judge run, checked first (file, line, column of the first
problem), written in one transaction, idempotent, and read by judges.report and align exactly as
a run the project made. Every file here is written by the tests."""
from __future__ import annotations

import csv
import json
import sqlite3

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from sqlmodel import select

from align.data import load_generations
from db import models
from db.__main__ import main as db_main
from db.__main__ import table_counts
from db.engine import session_scope
from judges import report
from testing.cli import as_command, run_in_process

MODELS = ("sys-a", "sys-b", "sys-c")
ITEMS = {"q1": ("nl", "Telt twee getallen op."), "q2": ("nl", "Sluit het bestand."),
         "q3": ("el", "Προσθέτει δύο αριθμούς."), "q4": ("el", "Κλείνει το αρχείο.")}
LEVELS = ("incorrect", "partial", "correct")
HUMAN = {(item, model): LEVELS[(i + j) % 3] for i, item in enumerate(ITEMS)
         for j, model in enumerate(MODELS)}
# the judge: the humans' labels but two (q1's sys-a is incorrect, q3's correct)
JUDGE = {**HUMAN, ("q1", "sys-a"): "partial", ("q3", "sys-a"): "partial"}
CODES = {("q2", "sys-b"): ["SE-MD", "LG-GR1"]}


def write(path, rows, *, bom=False, crlf=False, encoding="utf-8"):
    """A CSV/TSV (header from the first row) or JSON lines file of `rows`."""
    if path.suffix in (".csv", ".tsv"):
        with open(path, "w", encoding="utf-8-sig" if bom else encoding, newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator=(
                "\r\n" if crlf else "\n"), delimiter="\t" if path.suffix == ".tsv" else ",")
            writer.writeheader()
            writer.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                        encoding="utf-8")
    return path


def pairs_db(url, tmp_path):
    """Four items (two Dutch, two Greek), three models each, every generation labelled by
    `expert`, through `db import --format pairs`."""
    rows = [{"item_id": item, "language": lang, "model": model, "reference": text,
             "prediction": f"{model}: {text}", "label": HUMAN[(item, model)]}
            for item, (lang, text) in ITEMS.items() for model in MODELS]
    path = write(tmp_path / "pairs.csv", rows)
    assert as_command(db_main, "python -m db")(
        ["import", "--format", "pairs", "--dataset", "mine", str(path), "--db", url]) == 0
    return url


def label_rows(labels=JUDGE, **extra) -> list[dict]:
    return [{"item_id": item, "model": model, "label": label,
             "codes": ", ".join(CODES.get((item, model), [])), **extra}
            for (item, model), label in labels.items()]


def import_labels(path, *args):
    return run_in_process("judges.importer", "--format", "labels", str(path), *args)


def stored(url, run_id=None):
    """(item, model) -> (status, accuracy, codes) of the verdicts (of one run)."""
    with session_scope(url) as s:
        query = (select(models.Target.external_id, models.Generation.model,
                        models.JudgeVerdict.status, models.JudgeVerdict.accuracy,
                        models.JudgeVerdict.codes)
                 .join(models.Generation, models.Generation.target_id == models.Target.id)
                 .join(models.JudgeVerdict,
                       models.JudgeVerdict.generation_id == models.Generation.id))
        if run_id is not None:
            query = query.where(models.JudgeVerdict.run_id == run_id)
        return {(item, model): (status, accuracy, [c["code"] for c in codes])
                for item, model, status, accuracy, codes in s.exec(query).all()}


def test_labels_become_a_run_compared_like_any_and_importing_again_changes_nothing(
        any_db_url, tmp_path):
    url = pairs_db(any_db_url, tmp_path)
    path = write(tmp_path / "gpt.csv", label_rows())
    done = import_labels(path, "--model", "acme/gpt-9", "--db", url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"{path}: judge acme/gpt-9[labels,unknown,unknown]: 12 rows, 12 verdicts"
                        " (correct 3, partial 6, incorrect 3) on dataset 'mine'")
    assert lines[1].startswith("imported into ") and lines[1].endswith("(one transaction):")
    assert lines[2:] == ["  judge_run       1 created", "  judge_verdict   12 created"]
    with session_scope(url) as s:
        (run,) = s.exec(select(models.JudgeRun)).all()
        assert (run.model, run.backend, run.strategy, run.prompt_language, run.prompt_version) \
            == ("acme/gpt-9", "labels", "labels", "unknown", "unknown")
        assert (run.prompt_tokens, run.completion_tokens, run.cost_usd) == (None, None, None)
        assert run.params["target_language"] == "el,nl" and run.params["dataset"] == "mine"
        assert s.exec(select(models.JudgeResponse)).all() == []
        run_id = run.id
    assert stored(url) == {key: ("ok", label, CODES.get(key, [])) for key, label in JUDGE.items()}
    before = table_counts(url)
    again = import_labels(path, "--model", "acme/gpt-9", "--db", url)
    assert again.returncode == 0 and "created" not in again.stdout and "updated" not in again.stdout
    assert "judge_verdict   12 unchanged" in again.stdout and table_counts(url) == before

    keys = list(HUMAN)
    expected = cohen_kappa_score([LEVELS.index(HUMAN[k]) for k in keys],
                                 [LEVELS.index(JUDGE[k]) for k in keys], weights="quadratic")
    shown = run_in_process("judges.report", "--db", url, "--bootstrap", "0", "--out",
                           str(tmp_path / "report"), "--no-figures")
    assert shown.returncode == 0, shown.stderr
    kappa = pd.read_csv(tmp_path / "report" / "kappa.csv").set_index("run_id")
    assert kappa.loc[run_id, "key"] == "acme/gpt-9[labels,unknown,unknown]"
    assert kappa.loc[run_id, "n"] == 12 and kappa.loc[run_id, "kappa"] == pytest.approx(expected)
    aligned = run_in_process("align", "--db", url, "--out", str(tmp_path / "align"),
                             "--no-figures", "--slice", "all", "language", "--resamples", "0")
    assert aligned.returncode == 0, aligned.stderr
    assert "acme/gpt-9[labels,unknown,unknown]" in aligned.stdout
    judges = pd.read_csv(tmp_path / "align" / "judges.csv")
    overall = judges[judges.slice == "all"].set_index("judge_run_id")
    assert overall.loc[run_id, "n"] == 12
    assert overall.loc[run_id, "kappa"] == pytest.approx(expected)
    assert sorted(judges[judges.slice == "language"].slice_value) == ["el", "nl"]


@pytest.mark.parametrize("suffix, encoding", [(".tsv", "utf-8"), (".tsv", "utf-16"),
                                              (".jsonl", "utf-8")])
def test_tsv_utf16_and_json_lines_give_the_same_run(db_url, tmp_path, suffix, encoding):
    """TSV, Excel's "Unicode text" (UTF-16 with its byte order mark, tabs) and JSON lines."""
    url = pairs_db(db_url, tmp_path)
    rows = label_rows()
    if suffix == ".jsonl":  # JSON lines may give codes as a list
        rows = [dict(r, codes=CODES.get((r["item_id"], r["model"]), [])) for r in rows]
    path = write(tmp_path / f"l{suffix}", rows, encoding=encoding)
    assert import_labels(path, "--model", "j", "--db", url).returncode == 0
    assert stored(url) == {key: ("ok", label, CODES.get(key, [])) for key, label in JUDGE.items()}


def test_a_spreadsheet_csv_with_bom_crlf_and_loose_spelling_on_the_release_keys(demo_db_url,
                                                                               tmp_path):
    """Excel's CSV: a BOM, CRLF, headers in any case, labels as people type them; the demo's
    files hold several targets, so `file_id` needs `original_comment`."""
    with session_scope(demo_db_url) as s:
        found = s.exec(select(models.SourceFile.external_id, models.Target.original_comment,
                              models.Generation.model, models.Generation.id,
                              models.SourceFile.natural_language)
                       .join(models.Target, models.Target.source_file_id == models.SourceFile.id)
                       .join(models.Generation, models.Generation.target_id == models.Target.id)
                       .order_by(models.Generation.id).limit(4)).all()
    spellings = [(" Correct ", "correct"), ("PARTIAL", "partial"),
                 ("Partially correct", "partial"), ("incorrect ", "incorrect")]
    rows = [{"File_ID": file_id, "Original_Comment": comment, "Model": model, "Label": typed,
             "Codes": "ms-lt; SE-HA1" if typed.strip() == "incorrect" else "", "Language": lang}
            for (file_id, comment, model, _, lang), (typed, _) in zip(found, spellings)]
    path = write(tmp_path / "sheet.csv", rows, bom=True, crlf=True)
    assert path.read_bytes().startswith(b"\xef\xbb\xbfFile_ID") and b"\r\n" in path.read_bytes()
    done = import_labels(path, "--model", "sheet", "--db", demo_db_url)
    assert done.returncode == 0, done.stderr
    with session_scope(demo_db_url) as s:
        got = {v.generation_id: (v.accuracy, [c["code"] for c in v.codes])
               for v in s.exec(select(models.JudgeVerdict)).all()}
    assert got == {g: (value, ["MS-LT", "SE-HA1"] if value == "incorrect" else [])
                   for (_, _, _, g, _), (_, value) in zip(found, spellings)}


def test_an_imported_run_reads_exactly_like_the_project_run_it_copies(judged, tmp_path):
    """A project run's ok verdicts written out as labels (items named as align names them) and
    imported under another judge's name: judges.report and align give both the same n and
    kappa."""
    url, _ = judged
    with session_scope(url) as s:
        runs = s.exec(select(models.JudgeRun)).all()
        source = next(r for r in runs if (r.params.get("sampling") or {}).get("seed") == 44)
        verdicts = s.exec(select(models.JudgeVerdict.generation_id, models.JudgeVerdict.status,
                                 models.JudgeVerdict.accuracy, models.JudgeVerdict.codes)
                          .where(models.JudgeVerdict.run_id == source.id)).all()
        source_id = source.id
    names = load_generations(url).set_index("generation_id")
    rows = [{"item_id": names.loc[v.generation_id, "item"],
             "model": names.loc[v.generation_id, "model"], "label": v.accuracy,
             "codes": ",".join(c["code"] for c in v.codes)}
            for v in verdicts if v.status == "ok" and v.accuracy]
    assert len({r["label"] for r in rows}) == 2 and len(rows) == 10
    path = write(tmp_path / "copy.csv", rows)
    assert import_labels(path, "--model", "copy", "--db", url).returncode == 0
    with session_scope(url) as s:
        copy_id = s.exec(select(models.JudgeRun.id).where(models.JudgeRun.model == "copy")).one()
    built = report.build_report(url, n_resamples=200)["kappa"].set_index("run_id")
    columns = ["n", "kappa", "kappa_low", "kappa_high"]
    assert built.loc[copy_id, columns].tolist() == built.loc[source_id, columns].tolist()
    assert built.loc[copy_id, "n"] == 10  # the Greek generations: the humans labelled those
    aligned = run_in_process("align", "--db", url, "--out", str(tmp_path / "align"),
                             "--no-figures", "--slice", "all", "--resamples", "200",
                             "--significance", "kappa", "--min-items", "3")
    assert aligned.returncode == 0, aligned.stderr
    judges = pd.read_csv(tmp_path / "align" / "judges.csv").set_index("judge_run_id")
    assert judges.loc[copy_id, columns].tolist() == judges.loc[source_id, columns].tolist()
    pairs = pd.read_csv(tmp_path / "align" / "significance.csv")
    assert ((pairs.a == "copy[labels,unknown,unknown]")
            | (pairs.b == "copy[labels,unknown,unknown]")).any()


GOOD = {"item_id": "q1", "model": "sys-a", "label": "correct", "codes": "", "language": "nl"}


@pytest.mark.parametrize("rows, where", [
    ([{k: v for k, v in GOOD.items() if k != "label"}],
     "line 1, field 'label': missing column (required in a labels file)"),
    ([{k: v for k, v in GOOD.items() if k != "item_id"}],
     "line 1, field 'item_id': missing column (the item: item_id, or the release's file_id)"),
    ([dict(GOOD, score=3)], "line 1, field 'score': unknown column; expected some of item_id, "
     "file_id, original_comment, model, label, codes, language (db/FORMAT.md)"),
    ([GOOD, dict(GOOD, label="sort of")], "line 3, field 'label': unknown accuracy label "
     "'sort of'; expected one of incorrect, partial, correct"),
    ([GOOD, dict(GOOD, label="2")], "line 3, field 'label': unknown accuracy label '2'"),
    ([GOOD, dict(GOOD, model="sys-b", label="")], "line 3, field 'label': missing or empty "
     "(a row is a verdict: leave out the generations the judge gave no label)"),
    ([GOOD, dict(GOOD, item_id="q9")], "line 3, field 'item_id': no item 'q9' in dataset "
     "'mine'"),
    ([GOOD, dict(GOOD, model="sys-z")], "line 3, field 'model': item 'q1' has no generation of "
     "model 'sys-z' (its models: sys-a, sys-b, sys-c)"),
    ([GOOD, dict(GOOD, model="sys-b", language="de")],
     "line 3, field 'language': item 'q1' is in 'nl', not 'de'"),
    ([GOOD, dict(GOOD, model="sys-b", language="dutch")],
     "line 3, field 'language': 'dutch' is not a language code; did you mean 'nl'?"),
    ([GOOD, dict(GOOD, model="sys-b", codes="SE-MD, XX-1")],
     "line 3, field 'codes': invalid taxonomy codes for nlce-2025.1: 'XX-1' (unknown)"),
    ([GOOD, dict(GOOD, model="sys-b"), dict(GOOD, label="partial", codes="SE-MD")],
     "line 4, field 'label': item 'q1', model 'sys-a' is labelled correct on line 2, partial "
     "(SE-MD) here"),
])
def test_bad_input_is_one_line_naming_file_line_and_column_and_writes_nothing(
        db_url, tmp_path, rows, where):
    url = pairs_db(db_url, tmp_path)
    before = table_counts(url)
    path = write(tmp_path / "bad.csv", rows)
    done = import_labels(path, "--model", "j", "--db", url)
    assert done.returncode == 2
    assert done.stderr.startswith(f"python -m judges.importer: error: {path}, {where}")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert table_counts(url) == before  # nothing of the file was written


def test_a_good_row_after_a_bad_one_is_not_kept_and_check_lists_every_problem(db_url, tmp_path):
    url = pairs_db(db_url, tmp_path)
    rows = [dict(GOOD, item_id="q9"), dict(GOOD, model="sys-b"), dict(GOOD, label="meh")]
    path = write(tmp_path / "bad.jsonl", rows)
    checked = import_labels(path, "--model", "j", "--check", "--db", url)
    assert checked.returncode == 2
    assert checked.stderr.splitlines() == [
        f"{path}, line 1, field 'item_id': no item 'q9' in dataset 'mine' (a pairs item's id, "
        "or a file's comment as align names it, repo/path:start-end)",
        f"{path}, line 3, field 'label': unknown accuracy label 'meh'; expected one of "
        "incorrect, partial, correct",
        "python -m judges.importer: error: check: 2 problem(s); nothing was written"]
    good = write(tmp_path / "good.csv", label_rows())
    checked = import_labels(good, "--model", "j", "--check", "--db", url)
    assert checked.returncode == 0 and "check: an import would write:" in checked.stdout
    assert "judge_verdict   12 created" in checked.stdout
    assert table_counts(url)["judge_run"] == 0 and table_counts(url)["judge_verdict"] == 0


def test_another_file_for_the_same_run_is_refused_replaced_or_a_second_run(db_url, tmp_path):
    url = pairs_db(db_url, tmp_path)
    first = write(tmp_path / "first.csv", label_rows())
    assert import_labels(first, "--model", "j", "--db", url).returncode == 0
    fixed = {**JUDGE, ("q1", "sys-a"): HUMAN[("q1", "sys-a")]}
    del fixed[("q4", "sys-c")]
    second = write(tmp_path / "second.csv", label_rows(fixed) + label_rows(fixed)[:2])
    refused = import_labels(second, "--model", "j", "--db", url)
    assert refused.returncode == 2 and refused.stderr == (
        f"python -m judges.importer: error: {second}, file: judge run 1 "
        "j[labels,unknown,unknown] already holds other labels (first.csv, sha256 "
        f"{_sha(first)[:12]}, dataset 'mine'): --replace makes its verdicts this file's; "
        "another --prompt-version imports this file as a second run\n")
    assert stored(url) == {k: ("ok", v, CODES.get(k, [])) for k, v in JUDGE.items()}
    replaced = import_labels(second, "--model", "j", "--replace", "--db", url)
    assert replaced.returncode == 0, replaced.stderr
    assert "13 rows, 11 verdicts" in replaced.stdout
    assert "2 repeated row(s) with the same label counted once" in replaced.stdout
    assert "judge_verdict   1 deleted, 10 unchanged, 1 updated" in replaced.stdout
    assert stored(url, 1) == {k: ("ok", v, CODES.get(k, [])) for k, v in fixed.items()}
    apart = import_labels(first, "--model", "j", "--prompt-version", "v2", "--prompt-lang",
                          "EN", "--db", url)
    assert apart.returncode == 0 and "judge j[labels,en,v2]" in apart.stdout
    assert len(stored(url, 2)) == 12 and table_counts(url)["judge_run"] == 2


def _sha(path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_options_and_databases_are_checked_before_anything(db_url, tmp_path):
    path = write(tmp_path / "l.csv", label_rows())
    missing = tmp_path / "none.db"
    done = import_labels(path, "--model", "j", "--db", f"sqlite:///{missing}")
    assert done.returncode == 2 and f"no database at {missing}" in done.stderr
    assert not missing.exists()
    foreign, text = tmp_path / "notes.db", tmp_path / "notes.txt"  # not this project's: untouched
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE notes (x)")
    text.write_text("hello\n")
    before = {p: p.read_bytes() for p in (foreign, text)}
    for db, message in ((foreign, f"{foreign} holds no project database (tables notes)"),
                        (text, f"{text} is not a SQLite database")):
        for check in ([], ["--check"]):
            done = import_labels(path, "--model", "j", *check, "--db", str(db))
            assert done.returncode == 2 and message in done.stderr
            assert done.stderr.count("\n") == 1 and "internal error" not in done.stderr
    assert {p: p.read_bytes() for p in (foreign, text)} == before
    url = pairs_db(db_url, tmp_path)
    with session_scope(url) as s:
        s.add(models.Dataset(name="other"))
    for args, message in (
            (["--model", "j"], "--dataset: give --dataset (datasets here: mine, other)"),
            (["--model", "j", "--dataset", "nope"], "--dataset: no dataset 'nope'"),
            (["--model", " ", "--dataset", "mine"], "--model: empty"),
            (["--model", "j", "--prompt-lang", "greek"], "--prompt-lang: 'greek' is not a "
                                                         "language code; did you mean 'el'?"),
            ([str(path), "--model", "j"], "one file is one run, and 2 were given")):
        done = import_labels(path, *args, "--db", url)
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert table_counts(url)["judge_run"] == 0


def test_nlce_judges_import_takes_the_labels_format_too(db_url, tmp_path):
    url = pairs_db(db_url, tmp_path)
    path = write(tmp_path / "l.csv", label_rows())
    done = run_in_process("nlce", "judges", "import", "--format", "labels", str(path),
                          "--model", "j", "--db", url)
    assert done.returncode == 0, done.stderr
    assert len(stored(url)) == 12
    helped = run_in_process("judges.importer", "--help")
    assert "--format {study,labels}" in helped.stdout
