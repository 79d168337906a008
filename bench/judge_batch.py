"""The Batch API path against the live path, on the same items, with a real judge behind both.

Two stand-ins of `testing/batch_server.py` forward every chat request (live, or a line of a
batch) to an OpenAI-compatible server, e.g. SmolLM2 served by `python -m judges.serve`; one takes
`judges.run` live, the other `judges.run --batch` (two endpoints, so two runs; each path with a
cache of its own, so nothing is answered from a cache; both take OpenAI's json_schema form and
hand it to llama-cpp-python as its grammar). On a copy of `--db` (nothing is written
to it), it prints per path: chat requests the model answered, HTTP requests the run made,
tokens, the cost at `--price-in`/`--price-out` US dollars per million tokens (the batch at half,
as judges.pricing bills it), and whether the two paths gave the same verdicts.

    python -m judges.serve --n-ctx 8192 --threads 2 &          # http://127.0.0.1:8765/v1
    python bench/judge_batch.py --upstream http://127.0.0.1:8765/v1 --db sqlite:///demo.db \\
        --model smollm2 --strategy standard --lang en --limit 5 --max-tokens 600
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sqlite3
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def forward(upstream: str):
    """An answer function for BatchServer: the body POSTed to the upstream server, an OpenAI
    json_schema response format handed on in llama-cpp-python's form (json_object + schema), so
    the stand-ins take the schema as OpenAI does and both paths get the grammar."""
    from judges.client import response_format_for

    def answer(body: dict) -> tuple[int, dict]:
        form = body.get("response_format") or {}
        if form.get("type") == "json_schema":
            body = {**body, "response_format": response_format_for(
                form["json_schema"]["schema"], "json_object")}
        request = urllib.request.Request(f"{upstream}/chat/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=1800) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")
    return answer


def main(argv=None) -> int:
    from sqlalchemy.engine import make_url

    from judges import run
    from testing.batch_server import BatchServer

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--upstream", required=True, help="the real server's base URL")
    p.add_argument("--db", required=True, help="a SQLite database with the targets (copied)")
    p.add_argument("--model", default="smollm2")
    p.add_argument("--strategy", default="standard")
    p.add_argument("--lang", required=True)
    p.add_argument("--prompt-lang")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--max-tokens", type=int, default=600)
    p.add_argument("--price-in", type=float, default=0.15, help="$ per million prompt tokens")
    p.add_argument("--price-out", type=float, default=0.60, help="$ per million completion tokens")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="judge-batch-"))
    db = work / "bench.db"
    with contextlib.closing(sqlite3.connect(make_url(args.db).database)) as source, \
            contextlib.closing(sqlite3.connect(db)) as copy:
        source.backup(copy)
    prices = work / "prices.yaml"
    prices.write_text(f"models:\n  {json.dumps(args.model)}: {{input_per_mtok: {args.price_in}, "
                      f"output_per_mtok: {args.price_out}}}\n", encoding="utf-8")
    os.environ.setdefault("OPENAI_API_KEY", "not-needed")
    common = ["--model", args.model, "--strategy", args.strategy, "--lang", args.lang,
              "--limit", str(args.limit), "--max-tokens", str(args.max_tokens), "--db",
              f"sqlite:///{db}", "--prices", str(prices), "--quiet"]
    if args.prompt_lang:
        common += ["--prompt-lang", args.prompt_lang]
    rows = {}
    for path, extra in (("live", []), ("batch", ["--batch", "--poll-interval", "1"])):
        with BatchServer(forward(args.upstream), per_poll=1) as server:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                code = run.main(common + ["--base-url", server.base_url, "--cache",
                                          str(work / f"{path}.sqlite3")] + extra)
            rows[path] = {"exit": code, "chat": server.chat_requests,
                          "http": sum(server.hits.values()), "hits": dict(server.hits),
                          "printed": printed.getvalue()}
    with contextlib.closing(sqlite3.connect(db)) as con:
        runs = con.execute("SELECT id, prompt_tokens, completion_tokens, cost_usd FROM judge_run "
                           "ORDER BY id").fetchall()
        verdicts = [con.execute("SELECT generation_id, status, accuracy, codes FROM judge_verdict "
                                "WHERE run_id = ? ORDER BY generation_id", (run_id,)).fetchall()
                    for run_id, *_ in runs[-2:]]
    print(f"{'path':<6} {'exit':>4} {'chat requests':>13} {'HTTP requests':>13} "
          f"{'prompt tok':>10} {'compl tok':>9} {'cost':>10}")
    for (path, row), (_, prompt, completion, cost) in zip(rows.items(), runs[-2:]):
        print(f"{path:<6} {row['exit']:>4} {row['chat']:>13} {row['http']:>13} {prompt:>10} "
              f"{completion:>9} {'$%.6f' % cost if cost is not None else 'unknown':>10}")
    print("batch HTTP requests:", ", ".join(f"{k} {v}" for k, v in rows["batch"]["hits"].items()))
    same = verdicts[0] == verdicts[1]
    print(f"verdicts: {len(verdicts[0])} live, {len(verdicts[1])} batch; the same: {same}")
    for path, row in rows.items():
        print(f"--- {path}\n{row['printed'].rstrip()}")
    return 0 if all(r["exit"] == 0 for r in rows.values()) else 1


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/judge_batch.py"))
