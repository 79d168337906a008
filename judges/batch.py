"""A judge run through an OpenAI-style Batch API (`python -m judges.run --batch`): the same
requests as the live path, at the batch price, without its rate limits.

1. The targets not yet done are put through `judge_target` with a collecting client: a request
   the cache knows is answered from it (a target answered wholly from the cache is stored at
   once); the others are written as JSONL, one line per request (`custom_id`, POST
   /v1/chat/completions, the body the live path would send).
2. The file is uploaded (/v1/files, purpose batch); then a `judge_batch` row is stored (with the
   run's row, if this is its first) and the batch created (/v1/batches, 24h window, our
   submission id in its metadata), its id stored as it comes. The bodies are the live path's
   (`OpenAIBackend.request_body`: max_completion_tokens for a reasoning model, and whatever the
   endpoint taught the client, live or through an earlier batch's error lines).
3. The batch is polled (`--poll-interval`, a progress bar of its request counts) until it is
   completed, failed, expired or cancelled; its status, counts, output and error file ids and
   errors are stored at every poll. Both files are downloaded and each line read as the live
   path reads an answer (`judges.client`'s chat result, then `judges.parse`). A line that
   failed is a `batch_error` verdict naming the error; a request the batch never ran (its line
   in the error file says `batch_expired` or `batch_cancelled`, or there is no line for it) an
   `expired` one: kept, and asked again by the next run, never lost. Every target's responses
   and verdicts, the tokens at the batch price (`judges.pricing`) and the row's `collected` are
   written in one transaction.

Killed while it waits (or with `--no-wait`), the same command finds the run's open batch and
collects it: nothing is sent twice. A row whose batch id was never stored is found again by its
submission id in the provider's list of batches (paged through: OpenAI's holds 100 at most a
page).
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import timezone
from typing import Callable, Iterable

from sqlalchemy import update
from sqlmodel import select
from tqdm import tqdm

from db import models
from db.engine import session_scope
from db.models import utcnow
from judges.client import (
    ChatResult,
    EndpointUnusable,
    JudgeClient,
    asks_for_max_completion_tokens,
    chat_result,
    mentions_response_format,
    one_line,
)
from judges.parse import BATCH_ERROR, EXPIRED
from judges.pricing import cost_usd
from judges.prompts import request_clusters
from judges.runner import (
    RunConfig,
    RunSummary,
    StoredRun,
    bill_in,
    finished_targets,
    judge_target,
    run_version,
    store_outcome,
)
from judges.targets import load_targets
from nlce.cli import UserError

ENDPOINT = "/v1/chat/completions"
FINAL = ("completed", "failed", "expired", "cancelled")
# OpenAI's error codes in the error file for a request the batch never ran (it expired, or was
# cancelled first): `expired` verdicts, asked again by the next run
NOT_RUN = ("batch_expired", "batch_cancelled")
WAITING = "waiting for the batch"


@dataclass
class Collecting:
    """A client for `judge_target` that answers from the cache or notes the request for the
    batch (and says so with a placeholder answer)."""
    client: JudgeClient
    pending: dict = field(default_factory=dict)  # key -> {"body", "format"} of each request

    def complete(self, messages: list[dict], schema: dict | None, refresh: bool = False):
        response_format, notes = self.client.request_format(schema)
        key = self.client.request_key(messages, response_format)
        hit = None if refresh else self.client.cached(key, notes)
        if hit is not None:
            return hit
        self.pending[key] = {"body": self.client.backend.request_body(messages, response_format),
                             "format": response_format}
        return ChatResult(error=WAITING, notes=notes)


@dataclass
class Answering:
    """A client for `judge_target` that answers from a collected batch (the request found by the
    key it had when it was sent), else from the cache."""
    client: JudgeClient
    results: dict  # key -> ChatResult
    formats: list  # the response formats the batch's requests were sent with

    def complete(self, messages: list[dict], schema: dict | None, refresh: bool = False):
        for response_format in self.formats:
            key = self.client.request_key(messages, response_format)
            if key in self.results:
                return self.results[key]
        response_format, notes = self.client.request_format(schema)
        hit = self.client.cached(self.client.request_key(messages, response_format), notes)
        return hit or ChatResult(error="the batch holds no such request", failure=BATCH_ERROR)


def pause(seconds: float) -> None:
    """The wait between polls and retries (a test replaces it)."""
    time.sleep(seconds)


class BatchApi:
    """The files and batches calls, with the live path's retries; an endpoint without them, or
    one that refuses the key, is EndpointUnusable (one line)."""

    def __init__(self, client: JudgeClient, sleep: Callable[[float], None] | None = None):
        backend = client.backend
        if not hasattr(backend, "api"):
            raise UserError("--batch needs an OpenAI-compatible endpoint (not --backend local)")
        self.openai, self.backend = backend.api, backend
        self.sleep = sleep or (lambda seconds: pause(seconds))
        self.calls: dict[str, int] = {}  # HTTP requests per kind

    def _call(self, what: str, action):
        import openai

        for attempt in range(self.backend.max_retries + 1):
            self.calls[what] = self.calls.get(what, 0) + 1
            try:
                return action()
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status in (401, 403):
                    raise EndpointUnusable(f"{self.backend.endpoint} refused the API key (HTTP "
                                           f"{status})") from None
                if status in (404, 405):
                    raise EndpointUnusable(f"{self.backend.endpoint} has no Batch API ({what}: "
                                           f"HTTP {status}); run without --batch") from None
                if status not in (408, 409, 429) and status < 500:
                    raise UserError(f"batch {what}: HTTP {status}: {one_line(exc, 200)}") from None
                failure = f"HTTP {status}"
            except openai.APIConnectionError as exc:
                failure = f"cannot reach {self.backend.endpoint}: {one_line(exc, 120)}"
            if attempt < self.backend.max_retries:
                self.sleep(min(60.0, 2.0 ** attempt))
        raise EndpointUnusable(f"batch {what}: gave up after {attempt + 1} attempts; last {failure}")

    def upload(self, name: str, content: bytes):
        return self._call("upload", lambda: self.openai.files.create(file=(name, content),
                                                                     purpose="batch"))

    def create(self, file_id: str, metadata: dict):
        return self._call("create", lambda: self.openai.batches.create(
            input_file_id=file_id, endpoint=ENDPOINT, completion_window="24h", metadata=metadata))

    def find(self, submission: str, since: float):
        """The provider's batch created for our submission id, if any: the account's batches,
        newest first, page by page (`after`), down to those made a day before `since` (a unix
        time: the submission was stored before its batch was made; a day for clocks that
        disagree). OpenAI's list is not filtered by metadata."""
        cursor: dict = {}  # after: the last batch of the page before
        while True:
            page = self._call("list", lambda cursor=cursor: self.openai.batches.list(
                limit=100, **cursor))
            found = next((b for b in page.data if (b.metadata or {}).get("nlce_submission")
                          == submission), None)
            if found is not None or not page.data or not page.has_more:
                return found
            if (page.data[-1].created_at or 0) < since - 86_400:
                return None
            cursor = {"after": page.data[-1].id}

    def retrieve(self, batch_id: str):
        return self._call("poll", lambda: self.openai.batches.retrieve(batch_id))

    def download(self, file_id: str) -> str:
        return self._call("download", lambda: self.openai.files.content(file_id).text)


# ---------------------------------------------------------------- submitting and collecting


def _save(db_url, row_id: int, **values) -> None:
    with session_scope(db_url) as session:
        session.exec(update(models.JudgeBatch).where(models.JudgeBatch.id == row_id)
                     .values(**values))


def submit(api: BatchApi, db_url, run: StoredRun, requests: dict) -> models.JudgeBatch:
    """Upload the requests' JSONL, then store the submission (the run's row too, if this is its
    first) and create the batch, storing its id as it comes. Nothing is stored before the
    provider holds the file: an endpoint that cannot take it leaves no row behind.
    `requests`: custom_id -> {"target_id", "cluster", "key", "format", "body"}."""
    submission = uuid.uuid4().hex
    lines = "".join(json.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT,
                                "body": r["body"]}, ensure_ascii=False) + "\n"
                    for cid, r in requests.items())
    uploaded = api.upload(f"nlce-judge-{submission[:12]}.jsonl", lines.encode())
    run_id = run.ensure()
    with session_scope(db_url) as session:
        row = models.JudgeBatch(run_id=run_id, submission=submission, input_file_id=uploaded.id,
                                requests={cid: {k: v for k, v in r.items() if k != "body"}
                                          for cid, r in requests.items()})
        session.add(row)
        session.flush()
        row_id = row.id
    return _create(api, db_url, row_id, uploaded.id, submission, run_id)


def _create(api: BatchApi, db_url, row_id: int, file_id: str, submission: str, run_id: int):
    batch = api.create(file_id, {"nlce_submission": submission, "nlce_run": str(run_id)})
    _save(db_url, row_id, batch_id=batch.id, status=batch.status)
    with session_scope(db_url) as session:
        row = session.get(models.JudgeBatch, row_id)
        session.expunge(row)
    return row


def resume(api: BatchApi, db_url, row: models.JudgeBatch) -> models.JudgeBatch | None:
    """An open submission brought to a batch id: found by its submission id, or created from its
    uploaded file; None when nothing of it reached the provider (it is dropped: submit anew)."""
    if row.batch_id is not None:
        return row
    created = row.created_at if row.created_at.tzinfo else row.created_at.replace(
        tzinfo=timezone.utc)  # SQLite hands back naive UTC
    found = api.find(row.submission, created.timestamp())
    if found is not None:
        _save(db_url, row.id, batch_id=found.id, status=found.status)
        return replace_row(row, batch_id=found.id, status=found.status)
    if row.input_file_id is not None:
        return _create(api, db_url, row.id, row.input_file_id, row.submission, row.run_id)
    with session_scope(db_url) as session:
        session.delete(session.get(models.JudgeBatch, row.id))
    return None


def replace_row(row: models.JudgeBatch, **values) -> models.JudgeBatch:
    for key, value in values.items():
        setattr(row, key, value)
    return row


def wait(api: BatchApi, db_url, row: models.JudgeBatch, poll_s: float, progress: bool):
    """Poll until the batch is final; its status and counts are stored at every poll."""
    bar = tqdm(total=len(row.requests), desc=f"batch {row.batch_id}", unit="request",
               disable=not progress)
    try:
        while True:
            batch = api.retrieve(row.batch_id)
            counts = batch.request_counts.model_dump() if batch.request_counts else {}
            _save(db_url, row.id, status=batch.status, counts=counts,
                  output_file_id=batch.output_file_id, error_file_id=batch.error_file_id,
                  error=_errors(batch, none=None))
            bar.n = counts.get("completed", 0) + counts.get("failed", 0)
            bar.set_postfix_str(batch.status)
            bar.refresh()
            if batch.status in FINAL:
                return batch
            api.sleep(poll_s)
    finally:
        bar.close()


def read_results(api: BatchApi, batch, row: models.JudgeBatch) -> dict[str, ChatResult]:
    """custom_id -> the answer (or failure) for every request of the batch."""
    out: dict[str, ChatResult] = {}
    for file_id in (batch.output_file_id, batch.error_file_id):
        for line in (api.download(file_id) if file_id else "").splitlines():
            if line.strip():
                record = json.loads(line)
                out[record.get("custom_id")] = line_result(record, batch.id)
    why = {"expired": (EXPIRED, f"the batch {batch.id} expired before answering it"),
           "cancelled": (EXPIRED, f"the batch {batch.id} was cancelled before answering it"),
           "failed": (BATCH_ERROR, f"the batch {batch.id} failed: {_errors(batch)}")}
    status, error = why.get(batch.status, (BATCH_ERROR, f"the batch {batch.id} has no line for "
                                                        "it in its output or error file"))
    for custom_id in row.requests:
        out.setdefault(custom_id, ChatResult(error=error, failure=status, notes=[
            {"kind": "batch", "batch_id": batch.id, "custom_id": custom_id}]))
    return out


def _errors(batch, none: str | None = "no reason given") -> str | None:
    """The batch's own errors on one line; `none` when it lists none."""
    listed = getattr(getattr(batch, "errors", None), "data", None) or []
    return "; ".join(f"{e.code}: {e.message}" for e in listed) or none


def line_result(record: dict, batch_id: str) -> ChatResult:
    """One line of a batch's output or error file read as the live path reads an answer."""
    from openai.types.chat import ChatCompletion
    from pydantic import ValidationError

    note = [{"kind": "batch", "batch_id": batch_id, "custom_id": record.get("custom_id")}]
    response = record.get("response") or {}
    code = (record.get("error") or {}).get("code") if isinstance(record.get("error"), dict) else None
    if not response and code in NOT_RUN:  # the batch ended before running it: asked again
        message = record["error"].get("message") or "not run"
        return ChatResult(error=f"batch: {code}: {one_line(message, 200)}", failure=EXPIRED,
                          notes=note)
    body = response.get("body")
    if response.get("status_code") == 200 and isinstance(body, dict):
        try:
            return chat_result(ChatCompletion.model_validate(body), 1, note, 0.0)
        except ValidationError as exc:
            return ChatResult(error=f"batch: the answer is no chat completion: {one_line(exc, 120)}",
                              failure=BATCH_ERROR, notes=note)
    error = (body or {}).get("error") if isinstance(body, dict) else None
    error = error or record.get("error") or {}
    status = response.get("status_code")
    message = (error.get("message") if isinstance(error, dict) else str(error)) or "no message"
    rejected = (status in (400, 422) or (status or 0) >= 500) and mentions_response_format(message)
    return ChatResult(error=f"batch: {'HTTP ' + str(status) if status else 'failed'}: "
                            f"{one_line(message, 200)}", failure=BATCH_ERROR, notes=note,
                      structured_rejected=rejected,
                      json_object_offered=rejected and "json_object" in message.lower(),
                      token_param_rejected=asks_for_max_completion_tokens(status, message))


# ---------------------------------------------------------------- the run


def run_batch(client: JudgeClient, config: RunConfig, tax, db_url: str | None, *,
              dataset: str | None = None, limit: int | None = None, prices: dict | None = None,
              progress: bool = True, redo: Iterable[str] = (), poll_s: float = 60.0,
              wait_for_it: bool = True, api: BatchApi | None = None) -> RunSummary:
    prices = prices or {}
    api = api or BatchApi(client)
    config = replace(config, endpoint=config.endpoint or client.endpoint)
    price_known = config.model in prices
    with session_scope(db_url) as session:
        targets = load_targets(session, config.lang, dataset, limit)
        version = run_version(config, targets, tax)
        run = StoredRun(db_url, config, version, price_known, session)
        open_rows = session.exec(select(models.JudgeBatch).where(
            models.JudgeBatch.run_id == run.run_id, models.JudgeBatch.status != "collected")
            .order_by(models.JudgeBatch.id)).all() if run.run_id is not None else []
        session.expunge_all()
    summary = RunSummary(run.run_id, run.signature, version, len(targets), 0, 0, {}, 0, 0, 0, 0,
                         0.0 if price_known else None, None)
    try:
        _submit_and_collect(api, client, config, tax, db_url, targets, open_rows, summary, run,
                            prices, progress, redo, poll_s, wait_for_it)
    except EndpointUnusable as exc:  # as on the live path: the run stops, one line, exit 1
        summary.stopped = str(exc)
    summary.run_id, summary.run_cost_usd = run.run_id, run.cost_so_far()
    return summary


def _submit_and_collect(api: BatchApi, client: JudgeClient, config: RunConfig, tax, db_url,
                        targets: list, open_rows: list, summary: RunSummary, run: StoredRun,
                        prices: dict, progress: bool, redo, poll_s: float,
                        wait_for_it: bool) -> None:
    by_id = {t.target_id: t for t in targets}
    row = None
    for candidate in open_rows:
        row = resume(api, db_url, candidate)
        if row is not None:
            break
    if row is None:
        done, redone = _finished(db_url, run.run_id, config, tax, redo)
        todo = [t for t in targets if t.target_id not in done]
        summary.targets_skipped = len(targets) - len(todo)
        requests = {}
        for target in todo:
            collecting = Collecting(client)
            outcome = judge_target(collecting, target, config, tax, target.target_id in redone)
            if not collecting.pending:  # every answer from the cache: stored now
                _store(db_url, run.ensure(), [outcome], tax, summary, {})
                continue
            for key, request in collecting.pending.items():
                requests[f"r{len(requests) + 1}"] = {"target_id": target.target_id,
                                                     "key": key, **request}
        if not requests:
            return
        row = submit(api, db_url, run, requests)
        summary.notes.append(f"batch {row.batch_id}: {len(requests)} request(s) in one file "
                             "submitted")
    else:
        summary.notes.append(f"batch {row.batch_id}: resumed (submitted before; nothing sent "
                             "again)")
    if not wait_for_it:
        summary.notes.append(f"not waiting (--no-wait): run the same command to collect batch "
                             f"{row.batch_id}")
        return
    batch = wait(api, db_url, row, poll_s, progress)
    collect(api, client, config, tax, db_url, batch, row, by_id, prices, summary)
    calls = ", ".join(f"{k} {v}" for k, v in api.calls.items())
    summary.notes.append(f"batch {batch.id} {batch.status}: HTTP requests to the Batch API: "
                         f"{calls}")


def _finished(db_url, run_id: int | None, config: RunConfig, tax, redo) -> tuple[set, set]:
    with session_scope(db_url) as session:
        return finished_targets(session, run_id, len(request_clusters(config.prompt_strategy,
                                                                      tax)), redo)


def collect(api: BatchApi, client: JudgeClient, config: RunConfig, tax, db_url, batch,
            row: models.JudgeBatch, by_id: dict, prices: dict, summary: RunSummary) -> None:
    """Read the finished batch and store every target's answers, tokens and the row's end in
    one transaction."""
    results = read_results(api, batch, row)
    by_key = {row.requests[cid]["key"]: result for cid, result in results.items()}
    formats = list({json.dumps(r.get("format"), sort_keys=True): r.get("format")
                    for r in row.requests.values()}.values())
    target_ids = sorted({r["target_id"] for r in row.requests.values()})
    answering = Answering(client, by_key, formats)
    outcomes = [judge_target(answering, by_id[t], config, tax) for t in target_ids if t in by_id]
    billed = {"prompt": 0, "completion": 0}
    rejections, token_param_rejected = [], 0
    for key, result in by_key.items():
        token_param_rejected += result.token_param_rejected
        billed["prompt"] += result.prompt_tokens
        billed["completion"] += result.completion_tokens
        if result.error is None and client.cache is not None:
            client.cache.put(key, result.cache_payload())  # as the live path keeps answers
        if result.structured_rejected:  # read as the live path reads it (OpenAIBackend.call)
            rejections.append(result.json_object_offered)
    if rejections:  # the next batch sends the form the live path would fall back to, once
        client.note_rejected(all(rejections))
    if token_param_rejected:  # as the live path switches: the next batch (and run) too
        client.note_max_completion_tokens()
        summary.notes.append(f"{token_param_rejected} request(s) rejected max_tokens for "
                             "max_completion_tokens: the next run sends that (run the same "
                             "command to ask again)")
    cost = cost_usd(prices, config.model, config.backend, billed["prompt"], billed["completion"],
                    batch=True)
    _store(db_url, row.run_id, outcomes, tax, summary, billed, cost, row.id)


def _store(db_url, run_id: int, outcomes: list, tax, summary: RunSummary, billed: dict,
           cost: float | None = 0.0, row_id: int | None = None) -> None:
    with session_scope(db_url) as session:
        run = session.get(models.JudgeRun, run_id)
        for outcome in outcomes:
            store_outcome(session, run, outcome, tax)
            for response in outcome.responses:
                summary.statuses[response.status] = summary.statuses.get(response.status, 0) + 1
                summary.calls += 1
                summary.cached += response.cached
            summary.targets_judged += 1
        if billed:
            bill_in(session, run_id, cost, billed["prompt"], billed["completion"])
        if row_id is not None:
            session.exec(update(models.JudgeBatch).where(models.JudgeBatch.id == row_id)
                         .values(status="collected", finished_at=utcnow()))
    summary.prompt_tokens += billed.get("prompt", 0)
    summary.completion_tokens += billed.get("completion", 0)
    if summary.cost_usd is not None:
        summary.cost_usd = None if cost is None else summary.cost_usd + cost

