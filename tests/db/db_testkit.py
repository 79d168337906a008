"""Test data of the db tests: a small corpus in the project format, and tables in the study's
public-release layout (written here for the tests)."""
from __future__ import annotations

import json
from pathlib import Path

NL_FILE = ("# Bereken de som van twee getallen en geef het resultaat terug\n"
           "def optellen(a, b):\n    return a + b\n")
NL_COMMENT = "# Bereken de som van twee getallen en geef het resultaat terug"
ZH_FILE = ("// 返回列表中最大的元素，如果列表为空就返回 null\n"
           "static Integer max(List<Integer> xs) {\n    return xs.isEmpty() ? null : "
           "Collections.max(xs);\n}\n")
ZH_COMMENT = "// 返回列表中最大的元素，如果列表为空就返回 null"


def _ref(path, content, comment, **extra):
    start = content.index(comment)
    return {"dataset": "mini", "repo": "t/mini", "path": path,
            "span": [start, start + len(comment)], **extra}


def small_records() -> list[dict]:
    """Two files, two targets, four generations, two annotators, labels, a gold label, a metric
    run with a generation score and a noise score, a judge run with a response, a verdict and a
    Batch API submission it waits for, a label plan with a pilot item and a planned one."""
    nl = _ref("calc.py", NL_FILE, NL_COMMENT)
    zh = _ref("Max.java", ZH_FILE, ZH_COMMENT)
    file_fields = {k: nl[k] for k in ("dataset", "repo")}
    return [
        {"type": "dataset", "name": "mini", "description": "test corpus"},
        {"type": "file", **file_fields, "path": "calc.py", "natural_language": "nl",
         "programming_language": "python", "content": NL_FILE},
        {"type": "file", **file_fields, "path": "Max.java", "natural_language": "zh",
         "programming_language": "java", "content": ZH_FILE, "external_id": "zh-1"},
        {"type": "target", **nl, "original_comment": NL_COMMENT, "comment_kind": "line"},
        {"type": "target", **{k: v for k, v in zh.items() if k != "span"},
         "original_comment": ZH_COMMENT},  # located by its text
        {"type": "generation", **nl, "model": "m/a", "fim_input": "<fim_prefix># Bereken de",
         "raw_output": " som\n", "predicted_comment": "# Bereken de som",
         "params": {"temperature": 0}},
        {"type": "generation", **nl, "model": "m/b", "predicted_comment": NL_COMMENT},
        {"type": "generation", **zh, "model": "m/a", "predicted_comment": "// 返回列表"},
        {"type": "generation", **zh, "model": "m/b", "predicted_comment": "// 返回列表中最大值"},
        {"type": "annotator", "username": "anna", "languages": ["nl", "zh"]},
        {"type": "annotator", "username": "lead", "role": "lead"},
        {"type": "assignment", **nl, "model": "m/a", "annotator": "anna", "position": 0},
        {"type": "annotation", **nl, "model": "m/a", "annotator": "anna", "accuracy": "Partial",
         "codes": ["MS-ET", "SE-MD"], "note": "stopt te vroeg", "seconds_spent": 12.5},
        {"type": "annotation", **zh, "model": "m/b", "annotator": "anna", "accuracy": "correct",
         "codes": [], "history": [{"accuracy": "partial", "codes": ["SE-MD"]},
                                  {"accuracy": "correct", "codes": []}]},
        {"type": "gold_label", **nl, "model": "m/a", "adjudicator": "lead",
         "accuracy": "incorrect", "codes": ["MS-ET"], "note": "too short"},
        {"type": "metric_run", "signature": "bleu|tok:13a|v2", "metric": "bleu",
         "params": {"smooth": "exp"}, "library_versions": {"sacrebleu": "2.4"}},
        {"type": "noise_sample", **nl, "kind": "uniform", "tokenizer": "tok", "seed": 1,
         "text": "zz yy"},
        {"type": "metric_score", "run": "bleu|tok:13a|v2", **nl, "model": "m/a", "f": 0.42,
         "details": {"bp": 0.5}},
        {"type": "metric_score", "run": "bleu|tok:13a|v2", **nl,
         "noise": {"kind": "uniform", "tokenizer": "tok", "seed": 1}, "f": 0.01},
        {"type": "judge_run", "signature": "judge|gpt|cot|nl|v1", "model": "gpt-x",
         "strategy": "cot", "prompt_language": "nl", "prompt_version": "v1", "cost_usd": None},
        {"type": "judge_response", "run": "judge|gpt|cot|nl|v1", **nl, "status": "ok",
         "raw_response": "{\"ok\": true}", "order": [2, 1], "latency_s": 0.3},
        {"type": "judge_verdict", "run": "judge|gpt|cot|nl|v1", **nl, "model": "m/a",
         "status": "ok", "accuracy": "partial",
         "codes": [{"code": "MS-ET", "confidence": 0.8, "justification": "kort"}],
         "position": 1},
        {"type": "judge_batch", "run": "judge|gpt|cot|nl|v1", "submission": "5f1e0c",
         "batch_id": "batch_abc", "input_file_id": "file-in", "status": "in_progress",
         "requests": {"r1": {"target": {k: nl[k] for k in ("dataset", "repo", "path", "span")},
                             "key": "k1", "format": None}},
         "counts": {"total": 1, "completed": 0, "failed": 0}},
        {"type": "label_plan", "name": "mini-nl-1", "dataset": "mini",
         "run": "judge|gpt|cot|nl|v1", "predictor": "gpt-x[cot,nl,v1]", "estimand": "mean_score",
         "language": "nl", "budget": 1.0, "min_probability": 0.05, "seed": 3,
         "method": "uniform: no pilot", "label_policy": "gold-else-majority",
         "target_width": 0.2, "compare": {"language": "nl", "a": "m/a", "b": "m/b"}},
        {"type": "label_plan_item", "plan": "mini-nl-1", **nl, "model": "m/a", "pilot": True,
         "predictor_value": 0.5, "probability": 1.0, "drawn": True},
        {"type": "label_plan_item", "plan": "mini-nl-1", **nl, "model": "m/b", "pilot": False,
         "predictor_value": 1.0, "probability": 0.375, "drawn": False},
    ]


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ release layout

RELEASE_MODELS = ("bigcode/starcoder2-7b", "google/codegemma-7b")


def release_rows() -> list[dict]:
    """Three Dutch rows in the public-release layout, error codes in each allowed spelling."""
    content_a = NL_FILE
    content_b = ("# Sorteer de lijst in oplopende volgorde en geef een nieuwe lijst terug\n"
                 "def sorteer(xs):\n    return sorted(xs)\n")
    comment_b = "# Sorteer de lijst in oplopende volgorde en geef een nieuwe lijst terug"
    # the same comment twice in one file: only the FIM input tells which one is the target
    twice = "# Verhoog de teller met een en geef de nieuwe waarde van de teller terug"
    content_c = (f"{twice}\ndef verhoog(t):\n    return t + 1\n\n"
                 f"{twice}\ndef verhoog_twee(t):\n    return t + 2\n")
    second = content_c.index(twice, 1)

    def fim(content, start, end):
        return f"<fim_prefix>{content[:start]}# Verhoog de<fim_suffix>{content[end:]}<fim_middle>"

    rows = [
        {"file_id": "nl-001", "content": content_a, "repo": "r/a", "path": "calc.py",
         "original_comment": NL_COMMENT,
         "masked_data_bigcode/starcoder2-7b": "<fim_prefix># Bereken de<fim_suffix>...",
         "predict_bigcode/starcoder2-7b": " som van twee getallen\ndef optellen(a, b):",
         "predicted_comment_bigcode/starcoder2-7b": "# Bereken de som van twee getallen",
         "expert_accuracy_bigcode/starcoder2-7b": "Partial",
         "error_codes_bigcode/starcoder2-7b": "SE-MD, MS-LT",
         "masked_data_google/codegemma-7b": "<|fim_prefix|># Bereken de<|fim_suffix|>...",
         "predict_google/codegemma-7b": " som en geef die terug\n",
         "predicted_comment_google/codegemma-7b": "# Bereken de som en geef die terug",
         "expert_accuracy_google/codegemma-7b": "Correct",
         "error_codes_google/codegemma-7b": "None"},
        {"file_id": "nl-002", "content": content_b, "repo": "r/b", "path": "sort.py",
         "original_comment": comment_b,
         "masked_data_bigcode/starcoder2-7b": "<fim_prefix># Sorteer de lijst<fim_suffix>",
         "predict_bigcode/starcoder2-7b": " aflopend\n",
         "predicted_comment_bigcode/starcoder2-7b": "# Sorteer de lijst aflopend",
         "expert_accuracy_bigcode/starcoder2-7b": "Incorrect",
         "error_codes_bigcode/starcoder2-7b": ["SE-HA3"],
         "masked_data_google/codegemma-7b": None,
         "predict_google/codegemma-7b": None,  # this model has no prediction for the row
         "predicted_comment_google/codegemma-7b": None,
         "expert_accuracy_google/codegemma-7b": None,
         "error_codes_google/codegemma-7b": None},
        {"file_id": "nl-003", "content": content_c, "repo": "r/c", "path": "teller.py",
         "original_comment": twice,
         "masked_data_bigcode/starcoder2-7b": fim(content_c, second, second + len(twice)),
         "predict_bigcode/starcoder2-7b": " teller met twee\n",
         "predicted_comment_bigcode/starcoder2-7b": "# Verhoog de teller met twee",
         "expert_accuracy_bigcode/starcoder2-7b": "Correct",
         "error_codes_bigcode/starcoder2-7b": [],
         "masked_data_google/codegemma-7b": fim(content_c, second, second + len(twice)),
         "predict_google/codegemma-7b": " teller\n",
         "predicted_comment_google/codegemma-7b": "# Verhoog de teller",
         "expert_accuracy_google/codegemma-7b": "Partial",
         "error_codes_google/codegemma-7b": "MS-ET; SE-MD"},
    ]
    return rows


def write_release(path: Path, rows: list[dict]) -> Path:
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([{k: (v if not isinstance(v, list) else ",".join(v))
                                       for k, v in row.items()} for row in rows])
        pq.write_table(table, path)
    else:
        write_jsonl(path, rows)
    return path


# ------------------------------------------------------------------------------ repeated comments

REPEATED_COMMENT = "# Lees de waarde uit de cache en geef None terug als die ontbreekt"


def repeated_comment_file() -> tuple[str, list[int]]:
    """A file where one comment occurs twice with the same 200+ characters around both
    occurrences (repeated code), and the two starts."""
    before = "".join(f"import module_{i}\n" for i in range(20))  # > 200 characters
    after = "\ndef lees(cache, sleutel):\n" + "".join(
        f"    stap_{i} = cache.get(sleutel)\n" for i in range(10))  # > 200 characters
    block = before + REPEATED_COMMENT + after
    content = block + block
    first = content.index(REPEATED_COMMENT)
    return content, [first, content.index(REPEATED_COMMENT, first + 1)]


# what a move does not carry: sign-in sessions and lockout counters (everyone signs in again),
# and scorers' claims on shards (a running scorer's, meaningless elsewhere)
NOT_MOVED = {"annotator_session", "sign_in_throttle", "metric_claim"}


def database_fingerprint(url: str) -> dict[str, list[tuple]]:
    """Every row of every table a move carries, ids included, ordered by primary key; times
    as UTC (SQLite gives them without a zone, PostgreSQL with one)."""
    from datetime import datetime, timezone

    from sqlalchemy import select
    from sqlmodel import SQLModel

    from db import session_scope

    def plain(value):
        if isinstance(value, datetime):
            return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)
                    ).astimezone(timezone.utc).isoformat()
        return value

    out = {}
    with session_scope(url) as session:
        for table in SQLModel.metadata.sorted_tables:
            if table.name in NOT_MOVED:
                continue
            rows = session.execute(select(table).order_by(*table.primary_key.columns))
            out[table.name] = [tuple(sorted((k, plain(v)) for k, v in row._mapping.items()))
                               for row in rows]
    return out
