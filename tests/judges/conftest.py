"""Fixtures for the judges: the taxonomy, a tiny corpus database with human labels, and a
local chat-completions server (see judge_testkit.py)."""
from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from types import SimpleNamespace

import pytest
from judge_testkit import ChatServer, labelled_answer


@pytest.fixture(scope="session")
def tax():
    from taxonomy import default_taxonomy

    return default_taxonomy()


@pytest.fixture
def chat_server():
    with ChatServer() as server:
        yield server


# ---------------------------------------------------------------- a tiny corpus


MODELS = ("codegemma", "codellama", "codeqwen", "granite", "starcoder2")


@pytest.fixture(scope="session")
def judge_db_file(tmp_path_factory):
    """`fill_judge_db`'s SQLite database made once per session (per xdist worker): each test
    that asks for `judge_db` gets its own copy instead of a schema and a fill of its own."""
    from db.engine import get_engine

    path = tmp_path_factory.mktemp("judge-db") / "judge.db"
    fill_judge_db(f"sqlite:///{path}")
    get_engine(f"sqlite:///{path}").dispose()  # closed: the file holds all of it (no WAL left)
    get_engine.cache_clear()
    return path


@pytest.fixture
def judge_db(judge_db_file, db_url):
    """Two Greek and one English target, five generations each; an expert labels every Greek
    generation, one generation also has a gold label. Returns the URL (a fresh copy of
    `judge_db_file`)."""
    from sqlalchemy.engine import make_url

    from db.engine import get_engine

    get_engine.cache_clear()
    shutil.copy(judge_db_file, make_url(db_url).database)
    yield db_url
    get_engine.cache_clear()


@pytest.fixture
def judge_db_any(any_db_url):
    """`judge_db` on SQLite and on PostgreSQL."""
    from db.engine import get_engine

    get_engine.cache_clear()
    fill_judge_db(any_db_url)
    yield any_db_url
    get_engine(any_db_url).dispose()
    get_engine.cache_clear()


def fill_judge_db(db_url: str) -> None:
    from db import models
    from db.engine import session_scope

    with session_scope(db_url) as s:
        ds = models.Dataset(name="judge-test")
        s.add(ds)
        s.flush()
        expert = models.Annotator(username="expert-el", role="expert", languages=["el"])
        novice = models.Annotator(username="novice-el", role="annotator", languages=["el"])
        lead = models.Annotator(username="lead", role="lead", languages=["el"])
        s.add_all([expert, novice, lead])
        s.flush()
        files = {
            "el": ["def add(a, b):\n    # Προσθέτει δύο αριθμούς\n    return a + b\n",
                   "def area(r):\n    # Υπολογίζει το εμβαδόν κύκλου\n    return 3.14159 * r * r\n"],
            "en": ["def neg(x):\n    # Returns the negation of x\n    return -x\n"],
        }
        labels = ["correct", "partial", "incorrect", "correct", "partial"]
        for lang, contents in files.items():
            for i, content in enumerate(contents):
                sf = models.SourceFile(dataset_id=ds.id, natural_language=lang,
                                       programming_language="python", path=f"{lang}/{i}.py",
                                       content=content, content_sha256=f"{lang}{i}")
                s.add(sf)
                s.flush()
                start = content.index("#")
                end = content.index("\n", start)
                target = models.Target(source_file_id=sf.id, span_start=start, span_end=end,
                                       original_comment=content[start:end], comment_kind="line")
                s.add(target)
                s.flush()
                for j, model in enumerate(MODELS):
                    g = models.Generation(target_id=target.id, model=model,
                                          predicted_comment=f"# {model} comment {i}",
                                          fim_input="", raw_output="")
                    s.add(g)
                    s.flush()
                    if lang != "el":
                        continue
                    a = models.Annotation(generation_id=g.id, annotator_id=expert.id,
                                          accuracy=labels[(i + j) % 5])
                    s.add(a)
                    s.add(models.Annotation(generation_id=g.id, annotator_id=novice.id,
                                            accuracy="incorrect"))
                    s.flush()
                    if labels[(i + j) % 5] != "correct":
                        s.add(models.AnnotationCode(annotation_id=a.id, code="SE-MD"))
                    if i == 0 and j == 0:
                        gold = models.GoldLabel(generation_id=g.id, adjudicator_id=lead.id,
                                                accuracy="partial")
                        s.add(gold)
                        s.flush()
                        s.add(models.GoldLabelCode(gold_label_id=gold.id, code="LG-GR1"))


@pytest.fixture(scope="session")
def judged_file(tmp_path_factory):
    """`judged`'s runs made once per session (per xdist worker) into a SQLite file, with the
    request bodies the scripted server received: four runs cost a second, and six tests read
    them, each from its own copy (`judged`)."""
    from db.engine import get_engine
    from judges import run

    path = tmp_path_factory.mktemp("judged") / "judged.db"
    url = f"sqlite:///{path}"
    fill_judge_db(url)
    with ChatServer() as server, pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", "test")
        server.responder = labelled_answer
        common = ["--model", "judge-test", "--strategy", "standard", "--lang", "el",
                  "--base-url", server.base_url, "--db", url, "--no-cache", "--quiet"]
        assert run.main(common + ["--repeats", "3"]) == 0  # seeds 42, 43, 44
        assert run.main(common + ["--seed", "7"]) == 0  # native (Greek) prompt
        assert run.main(common + ["--seed", "7", "--prompt-lang", "en"]) == 0
        assert run.main(common + ["--code-mix", "0", "1", "--code-mix-seed", "3"]) == 0
    get_engine(url).dispose()
    get_engine.cache_clear()
    return path, SimpleNamespace(requests=list(server.requests))


@pytest.fixture
def judged(judged_file, db_url):
    """The three robustness studies' runs through `judges.run` against the scripted server
    (`labelled_answer`) on a fresh copy of `judge_db`'s corpus: runs 1-3 one repeat group
    (seeds 42-44), run 4 the Greek prompt and run 5 its English twin (seed 7), runs 6-7
    code-mixed at CMD 0 and 1 (seed 3). Returns the URL and the server's record (`.requests`,
    the request bodies it received); the runs are made once per session (`judged_file`)."""
    from sqlalchemy.engine import make_url

    from db.engine import get_engine

    template, server = judged_file
    with closing(sqlite3.connect(template)) as source, \
            closing(sqlite3.connect(make_url(db_url).database)) as copy:
        source.backup(copy)  # whole, whatever is still in the WAL
    yield db_url, server
    get_engine.cache_clear()
