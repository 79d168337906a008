"""The runner over a real SQLite database against the local chat-completions server: statuses
stored, retries, cache hits, resumption, order recording, hierarchical merging, accounting,
and the report reading it all back."""
from __future__ import annotations

import json

import pytest
from judge_testkit import answer_from_request, reply
from sqlmodel import select

from agreement.statistics import weighted_kappa
from db import models
from db.engine import session_scope
from judges.cache import ResponseCache
from judges.client import JudgeClient, OpenAIBackend, SamplingParams
from judges.i18n import texts
from judges.order import presentation_order
from judges.runner import RunConfig, run_judge
from nlce.cli import InputError
from testing.cli import as_command


def client_for(server, cache_path=None, structured="auto", max_retries=2, timeout_s=5.0):
    backend = OpenAIBackend("judge-test", SamplingParams(), base_url=server.base_url,
                            api_key="test", timeout_s=timeout_s, max_retries=max_retries,
                            backoff_base_s=0.01, backoff_cap_s=0.02)
    return JudgeClient(backend, ResponseCache(cache_path) if cache_path else None, structured)


def config(strategy="standard", lang="el", **kw):
    return RunConfig(model="judge-test", strategy=strategy, lang=lang, prompt_lang=lang, **kw)


def stored(db_url):
    with session_scope(db_url) as s:
        responses = s.exec(select(models.JudgeResponse).order_by(models.JudgeResponse.id)).all()
        verdicts = s.exec(select(models.JudgeVerdict).order_by(models.JudgeVerdict.id)).all()
        runs = s.exec(select(models.JudgeRun)).all()
        s.expunge_all()
    return runs, responses, verdicts


def valid(lang="el"):
    return lambda request: reply(answer_from_request(request, lang))


def greek_answer(code="SE-MD"):
    from taxonomy import default_taxonomy
    f = texts("el")["output_fields"]
    label = default_taxonomy().accuracy_text("partial", "el")[0]
    return json.dumps({f["evaluations"]: [
        {f["prediction_id"]: f"P{i}", f["errors"]: [code], f["accuracy"]: label}
        for i in range(1, 6)]}, ensure_ascii=False)


CASES = {
    "valid": ([lambda: reply(greek_answer())], "ok", "ok", []),
    "fenced": ([lambda: reply(f"```json\n{greek_answer()}\n```")], "ok", "ok",
               ["code_fence_removed"]),
    "english_fields": ([lambda: reply(json.dumps({"evaluations": [
        {"prediction_id": f"P{i}", "errors": [], "accuracy": "correct"} for i in range(1, 6)]}))],
        "ok", "ok", ["field_name_from_other_language"]),
    "truncated": ([lambda: reply(greek_answer()[:200] + " P1 P1 P1", finish_reason="length")],
                  "truncated", "truncated", []),
    "empty": ([lambda: reply(json.dumps({texts("el")["output_fields"]["evaluations"]: []}))],
              "empty", "empty", []),
    "refusal": ([lambda: reply(None, refusal="I can't help with that.")], "refused", "refused", []),
    "malformed": ([lambda: reply("{'not': json")], "parse_error", "parse_error", []),
    "429_then_ok": ([lambda: reply(status=429, headers={"Retry-After": "0"}),
                     lambda: reply(greek_answer())], "ok", "ok", ["retry"]),
    "500_always": ([lambda: reply(status=500)] * 3, "api_error", "api_error", ["retry", "retry"]),
    "timeout_then_ok": ([lambda: reply("{}", delay=1.2), lambda: reply(greek_answer())],
                        "ok", "ok", ["retry"]),
    "structured_rejected": ([lambda: reply("Unsupported parameter: response_format", status=400),
                             lambda: reply(greek_answer())], "ok", "ok", ["plain_json_fallback"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_kind_of_answer_is_stored_with_its_status(case, judge_db, chat_server):
    script, response_status, verdict_status, repair_kinds = CASES[case]
    chat_server.script = [make() for make in script]
    summary = run_judge(client_for(chat_server, timeout_s=0.6), config(), _tax(), judge_db,
                        limit=1, concurrency=1, progress=False)
    runs, responses, verdicts = stored(judge_db)
    assert chat_server.calls == len(script) and not chat_server.script
    (response,) = responses
    assert response.status == response_status, response.error
    assert [r["kind"] for r in response.repairs if r["kind"] in
            ("code_fence_removed", "retry", "plain_json_fallback",
             "field_name_from_other_language")][:len(repair_kinds)] == repair_kinds
    assert len(verdicts) == 5 and {v.status for v in verdicts} == {verdict_status}
    assert [v.position for v in verdicts] == [1, 2, 3, 4, 5]
    assert summary.statuses == {response_status: 1}
    if response_status == "ok":
        assert all(v.accuracy is not None for v in verdicts)
    else:
        assert all(v.accuracy is None and v.codes == [] for v in verdicts)
        assert response.error
    if case == "refusal":
        assert response.raw_response == "I can't help with that."
    if case == "structured_rejected":
        assert "structured_fallback" in runs[0].params
    if case == "valid":
        assert [c["code"] for c in verdicts[0].codes] == ["SE-MD"]
        assert response.raw_response == greek_answer()
        assert (response.prompt_tokens, response.completion_tokens) == (100, 20)


def _tax():
    from taxonomy import default_taxonomy
    return default_taxonomy()


def test_rerun_is_free_and_resumes(judge_db_any, chat_server, tmp_path):
    judge_db = judge_db_any  # SQLite and PostgreSQL
    chat_server.responder = valid()
    cache = tmp_path / "cache.sqlite3"
    first = run_judge(client_for(chat_server, cache), config(), _tax(), judge_db,
                      concurrency=2, progress=False)
    assert first.targets_total == 2 and first.targets_judged == 2 and chat_server.calls == 2
    # the same command again: every target is already stored, nothing is asked
    second = run_judge(client_for(chat_server, cache), config(), _tax(), judge_db, progress=False)
    assert second.targets_skipped == 2 and second.targets_judged == 0 and chat_server.calls == 2
    runs, _, _ = stored(judge_db)
    assert runs[0].prompt_tokens == 200 and runs[0].completion_tokens == 40


def test_cache_hits_cost_nothing(db_url, judge_db, chat_server, tmp_path):
    chat_server.responder = valid()
    cache = tmp_path / "cache.sqlite3"
    run_judge(client_for(chat_server, cache), config(), _tax(), judge_db, progress=False)
    calls = chat_server.calls
    # delete the stored run: the targets must be judged again, all from the cache
    with session_scope(judge_db) as s:
        for run in s.exec(select(models.JudgeRun)).all():
            s.delete(run)
    again = run_judge(client_for(chat_server, cache), config(), _tax(), judge_db,
                      prices={"judge-test": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}},
                      progress=False)
    assert chat_server.calls == calls
    assert again.targets_judged == 2 and again.cached == 2
    assert again.prompt_tokens == 0 and again.cost_usd == 0.0
    runs, responses, _ = stored(judge_db)
    assert all(r.cached for r in responses) and runs[0].prompt_tokens == 0


def test_api_errors_are_asked_again_on_resume(judge_db, chat_server, tmp_path):
    chat_server.script = [reply(status=503)]
    chat_server.responder = valid()
    first = run_judge(client_for(chat_server, max_retries=0), config(), _tax(), judge_db,
                      concurrency=1, progress=False)
    assert first.statuses == {"api_error": 1, "ok": 1}
    second = run_judge(client_for(chat_server), config(), _tax(), judge_db, progress=False)
    assert second.targets_judged == 1 and second.statuses == {"ok": 1}
    _, responses, verdicts = stored(judge_db)
    assert [r.status for r in responses] == ["ok", "ok"] and len(verdicts) == 10
    assert {v.status for v in verdicts} == {"ok"}


def test_cost_is_unknown_without_a_price_and_summed_with_one(judge_db, chat_server):
    chat_server.responder = valid()
    unknown = run_judge(client_for(chat_server), config(), _tax(), judge_db, progress=False)
    assert unknown.cost_usd is None and unknown.run_cost_usd is None
    priced = run_judge(client_for(chat_server), config(order="rotate"), _tax(), judge_db,
                       prices={"judge-test": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}},
                       progress=False)
    assert priced.cost_usd == pytest.approx(2 * (100 * 1.0 + 20 * 2.0) / 1e6)
    assert priced.run_cost_usd == pytest.approx(priced.cost_usd)


def test_shuffled_order_is_recorded_and_shown(judge_db, chat_server):
    chat_server.responder = valid()
    run_judge(client_for(chat_server), config(order="shuffle", order_seed=3), _tax(), judge_db,
              progress=False)
    _, responses, verdicts = stored(judge_db)
    with session_scope(judge_db) as s:
        generations = {g.id: g for g in s.exec(select(models.Generation)).all()}
        s.expunge_all()
    prompts = [request["messages"][1]["content"] for request in chat_server.requests]
    for response in responses:
        target_gens = sorted((g for g in generations.values() if g.target_id == response.target_id),
                             key=lambda g: g.model)
        expected = presentation_order([g.id for g in target_gens], "shuffle", 3, response.target_id)
        assert response.order == expected
        comments = [generations[g].predicted_comment for g in response.order]
        # requests run concurrently: find this target's prompt by its content, not by position
        (user,) = [p for p in prompts if all(c in p for c in comments)]
        shown = [user.index(c) for c in comments]
        assert shown == sorted(shown)
    position = {v.generation_id: v.position for v in verdicts}
    for response in responses:
        assert [position[g] for g in response.order] == [1, 2, 3, 4, 5]


def test_hierarchical_asks_each_cluster_and_merges(judge_db, chat_server):
    tax = _tax()
    labels = {"semantic_accuracy": 1, "meta": 0}  # partial, incorrect; others correct

    def responder(request):
        schema = request["response_format"]["json_schema"]["schema"]
        f = texts("el")["output_fields"]
        entry = schema["properties"][f["evaluations"]]["items"]["properties"]
        first_code = entry[f["errors"]]["items"]["enum"][0]
        cluster = tax.cluster_of(first_code)
        return reply(answer_from_request(request, "el", labels.get(cluster, 2), code=first_code))

    chat_server.responder = responder
    summary = run_judge(client_for(chat_server, structured="on"), config("hierarchical"), tax,
                        judge_db, limit=1, progress=False)
    assert chat_server.calls == 7 and summary.statuses == {"ok": 7}
    _, responses, verdicts = stored(judge_db)
    assert sorted(r.cluster for r in responses) == sorted(tax.clusters)
    expected_codes = sorted(tax.clusters[c].codes[0] for c in tax.clusters)
    for v in verdicts:
        assert v.status == "ok" and v.accuracy == "incorrect"  # the worst of the 7 labels
        assert sorted(c["code"] for c in v.codes) == expected_codes


def test_cli_run_then_report(judge_db, chat_server, tmp_path, monkeypatch, capsys):
    from judges import report, run

    chat_server.responder = lambda request: reply(_patterned_answer(request))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    argv = ["--model", "judge-test", "--strategy", "standard", "--lang", "el", "--base-url",
            chat_server.base_url, "--db", judge_db, "--cache", str(tmp_path / "c.sqlite3"),
            "--quiet", "--concurrency", "2"]
    assert run.main(argv) == 0
    out = capsys.readouterr().out
    assert "targets: 2 selected, 0 already done, 2 judged now" in out
    assert "responses: ok 2" in out and "cost now unknown" in out
    assert "test-key" not in out
    assert run.main(argv) == 0
    assert "targets: 2 selected, 2 already done, 0 judged now" in capsys.readouterr().out
    assert chat_server.calls == 2

    built = report.build_report(judge_db, n_resamples=50)
    rates = built["failure_rates"]
    assert rates[["requests", "verdicts", "ok", "parse_failure_rate", "empty_rate"]
                 ].values.tolist() == [[2, 10, 10, 0.0, 0.0]]
    # humans: gold where present, else the expert (never the novice)
    human = {1: "partial", 2: "partial", 3: "incorrect", 4: "correct", 5: "partial",
             6: "partial", 7: "incorrect", 8: "correct", 9: "partial", 10: "correct"}
    judge = ["correct", "partial", "incorrect", "correct", "partial"] * 2
    (kappa_row,) = built["kappa"].to_dict("records")
    assert kappa_row["n"] == 10
    assert kappa_row["kappa"] == pytest.approx(weighted_kappa(list(human.values()), judge))
    codes = built["codes_pooled"].set_index("code")
    assert codes.loc["SE-MD", "precision"] == pytest.approx(0.6)
    assert codes.loc["SE-MD", "recall"] == pytest.approx(1.0)
    assert codes.loc["LG-GR1", "support"] == 1 and codes.loc["LG-GR1", "recall"] == 0.0
    assert bool(codes.loc["SE-MD", "low_count"])  # fewer than 10 labels

    out_dir = tmp_path / "report"
    assert report.main(["--db", judge_db, "--out", str(out_dir), "--bootstrap", "50"]) == 0
    printed = capsys.readouterr().out
    assert "parse_failure_rate" in printed and "kappa" in printed
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "code_precision_recall.png", "codes_per_run.csv", "codes_pooled.csv", "confusion.json",
        "failure_rates.csv", "failure_rates.png", "failure_reasons.csv", "kappa.csv",
        "position.csv", "report.html", "runs.csv"]
    assert (out_dir / "failure_rates.png").read_bytes()[:4] == b"\x89PNG"
    confusion = json.loads((out_dir / "confusion.json").read_text())
    assert confusion["label_policy"] == "auto (gold-else-expert-else-majority)"
    (matrix,) = confusion["runs"].values()
    assert sum(map(sum, matrix["counts"])) == 10


def _patterned_answer(request):
    """P1..P5 judged correct, partial, incorrect, correct, partial, each with SE-MD."""
    from taxonomy import ACCURACY_LABELS, default_taxonomy
    tax = default_taxonomy()
    f = texts("el")["output_fields"]
    pattern = [2, 1, 0, 2, 1]
    return json.dumps({f["evaluations"]: [
        {f["prediction_id"]: f"P{i + 1}", f["errors"]: ["SE-MD"],
         f["accuracy"]: tax.accuracy_text(ACCURACY_LABELS[pattern[i]], "el")[0]}
        for i in range(5)]}, ensure_ascii=False)


def test_report_on_failed_answers_only(judge_db, chat_server):
    from judges import report

    chat_server.responder = lambda request: reply('{"oops": ', finish_reason="length")
    run_judge(client_for(chat_server), config(), _tax(), judge_db, progress=False)
    built = report.build_report(judge_db, n_resamples=20)
    (row,) = built["failure_rates"].to_dict("records")
    assert (row["requests"], row["truncated"], row["parse_failure_rate"], row["empty_rate"]) == (
        2, 10, 1.0, 0.0)  # 2 responses, 10 verdicts (one per generation)
    assert built["kappa"].empty and built["confusion"] == {} and built["codes_pooled"].empty
    assert built["human_labels"] == 10  # gold or expert for every Greek generation


def test_report_counts_the_predictions_a_broken_answer_lost_as_parse_failures(judge_db,
                                                                              chat_server):
    """A comma missing between the first two entries: P1 is read, P2-P5 are parse failures (the
    old parser stored them `empty` and the report said parse failure rate 0.0)."""
    from judges import report

    chat_server.responder = lambda request: reply(answer_from_request(request, "el").replace(
        "}, {", "} {", 1))
    run_judge(client_for(chat_server), config(), _tax(), judge_db, progress=False)
    (row,) = report.build_report(judge_db, n_resamples=0)["failure_rates"].to_dict("records")
    assert (row["ok"], row["parse_error"], row["empty"]) == (2, 8, 0)
    assert row["parse_failure_rate"] == 0.8


def test_cli_local_model_that_is_not_available(judge_db, tmp_path, capsys):
    from judges import run

    code = as_command(run.main, "python -m judges.run")(
        ["--backend", "local", "--model", str(tmp_path / "no-such-model"), "--strategy",
         "standard", "--lang", "el", "--limit", "1", "--db", judge_db, "--no-cache", "--quiet"])
    assert code == 2
    assert "no-such-model" in capsys.readouterr().err
    _, responses, verdicts = stored(judge_db)
    assert responses == [] and verdicts == []  # nothing half-written


def test_an_in_process_local_judge_gets_a_sane_token_limit():
    """An endpoint keeps the study's 10,000 output tokens; `--backend local` generates on this
    machine (minutes per target at 10,000), so it defaults to 1,024; the flag wins either way."""
    from judges import run

    def sampling(*flags):
        args = run.build_parser().parse_args(["--model", "m", "--strategy", "rubric", "--lang",
                                              "en", *flags])
        return run.sampling_params(args).max_tokens

    assert sampling() == 10_000
    assert sampling("--backend", "local") == 1_024
    assert sampling("--backend", "local", "--max-tokens", "300") == 300
    with pytest.raises(InputError, match="--max-tokens must be at least 1"):
        sampling("--max-tokens", "0")
