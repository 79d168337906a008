"""The shipped demo dataset loads through the importer with the documented counts."""
from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from sqlalchemy import select

from db import models as m
from db import session_scope
from db.__main__ import main
from db.demo import DEMO_JSONL, DEMO_PASSWORD, DEMO_USERS, ensure_demo_database, load_demo
from db.demo.build_demo import MODELS, build, primer
from taxonomy import default_taxonomy


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory, demo_db_file):
    """What `load_demo` wrote into an empty database (the session's load, tests/conftest.py;
    the load itself is tested below)."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    shutil.copy(demo_db_file, path)
    return f"sqlite:///{path}"


def test_shipped_file_is_what_the_build_script_writes():
    shipped = [json.loads(line) for line in DEMO_JSONL.read_text(encoding="utf-8").splitlines()]
    assert shipped == json.loads(json.dumps(build(), ensure_ascii=False))


def test_demo_counts(demo_url):
    with session_scope(demo_url) as session:
        def count(model):
            return len(session.execute(select(model.id)).all())
        assert count(m.SourceFile) == 15 and count(m.Target) == 25
        assert count(m.Generation) == 125
        assert count(m.Annotation) == 240 and count(m.GoldLabel) == 6
        languages = Counter(session.execute(select(m.SourceFile.natural_language)).scalars())
        assert languages == {"en": 3, "nl": 3, "zh": 3, "el": 3, "pl": 3}
        programming = set(session.execute(select(m.SourceFile.programming_language)).scalars())
        assert programming == {"python", "java", "javascript"}
        assert set(session.execute(select(m.Generation.model)).scalars()) == set(MODELS)
        roles = dict(session.execute(select(m.Annotator.username, m.Annotator.role)).all())
        assert roles == {"expert": "expert", "anna": "annotator", "bas": "annotator",
                         "lead": "lead"}


def test_demo_labels_have_a_spread(demo_url):
    with session_scope(demo_url) as session:
        expert = dict(session.execute(
            select(m.Annotation.generation_id, m.Annotation.accuracy)
            .join(m.Annotator).where(m.Annotator.username == "expert")).all())
        assert len(expert) == 125
        spread = Counter(expert.values())
        assert min(spread.values()) >= 30, spread  # correct, partial and incorrect all common
        codes = set(session.execute(select(m.AnnotationCode.code)).scalars())
        assert {"MS-LT", "MS-RE2", "LG-WL2", "SE-HA3", "SE-MD", "MS-CC", "MS-ET"} <= codes
        assert len(codes) >= 20
        by_user = {}
        for user in ("anna", "bas"):
            by_user[user] = dict(session.execute(
                select(m.Annotation.generation_id, m.Annotation.accuracy)
                .join(m.Annotator).where(m.Annotator.username == user)).all())
        both = set(by_user["anna"]) & set(by_user["bas"])
        assert len(both) == 50
        agree = sum(by_user["anna"][g] == by_user["bas"][g] for g in both)
        assert 25 <= agree < 50  # mostly agreeing, with real disagreements


def test_demo_generations_are_realistic(demo_url):
    with session_scope(demo_url) as session:
        rows = session.execute(select(m.Generation, m.Target, m.SourceFile)
                               .join(m.Target, m.Generation.target_id == m.Target.id)
                               .join(m.SourceFile, m.Target.source_file_id == m.SourceFile.id)
                               ).all()
        for generation, target, source in rows:
            assert source.content[target.span_start:target.span_end] == target.original_comment
            # the FIM prefix is the code before the comment plus its first words (the primer)
            head = primer(target.original_comment, source.natural_language)
            assert source.content[:target.span_start] + head in generation.fim_input
            assert source.content[target.span_end:] in generation.fim_input
            # the prediction starts with the primer; the raw output is what followed it
            assert generation.predicted_comment.startswith(head)
            assert generation.raw_output.startswith(generation.predicted_comment[len(head):])
        late = [g for g, _, _ in rows if "\nexport function" in g.raw_output
                or "return sorted" in g.raw_output]
        assert late, "some raw outputs run on into code after the comment"


def test_demo_passwords_are_scrypt_hashes(demo_url):
    from db.passwords import verify_password  # the app's checker must accept them

    with session_scope(demo_url) as session:
        hashes = dict(session.execute(select(m.Annotator.username, m.Annotator.password_hash)).all())
    for user in DEMO_USERS:
        assert hashes[user].startswith("scrypt$") and DEMO_PASSWORD not in hashes[user]
        assert verify_password(DEMO_PASSWORD, hashes[user])
        assert not verify_password("wrong", hashes[user])
    assert hashes["expert"] is None  # the imported expert cannot sign in


def test_demo_codes_are_valid_taxonomy_codes():
    # the shipped file, which is build()'s output (above); build() again would hash the
    # passwords again at OWASP's cost (a second and more)
    taxonomy = default_taxonomy()
    records = [json.loads(line) for line in DEMO_JSONL.read_text(encoding="utf-8").splitlines()]
    assert sum(r["type"] == "annotation" for r in records) == 240
    for record in records:
        if record["type"] in ("annotation", "gold_label"):
            assert taxonomy.validate_codes(record["codes"]) == tuple(record["codes"])


def test_ensure_loads_only_into_an_empty_database(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    counts = ensure_demo_database(url)
    assert counts["generation"] == 125
    assert ensure_demo_database(url) is None
    assert main(["demo", "--db", url]) == 0
    assert "already holds generations" in capsys.readouterr().out
    assert main(["demo", "--force", "--db", url]) == 0  # idempotent merge: same counts
    assert "generation 125" in capsys.readouterr().out


def test_demo_loads_on_postgresql(any_db_url):
    counts = load_demo(any_db_url)
    assert (counts["generation"], counts["annotation"], counts["gold_label"]) == (125, 240, 6)
    assert load_demo(any_db_url) == counts  # idempotent
