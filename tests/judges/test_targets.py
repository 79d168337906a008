"""Which targets a judge run selects: pairs targets (no source file) are judged like any, and a
selection that matches nothing is an error naming the filter, not a quiet exit 0."""
from __future__ import annotations

import json

from judge_testkit import answer_from_request, reply
from sqlmodel import select

from db import models
from db.engine import session_scope
from db.importer import import_pairs
from judges import run
from testing.cli import as_command

PAIRS = ("item_id\treference\tprediction\tmodel\tlabel\tcontext\n"
         "a1\tGeeft de som van twee getallen\tTelt twee getallen op\tm-one\tcorrect\t"
         "def add(a, b):\\n    return a + b\n"
         "a1\tGeeft de som van twee getallen\tDeelt door nul\tm-two\tincorrect\t"
         "def add(a, b):\\n    return a + b\n"
         "a2\tSluit het bestand\tOpent een bestand\tm-one\tincorrect\t\n")


def import_tsv(db_url, tmp_path, text: str, dataset: str, lang: str) -> None:
    """Pairs data written as a TSV file and imported, as a researcher's would be."""
    path = tmp_path / f"{dataset}.tsv"
    path.write_text(text, encoding="utf-8")
    with session_scope(db_url) as session:
        import_pairs(session, [path], dataset=dataset, lang=lang)


def argv(server, db_url, tmp_path, *extra):
    return ["--model", "judge-test", "--strategy", "standard", "--base-url", server.base_url,
            "--db", db_url, "--cache", str(tmp_path / "c.sqlite3"), "--quiet", *extra]


def test_pairs_targets_are_judged_with_their_context(db_url, chat_server, tmp_path, monkeypatch,
                                                      capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    import_tsv(db_url, tmp_path, PAIRS, "mine", "nl")
    chat_server.responder = lambda request: reply(answer_from_request(request, "nl", code="SE-MD"))
    assert run.main(argv(chat_server, db_url, tmp_path, "--lang", "nl", "--dataset", "mine")) == 0
    assert "targets: 2 selected, 0 already done, 2 judged now" in capsys.readouterr().out
    prompts = [r["messages"][-1]["content"] for r in chat_server.requests]
    assert any("def add(a, b):" in p and "Telt twee getallen op" in p for p in prompts)
    assert any("Sluit het bestand" in p and "Opent een bestand" in p for p in prompts)
    with session_scope(db_url) as s:
        verdicts = s.exec(select(models.JudgeVerdict)).all()
        assert len(verdicts) == 3 and {v.status for v in verdicts} == {"ok"}
        assert all(v.codes and v.codes[0]["code"] == "SE-MD" for v in verdicts)
    assert run.main(argv(chat_server, db_url, tmp_path, "--lang", "nl", "--dataset", "mine")) == 0
    assert "targets: 2 selected, 2 already done, 0 judged now" in capsys.readouterr().out


def test_a_selection_that_matches_nothing_names_the_filter(judge_db, chat_server, tmp_path,
                                                           monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    chat_server.responder = lambda request: reply(answer_from_request(request, "el"))
    judge = as_command(run.main, "python -m judges.run")
    assert judge(argv(chat_server, judge_db, tmp_path, "--lang", "el", "--dataset",
                      "nosuchdataset")) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m judges.run: error: nothing to judge: no dataset "
                          "'nosuchdataset' (datasets: judge-test)") and err.count("\n") == 1
    assert judge(argv(chat_server, judge_db, tmp_path, "--lang", "pl")) == 1
    err = capsys.readouterr().err
    assert "no target in language 'pl' has a generation to judge" in err
    assert "languages with generations: el, en" in err
    assert chat_server.calls == 0
    with session_scope(judge_db) as s:  # nothing was done: not even an empty run
        assert s.exec(select(models.JudgeRun)).all() == []


def test_a_judge_that_names_the_models_is_read(judge_db, chat_server, tmp_path, monkeypatch):
    """The runner tells the parser each prediction's model, so an answer keyed by model names
    (as the study's judges write) gives verdicts to the right generations."""
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    names = ("codegemma", "codellama", "codeqwen", "granite", "starcoder2")  # judge_db's models
    chat_server.responder = lambda request: reply(json.dumps({"results": [
        {"model_name": name.upper(), "errors": {"SE-MD": "PRESENT"} if name == "granite" else [],
         "overall_quality": "partially_correct" if name == "granite" else "correct"}
        for name in names]}))
    assert run.main(argv(chat_server, judge_db, tmp_path, "--lang", "el", "--order",
                         "shuffle")) == 0
    with session_scope(judge_db) as s:
        rows = s.exec(select(models.Generation.model, models.JudgeVerdict.accuracy,
                             models.JudgeVerdict.codes)
                      .join(models.JudgeVerdict,
                            models.JudgeVerdict.generation_id == models.Generation.id)).all()
    assert len(rows) == 10
    for model, accuracy, codes in rows:
        assert (accuracy, [c["code"] for c in codes]) == (
            ("partial", ["SE-MD"]) if model == "granite" else ("correct", []))


GERMAN = ("item_id\treference\tprediction\tmodel\tlabel\n"
          "s1\tDer Hund schläft im Garten.\tDer Hund schläft im Garten.\tsys-a\tcorrect\n"
          "s1\tDer Hund schläft im Garten.\tDie Katze isst im Haus.\tsys-b\tincorrect\n"
          "s2\tDas Treffen beginnt um neun Uhr.\tDas Treffen beginnt um neun.\tsys-a\tpartial\n")


def test_german_pairs_are_judged_with_the_pairs_prompt_in_english(db_url, chat_server, tmp_path,
                                                                  monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    import_tsv(db_url, tmp_path, GERMAN, "mqm-de", "de")
    chat_server.responder = lambda request: reply(answer_from_request(request, "en"))
    assert run.main(argv(chat_server, db_url, tmp_path, "--lang", "de")) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("prompt language: en (there is no prompt in de, German")
    assert "targets: 2 selected, 0 already done, 2 judged now" in out
    assert "prompt version standard-pairs-en-" in out
    system, user = (m["content"] for m in chat_server.requests[0]["messages"])
    assert "texts written in German" in system and "source-code comments written" not in system
    assert "<FIM_MASK>" not in system + user and "## Reference text" in user
    assert '"text": "Der Hund schläft im Garten."' in user and "## Context" not in user
    with session_scope(db_url) as s:
        (stored,) = s.exec(select(models.JudgeRun)).all()
        assert (stored.prompt_language, stored.params["target_language"]) == ("en", "de")
        verdicts = s.exec(select(models.JudgeVerdict)).all()
        assert len(verdicts) == 3 and {v.status for v in verdicts} == {"ok"}


def test_a_prompt_language_names_the_targets_language_in_its_own_words(db_url, chat_server,
                                                                       tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    import_tsv(db_url, tmp_path, GERMAN, "mqm-de", "de")
    chat_server.responder = lambda request: reply(answer_from_request(request, "pl"))
    assert run.main(argv(chat_server, db_url, tmp_path, "--lang", "deu", "--prompt-lang", "pl",
                         "--limit", "1")) == 0
    system = chat_server.requests[0]["messages"][0]["content"]
    assert "teksty napisane po niemiecku" in system


def test_the_code_prompt_can_be_forced_on_pairs_and_a_bad_language_is_one_line(
        db_url, chat_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    import_tsv(db_url, tmp_path, GERMAN, "mqm-de", "de")
    chat_server.responder = lambda request: reply(answer_from_request(request, "en"))
    assert run.main(argv(chat_server, db_url, tmp_path, "--lang", "de", "--layout", "code",
                         "--limit", "1")) == 0
    assert "prompt version standard-en-" in capsys.readouterr().out
    assert "<FIM_MASK>" in chat_server.requests[0]["messages"][-1]["content"]
    judge = as_command(run.main, "python -m judges.run")
    assert judge(argv(chat_server, db_url, tmp_path, "--lang", "german")) == 2
    err = capsys.readouterr().err
    assert err == ("python -m judges.run: error: 'german' is not a language code; did you mean "
                   "'de'?\n")
