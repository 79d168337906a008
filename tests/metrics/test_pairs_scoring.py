"""A researcher's own pairs file (no source files) goes through import -> score -> align
(issue 12): context none only, targeted noise from the other references, kappa per slice."""
from __future__ import annotations

import csv
import json

import pytest

from db.__main__ import main as db_main
from metrics.score import main as score_main
from testing.cli import as_command

REFERENCES = {
    "nl": ["Geeft de som van alle bedragen terug", "Sorteert de lijst op datum, oudste eerst",
           "Leest het bestand en slaat lege regels over", "Controleert of de gebruiker is ingelogd",
           "Verwijdert dubbele klanten uit de lijst", "Berekent de btw over het totaalbedrag"],
    "pl": ["Zwraca sumę wszystkich kwot na fakturze", "Sortuje listę według daty, od najstarszej",
           "Czyta plik i pomija puste wiersze", "Sprawdza, czy użytkownik jest zalogowany",
           "Usuwa zduplikowanych klientów z listy", "Oblicza podatek VAT od całej kwoty"],
}


def _rows():
    """Three systems per item: a copy (correct), half of it (partial), unrelated (incorrect)."""
    rows = []
    for lang, refs in REFERENCES.items():
        for i, ref in enumerate(refs):
            words = ref.split()
            other = refs[(i + 3) % len(refs)]
            for model, prediction, label in (("copy", ref, "correct"),
                                             ("half", " ".join(words[:len(words) // 2]), "partial"),
                                             ("other", other, "incorrect")):
                rows.append({"item_id": f"{lang}-{i}", "language": lang, "model": model,
                             "reference": ref, "prediction": prediction, "label": label})
    return rows


def _import(tmp_path, url):
    path = tmp_path / "pairs.csv"
    rows = _rows()
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert db_main(["import", "--format", "pairs", "--dataset", "mine", str(path),
                    "--db", url]) == 0
    return len(rows)


def test_pairs_import_score_and_align_without_files(tmp_path, db_url, capsys):
    n = _import(tmp_path, db_url)
    for noise in ("none", "uniform", "targeted"):
        assert score_main(["--metric", "chrf", "--noise", noise, "--db", db_url,
                           "--no-progress"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert f"{n} scored" in out and "0 errors" in out.replace(",", "")

    from align.__main__ import main as align_main

    report = tmp_path / "align"
    assert align_main(["--db", db_url, "--out", str(report), "--format", "json", "--no-figures",
                       "--bootstrap", "0", "--slice", "all", "language"]) == 0
    results = json.loads((report / "results.json").read_text(encoding="utf-8"))
    rows = [r for r in results["kappa"] if r["metric"] == "chrf"]
    assert {(r["slice"], r["slice_value"]) for r in rows} >= {("all", "all"), ("language", "nl"),
                                                             ("language", "pl")}
    overall = next(r for r in rows if r["slice"] == "all")
    assert overall["n"] == n and overall["kappa"] > 0.5  # copies, halves and strangers separate


def test_targeted_noise_of_a_pairs_target_comes_from_the_other_references(tmp_path, db_url):
    from sqlalchemy import select

    from db import session_scope
    from db.models import NoiseSample, Target

    _import(tmp_path, db_url)
    assert score_main(["--metric", "bleu", "--noise", "targeted", "--lang", "nl", "--db", db_url,
                       "--no-progress"]) == 0
    with session_scope(db_url) as session:
        samples = session.execute(select(Target.original_comment, NoiseSample.text)
                                  .join(NoiseSample, NoiseSample.target_id == Target.id)).all()
    assert len(samples) == len(REFERENCES["nl"])
    pool_words = {w.strip(",").lower() for ref in REFERENCES["nl"] for w in ref.split()}
    for reference, noise in samples:
        words = noise.split()
        assert len(words) == len(reference.split())  # as many tokens as the reference
        assert set(words) <= pool_words | {","}


@pytest.mark.parametrize("noise", ["targeted", "uniform"])
def test_pairs_noise_is_drawn_in_the_references_language(tmp_path, db_url, noise):
    """A translation's pairs carry the source sentence (English) as context: the noise of its
    Dutch references is drawn from Dutch references only, never from the English source."""
    from sqlalchemy import select

    from db import session_scope
    from db.models import NoiseSample

    rows = [dict(r, context=f"The English source sentence number {i} about invoices")
            for i, r in enumerate(_rows()) if r["language"] == "nl"]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert db_main(["import", "--format", "pairs", "--dataset", "mt", str(path),
                    "--db", db_url]) == 0
    assert score_main(["--metric", "chrf", "--noise", noise, "--db", db_url,
                       "--no-progress"]) == 0
    with session_scope(db_url) as session:
        texts = list(session.execute(select(NoiseSample.text)).scalars())
    dutch = {w.strip(",").lower() for ref in REFERENCES["nl"] for w in ref.split()}
    assert len(texts) == len(REFERENCES["nl"])
    assert {w for text in texts for w in text.split()} <= dutch | {","}


@pytest.mark.slow  # the refusal comes after the CLI loaded e5-small
def test_context_other_than_none_is_refused_for_pairs(tmp_path, db_url, capsys):
    _import(tmp_path, db_url)
    assert score_main(["--metric", "bertscore", "--model", "intfloat/multilingual-e5-small",
                       "--layer", "2", "--context", "minimal", "--db", db_url,
                       "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "pairs target has no source file" in err and "--context none" in err


def test_align_keeps_datasets_apart(tmp_path, db_url, capsys):
    """Two datasets with systems of the same names: --dataset picks one; without it, the model
    slice names each system by its dataset instead of pooling them."""
    n = _import(tmp_path, db_url)
    other = tmp_path / "other.csv"
    rows = [dict(r, reference=r["reference"] + " (v2)",
                 prediction=r["prediction"] + (" (v2)" if r["model"] == "copy" else ""))
            for r in _rows()]
    with open(other, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert db_main(["import", "--format", "pairs", "--dataset", "theirs", str(other),
                    "--db", db_url]) == 0
    assert score_main(["--metric", "chrf", "--db", db_url, "--no-progress"]) == 0

    from align.__main__ import main as align_main

    def kappa_rows(*extra):
        out = tmp_path / f"align{len(extra)}"
        assert align_main(["--db", db_url, "--out", str(out), "--format", "json",
                           "--no-figures", "--no-judges", "--bootstrap", "0", "--slice", "all",
                           "model", *extra]) == 0
        return json.loads((out / "results.json").read_text(encoding="utf-8"))["kappa"]

    one = kappa_rows("--dataset", "mine")
    assert next(r for r in one if r["slice"] == "all")["n"] == n
    assert {r["slice_value"] for r in one if r["slice"] == "model"} == {"copy", "half", "other"}
    both = kappa_rows()
    assert next(r for r in both if r["slice"] == "all")["n"] == 2 * n
    assert {r["slice_value"] for r in both if r["slice"] == "model"} == {
        f"{d}/{m}" for d in ("mine", "theirs") for m in ("copy", "half", "other")}
    capsys.readouterr()
    align = as_command(align_main, "python -m align")
    assert align(["--db", db_url, "--out", str(tmp_path / "x"), "--dataset", "nope"]) == 2
    assert "no dataset named 'nope'; this database has: mine, theirs" in capsys.readouterr().err
