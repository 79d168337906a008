"""Generation end to end: an OpenAI-compatible server on loopback, an unreachable endpoint, and
a real small causal LM (SmolLM2-135M, offline) through transformers."""
from __future__ import annotations

import json
import socket
from http.server import BaseHTTPRequestHandler

import pytest
from sqlmodel import Session, select

from corpus.backends import HFBackend, ItemError, OpenAIBackend
from corpus.cutting import cut_comment
from corpus.fim import get_family
from corpus.generate import main as generate_main
from corpus.generate import run_generation
from testing.cli import as_command
from testing.local_server import LocalServer

JAVA = ("public class Som {\n"
        "    /**\n     * Berekent de som van twee gehele getallen.\n     */\n"
        "    int som(int a, int b) { return a + b; }\n}\n")
PY = ('def lees(pad):\n    """Leest het bestand in en geeft de regels terug."""\n'
      "    return open(pad).read()\n")
GO = ("package main\n\n// Geeft de naam van de gebruiker terug\n// zonder spaties.\n"
      "func Naam() string { return \"\" }\n")


def add_targets(db_url: str) -> list[int]:
    from db import get_engine
    from db.models import Dataset, SourceFile, Target

    ids = []
    with Session(get_engine(db_url)) as session:
        dataset = Dataset(name="gen-test")
        session.add(dataset)
        session.flush()
        for path, language, content, comment, kind in [
                ("Som.java", "java", JAVA, JAVA[JAVA.index("/**"):JAVA.index("*/") + 2],
                 "docblock"),
                ("lees.py", "python", PY, '"""Leest het bestand in en geeft de regels terug."""',
                 "docstring"),
                ("naam.go", "go", GO, "// Geeft de naam van de gebruiker terug\n// zonder spaties.",
                 "line")]:
            source = SourceFile(dataset_id=dataset.id, natural_language="nl",
                                programming_language=language, path=path, content=content,
                                content_sha256=path)
            session.add(source)
            session.flush()
            start = content.index(comment)
            target = Target(source_file_id=source.id, span_start=start,
                            span_end=start + len(comment), original_comment=comment,
                            comment_kind=kind)
            session.add(target)
            session.flush()
            ids.append(target.id)
        session.commit()
    return ids


def generations(db_url: str, model: str):
    from db import get_engine
    from db.models import Generation

    with Session(get_engine(db_url)) as session:
        return {g.target_id: g for g in session.exec(
            select(Generation).where(Generation.model == model))}


# what the fake server answers, chosen by a word of the comment's prime
SCRIPTED = {
    "Berekent": " van a en b.\n     */\n    int som(int a, int b) {",
    "Leest": ' in."""\n    return 1\n',
    "Geeft": " van de gebruiker<EOT> en nog meer",
}


class CompletionsHandler(BaseHTTPRequestHandler):
    requests: list = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("Authorization")})
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        if self.path != "/v1/completions":
            return self._send(404, {"error": {"message": "not found"}})
        if any("WEIGER" in p for p in prompts):
            return self._send(400, {"error": {"message": "prompt rejected", "type": "invalid"}})
        choices = []
        for i, prompt in enumerate(prompts):
            text = next((t for k, t in SCRIPTED.items() if k in prompt[-200:]), " ???")
            choices.append({"index": i, "text": text, "finish_reason": "stop", "logprobs": None})
        if body.get("stream"):
            return self._stream(body["model"], choices)
        self._send(200, {"id": "cmpl-test", "object": "text_completion", "created": 0,
                         "model": body["model"], "choices": choices,
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                   "total_tokens": 2}})

    def _send(self, status, payload):
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, model, choices, size=4):
        """Server-sent events as vLLM sends them: the choices' texts in pieces of `size`
        characters, interleaved, then a finish_reason per choice and [DONE]."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        events = []
        longest = max(len(c["text"]) for c in choices)
        for at in range(0, longest, size):
            for c in choices:
                if c["text"][at:at + size]:
                    events.append({"index": c["index"], "text": c["text"][at:at + size],
                                   "finish_reason": None, "logprobs": None})
        events += [dict(c, text="") for c in choices]
        type(self).streamed = 0
        try:
            for choice in events:
                chunk = {"id": "cmpl-test", "object": "text_completion", "created": 0,
                         "model": model, "choices": [choice]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode("utf-8"))
                self.wfile.flush()
                type(self).streamed += 1
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: fine
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def completions_server():
    CompletionsHandler.requests = []
    with LocalServer(CompletionsHandler) as server:
        yield server.base_url


def test_openai_backend_stores_exact_input_raw_output_and_cut(any_db_url, completions_server,
                                                              monkeypatch):
    """On SQLite and on PostgreSQL."""
    db_url = any_db_url
    ids = add_targets(db_url)
    monkeypatch.setenv("TEST_ENDPOINT_KEY", "sekret-key")
    code = generate_main(["--model", "codellama/CodeLlama-7b-hf", "--backend", "openai",
                          "--base-url", completions_server, "--api-key-env", "TEST_ENDPOINT_KEY",
                          "--db", db_url, "--batch-size", "2", "--max-new-tokens", "40",
                          "--prime-unit", "words", "--no-progress"])
    assert code == 0
    rows = generations(db_url, "codellama/CodeLlama-7b-hf")
    assert sorted(rows) == ids
    java, py, go = (rows[i] for i in ids)
    prefix = JAVA[:JAVA.index("/**")] + "/**\n     * Berekent de som"
    suffix = JAVA[JAVA.index("*/") + 2:]
    assert java.fim_input == f"<PRE> {prefix} <SUF>{suffix} <MID>"
    # streamed, and stopped at the chunk that closed the comment: the code after it never came
    assert java.raw_output == " van a en b.\n     */"
    assert java.params["finish_reason"] == "cut" and java.params["tokens_generated"] == 5
    assert java.predicted_comment == "/**\n     * Berekent de som van a en b.\n     */"
    assert py.raw_output == ' in."""\n' and go.raw_output == " van de gebruiker<EOT> e"
    assert py.predicted_comment == '"""Leest het bestand in."""'
    assert go.predicted_comment == "// Geeft de naam van de gebruiker"
    assert go.params["cut_reason"] == "sentinel" and java.params["cut_reason"] == "closed"
    assert java.backend == "openai" and java.params["family"] == "codellama"
    assert "sekret-key" not in json.dumps(java.params)
    first = CompletionsHandler.requests[0]
    assert first["auth"] == "Bearer sekret-key"
    assert first["body"]["max_tokens"] == 40 and first["body"]["temperature"] == 0
    assert first["body"]["stop"] == ["<EOT>", "</s>"]
    assert len(first["body"]["prompt"]) == 2 and first["body"]["stream"] is True  # batched

    # resumable: nothing left to do
    backend = OpenAIBackend("codellama/CodeLlama-7b-hf", base_url=completions_server)
    summary = run_generation(backend, model="codellama/CodeLlama-7b-hf",
                             family=get_family("codellama"), db_url=db_url, progress=False)
    assert summary.already_done == 3 and summary.generated == 0


def test_a_rejected_item_is_reported_and_the_rest_stored(db_url, completions_server):
    ids = add_targets(db_url)
    from db import get_engine
    from db.models import SourceFile, Target

    with Session(get_engine(db_url)) as session:  # poison the python file's prompt
        target = session.get(Target, ids[1])
        source = session.get(SourceFile, target.source_file_id)
        source.content = "# WEIGER\n" + source.content
        target.span_start += 9
        target.span_end += 9
        session.add_all([source, target])
        session.commit()
    backend = OpenAIBackend("bigcode/starcoder2-7b", base_url=completions_server, max_retries=0)
    summary = run_generation(backend, model="bigcode/starcoder2-7b",
                             family=get_family("starcoder2"), db_url=db_url, batch_size=3,
                             max_new_tokens=16, progress=False)
    assert [t for t, _ in summary.failed] == [ids[1]]
    assert "400" in summary.failed[0][1]
    assert sorted(generations(db_url, "bigcode/starcoder2-7b")) == [ids[0], ids[2]]


def test_unreachable_endpoint_stops_cleanly(db_url, capsys):
    add_targets(db_url)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = generate_main(["--model", "bigcode/starcoder2-7b", "--backend", "openai",
                          "--base-url", f"http://127.0.0.1:{port}/v1", "--max-retries", "0",
                          "--timeout", "5", "--db", db_url, "--max-new-tokens", "8",
                          "--no-progress"])
    assert code == 2
    out = capsys.readouterr().out
    assert "stopped early" in out and f"127.0.0.1:{port}" in out
    assert generations(db_url, "bigcode/starcoder2-7b") == {}


def test_cli_errors_are_clear(db_url, capsys):
    generate = as_command(generate_main, "python -m corpus.generate")
    assert generate(["--model", "acme/mystery-7b", "--backend", "openai", "--base-url",
                     "http://127.0.0.1:9/v1", "--db", db_url]) == 2
    assert "no FIM family known" in capsys.readouterr().err
    assert generate(["--model", "bigcode/starcoder2-7b", "--backend", "openai",
                     "--db", db_url, "--base-url", ""]) == 2
    assert "--base-url" in capsys.readouterr().err




@pytest.mark.parametrize("content, message", [
    ('[{"name": "mine", "template": "{prefix}{suffix}", "source": "caf\xe9"}]'.encode("latin-1"),
     "the FIM families file is not UTF-8 text (byte 0xe9 on line 1): save it as UTF-8"),
    (b'[{"name": "mine", "template": "{prefix}{suffix}",', "the FIM families file is not JSON"),
    (b"[1]", "family #0: expected an object with 'name' and 'template', not int"),
    (b'[{"name": "mine", "template": "{prefix}{suffix}", "patterns": [3]}]',
     "family #0: 'patterns' must be a list of strings"),
    (b'[{"name": "mine", "template": "{prefix}{suffix}", "patterns": ["(["]}]',
     "family #0: pattern '([' is not a regular expression"),
])
def test_a_bad_families_file_is_one_line_naming_it(tmp_path, capsys, content, message):
    path = tmp_path / "families.json"
    path.write_bytes(content)
    generate = as_command(generate_main, "python -m corpus.generate")
    code = generate(["--model", "acme/mystery-7b", "--backend", "openai", "--base-url",
                     "http://127.0.0.1:9/v1", "--families-file", str(path),
                     "--db", f"sqlite:///{tmp_path / 'never.db'}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "internal error" not in err
    assert f"error: {path}: " in err and message in err
    assert not (tmp_path / "never.db").exists()  # refused before the database was opened
def test_a_dataset_with_nothing_to_generate_says_so(db_url, capsys):
    add_targets(db_url)
    generate = as_command(generate_main, "python -m corpus.generate")
    assert generate(["--model", "bigcode/starcoder2-7b", "--backend", "openai", "--base-url",
                     "http://127.0.0.1:9/v1", "--dataset", "study-nl", "--db", db_url,
                     "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing to generate: no target with a source file matches " \
        "--dataset/--lang/--programming-language (datasets here: " in err


GREEK_C = "int main() {\n    // πλήθος αλόγων\n    int n = 5;\n    return n;\n}\n"


def add_greek_target(db_url: str) -> int:
    """A target of two words (chgogos/oop's `// πλήθος αλόγων`) in the dataset of `add_targets`."""
    from db import get_engine
    from db.models import Dataset, SourceFile, Target

    comment = "// πλήθος αλόγων"
    with Session(get_engine(db_url)) as session:
        dataset = session.exec(select(Dataset).where(Dataset.name == "gen-test")).one()
        source = SourceFile(dataset_id=dataset.id, natural_language="el",
                            programming_language="cpp", path="horses.cpp", content=GREEK_C,
                            content_sha256="horses.cpp")
        session.add(source)
        session.flush()
        start = GREEK_C.index(comment)
        target = Target(source_file_id=source.id, span_start=start, span_end=start + len(comment),
                        original_comment=comment, comment_kind="line")
        session.add(target)
        session.commit()
        return target.id


def test_the_prime_is_the_models_tokens_and_a_covered_target_is_refused(
        db_url, completions_server, vocabs, capsys):
    """Issue 41: the study primed with the model's first 3 tokens; a target whose prime leaves
    no word to write is not sent (Gemma's 3rd token ends inside `αλόγων`)."""
    ids = add_targets(db_url)
    greek = add_greek_target(db_url)
    gemma = next(p for p in vocabs if p.name == "ggml-vocab-gemma-4.gguf")
    generate = as_command(generate_main, "python -m corpus.generate")
    argv = ["--model", "google/codegemma-7b", "--backend", "openai", "--base-url",
            completions_server, "--tokenizer", str(gemma), "--db", db_url,
            "--max-new-tokens", "40", "--no-progress"]
    assert generate(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    rows = generations(db_url, "google/codegemma-7b")
    assert sorted(rows) == ids  # the Greek target was not sent
    java = rows[ids[0]]
    assert java.params["prime"] == "/**\n     * Berekent"
    assert (java.params["prime_unit"], java.params["prime_tokenizer"],
            java.params["prime_length"]) == ("tokens", "gguf:ggml-vocab-gemma-4.gguf", 3)
    assert f"refused target {greek}: the prime '// πλήθος α' leaves no word of the comment " \
           "to generate" in out
    assert "prime: first 3 tokens of gguf:ggml-vocab-gemma-4.gguf of the reference comment" in out
    assert generate(argv) == 1  # only the refused target left: nothing useful done
    assert sorted(generations(db_url, "google/codegemma-7b")) == ids


def test_without_a_known_tokenizer_the_prime_counts_words_and_says_so(db_url, completions_server,
                                                                       capsys):
    ids = add_targets(db_url)
    generate = as_command(generate_main, "python -m corpus.generate")
    argv = ["--model", "acme/mystery-7b", "--family", "starcoder2", "--backend", "openai",
            "--base-url", completions_server, "--db", db_url, "--max-new-tokens", "40",
            "--no-progress"]
    assert generate(argv + ["--prime-unit", "tokens"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--prime-unit tokens: no tokenizer is known for " \
        "acme/mystery-7b; pass --tokenizer ID_OR_DIR" in err
    assert generate(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "prime: first 3 words (no tokenizer with token offsets known for acme/mystery-7b: " \
           "pass --tokenizer ID_OR_DIR to prime with its tokens, as the study did)" in out
    rows = generations(db_url, "acme/mystery-7b")
    assert sorted(rows) == ids and rows[ids[0]].params["prime_unit"] == "words"
    assert rows[ids[0]].params["prime"] == "/**\n     * Berekent de som"


@pytest.mark.slow
def test_smollm2_end_to_end(db_url, smollm2):
    """A real causal LM, greedy and batched with left padding: storage and cutting are exact."""
    ids = add_targets(db_url)
    model, tokenizer = smollm2
    backend = HFBackend("HuggingFaceTB/SmolLM2-135M-Instruct", model=model, tokenizer=tokenizer)
    family = get_family("plain")
    budget = run_generation(backend, model="HuggingFaceTB/SmolLM2-135M-Instruct", family=family,
                            db_url=db_url, limit=0, progress=False)
    assert budget.max_new_tokens > 10 and budget.budget_tokenizer.startswith("hf:")

    summary = run_generation(backend, model="HuggingFaceTB/SmolLM2-135M-Instruct",
                             family=family, db_url=db_url, batch_size=2, max_new_tokens=6,
                             progress=False)
    assert summary.generated == 3 and not summary.failed
    rows = generations(db_url, "HuggingFaceTB/SmolLM2-135M-Instruct")
    contents = {ids[0]: (JAVA, "/**\n     * Berekent de som"),
                ids[1]: (PY, '"""Leest het bestand'),
                ids[2]: (GO, "// Geeft de naam")}
    for target_id, (content, prime) in contents.items():
        row = rows[target_id]
        start = content.index(prime)
        assert row.fim_input == content[:start] + prime  # plain: the code before + the prime
        assert row.params["prime"] == prime and row.backend == "hf"
        assert len(tokenizer(row.raw_output, add_special_tokens=False)["input_ids"]) <= 7
        kind = {ids[0]: "docblock", ids[1]: "docstring", ids[2]: "line"}[target_id]
        closer = {"docblock": "*/", "docstring": '"""', "line": ""}[kind]
        opener = {"docblock": "/**", "docstring": '"""', "line": "//"}[kind]
        expected = cut_comment(row.raw_output, prime=prime, kind=kind, opener=opener,
                               closer=closer, stops=family.stops)
        assert row.predicted_comment == expected.comment
        assert row.params["cut_reason"] == expected.reason
        assert row.predicted_comment.startswith(prime)

    # the batched, left-padded output equals the model's own greedy output for that prompt
    java = rows[ids[0]]
    single = backend.complete([java.fim_input], 6, family.stops)[0]
    assert single.text == java.raw_output
    again = run_generation(backend, model="HuggingFaceTB/SmolLM2-135M-Instruct", family=family,
                           db_url=db_url, max_new_tokens=6, progress=False)
    assert again.generated == 0 and again.already_done == 3

    # an input longer than the model's positions is one failed item, not a crash
    backend.max_positions = 30
    (too_long,) = backend.complete([JAVA], 6, family.stops)
    assert isinstance(too_long, ItemError) and "exceeds the model's 30 positions" in str(too_long)
