"""Fixtures for the judges: the taxonomy, a tiny corpus database with human labels, and a
local chat-completions server (see judge_testkit.py)."""
from __future__ import annotations

import pytest
from judge_testkit import ChatServer, labelled_answer


@pytest.fixture(scope="session")
def tax():
    from taxonomy import default_taxonomy

    return default_taxonomy()


@pytest.fixture
def chat_server():
    server = ChatServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        server.thread.join(timeout=5)


# ---------------------------------------------------------------- a tiny corpus


MODELS = ("codegemma", "codellama", "codeqwen", "granite", "starcoder2")


@pytest.fixture
def judge_db(db_url):
    """Two Greek and one English target, five generations each; an expert labels every Greek
    generation, one generation also has a gold label. Returns the URL."""
    from db.engine import get_engine

    get_engine.cache_clear()
    fill_judge_db(db_url)
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


@pytest.fixture
def judged(judge_db, chat_server, monkeypatch):
    """The three robustness studies' runs on `judge_db` through `judges.run` against the scripted
    server (`labelled_answer`): runs 1-3 one repeat group (seeds 42-44), run 4 the Greek prompt
    and run 5 its English twin (seed 7), runs 6-7 code-mixed at CMD 0 and 1 (seed 3)."""
    from judges import run

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    chat_server.responder = labelled_answer
    common = ["--model", "judge-test", "--strategy", "standard", "--lang", "el", "--base-url",
              chat_server.base_url, "--db", judge_db, "--no-cache", "--quiet"]
    assert run.main(common + ["--repeats", "3"]) == 0  # seeds 42, 43, 44
    assert run.main(common + ["--seed", "7"]) == 0  # native (Greek) prompt
    assert run.main(common + ["--seed", "7", "--prompt-lang", "en"]) == 0
    assert run.main(common + ["--code-mix", "0", "1", "--code-mix-seed", "3"]) == 0
    return judge_db, chat_server
