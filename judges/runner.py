"""The judge runner: targets from the database, one request per target (seven, hierarchical),
answers classified and stored with their verdicts.

The work for one target (`judge_target`) reads nothing from the database: it builds the prompt,
asks the client, parses and merges, and returns plain records. The shell around it (`run_judge`)
loads targets, skips those already answered, runs targets concurrently, and writes each target's
responses and verdicts in one transaction as it finishes, so an interrupted run loses nothing
and a re-run resumes. Targets whose stored answer was an api_error are asked again (and, with
`redo`, those with the given statuses, bypassing the cache).

A run is identified by everything that can change an answer: model, backend, endpoint,
strategy or prompt template (by hash), prompt language and version, sampling, order, context.
Tokens are counted on the run as each answer arrives (`JudgeClient.on_billed`), so a run killed
mid-target has paid for what the cache will later give it free. An endpoint that is down or
refuses the key stops the run (`RunSummary.stopped`) instead of failing every request.
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import Counter
from concurrent.futures import CancelledError, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable

from sqlalchemy import delete, update
from sqlmodel import Session, select
from tqdm import tqdm

from agreement.judges import failure_reason
from db import models
from db.engine import session_scope
from db.models import UNANSWERED_STATUSES
from judges.client import ChatResult, EndpointUnusable, JudgeClient, SamplingParams
from judges.context_fit import refused_for_context, ways_out
from judges.order import presentation_order
from judges.parse import (
    OK,
    ParsedResponse,
    PredictionVerdict,
    merge_cluster_verdicts,
    parse_response,
)
from judges.pricing import cost_usd
from judges.prompts import (
    JudgeInput,
    Prediction,
    accuracy_names,
    build_messages,
    offered_codes,
    output_schema,
    prediction_ids,
    prompt_version,
    request_clusters,
)
from judges.targets import GenerationData, TargetData, load_targets
from judges.templates import PromptTemplate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunConfig:
    model: str
    strategy: str
    lang: str  # language of the targets
    prompt_lang: str  # language of the prompt (the study: the same as `lang`)
    backend: str = "openai"
    sampling: SamplingParams = SamplingParams()
    order: str = "fixed"
    order_seed: int = 42
    context_chars: int | None = 4000
    accuracy_policy: str = "worst"  # hierarchical only
    structured: str = "auto"
    template: PromptTemplate | None = None  # then `strategy` is the template's name
    endpoint: str = ""  # the client's normalised endpoint; run_judge fills it in
    # the prompt's layout: "auto" (code for a comment in a file, pairs for a pairs target), or
    # one of judges.prompts.LAYOUTS for every target
    layout: str = "auto"
    # what a study records about the run: {"repeat": {...}} (judges.run --repeats),
    # {"code_mix": {...}} (--code-mix); part of the run's identity
    study: dict | None = field(default=None, compare=False, hash=False)

    @property
    def prompt_strategy(self) -> "str | PromptTemplate":
        """What the prompt builders take: the template, else the strategy name."""
        return self.template if self.template is not None else self.strategy

    def signature_params(self) -> dict:
        params = {"sampling": self.sampling.as_dict(), "order": self.order,
                  "order_seed": self.order_seed, "context_chars": self.context_chars,
                  "structured": self.structured, "target_language": self.lang,
                  "endpoint": self.endpoint}
        if self.template is not None:
            params["template"] = self.template.describe()
        if self.layout != "auto":  # (absent when auto: runs made before it keep their identity)
            params["layout"] = self.layout
        params.update(self.study or {})
        if (self.template.base if self.template else self.strategy) == "hierarchical":
            params["accuracy_policy"] = self.accuracy_policy
        return params


def run_signature(config: RunConfig, version: str) -> str:
    payload = {"model": config.model, "backend": config.backend, "strategy": config.strategy,
               "prompt_language": config.prompt_lang, "prompt_version": version,
               "params": config.signature_params()}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    return f"{config.model}|{config.strategy}|{config.prompt_lang}|{version}|{digest}"


def layout_of(target: TargetData, layout: str) -> str:
    """The prompt layout a target gets: `layout`, or under "auto" its kind's."""
    return layout if layout != "auto" else ("code" if target.in_file else "pairs")


@dataclass
class ResponseRecord:
    cluster: str
    order: list[int]
    status: str
    raw_response: str
    repairs: list[dict]
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool


@dataclass
class VerdictRecord:
    generation_id: int
    status: str
    accuracy: str | None
    codes: list[dict]
    position: int


@dataclass
class TargetOutcome:
    target_id: int
    responses: list[ResponseRecord] = field(default_factory=list)
    verdicts: list[VerdictRecord] = field(default_factory=list)


# ---------------------------------------------------------------- the pure part


def presented(target: TargetData, config: RunConfig) -> tuple[list[GenerationData], JudgeInput]:
    """The target's generations in the order the judge sees them, and what its prompt shows:
    the comment, the code around it in the target's layout, the predictions under their ids."""
    ordered = presentation_order(target.generations, config.order, config.order_seed,
                                 target.target_id)
    layout = layout_of(target, config.layout)
    ids = prediction_ids(len(ordered))
    context = target.code_context(config.context_chars)
    if layout == "pairs" and target.in_file:  # a comment judged without its code
        context = ""
    return ordered, JudgeInput(
        original_comment=target.original_comment, code_context=context,
        predictions=tuple(Prediction(pid, g.predicted_comment) for pid, g in zip(ids, ordered)),
        layout=layout, language=config.lang,
    )


def _response_record(cluster: str, order: list[int], result: ChatResult,
                     parsed: ParsedResponse | None) -> ResponseRecord:
    raw = result.content if result.content is not None else (result.refusal or "")
    if parsed is None:  # no answer at all
        status, repairs, error = result.failure, list(result.notes), result.error
    else:
        status, repairs, error = parsed.status, result.notes + parsed.repairs, parsed.error
    return ResponseRecord(cluster, order, status, raw, repairs, error, result.prompt_tokens,
                          result.completion_tokens, round(result.latency_s, 4), result.cached)


def judge_target(client: JudgeClient, target: TargetData, config: RunConfig, tax,
                 refresh: bool = False) -> TargetOutcome:
    """Ask the judge about one target and turn its answers into records (no database);
    `refresh` asks the endpoint even for requests the cache knows."""
    ordered, judge_input = presented(target, config)
    ids = judge_input.prediction_ids
    order = [g.generation_id for g in ordered]
    labels = accuracy_names(tax, config.prompt_lang)
    outcome = TargetOutcome(target.target_id)
    parsed_by_cluster: dict[str, ParsedResponse] = {}
    strategy = config.prompt_strategy
    models = {pid: g.model for pid, g in zip(ids, ordered)}
    for cluster in request_clusters(strategy, tax):
        offered = offered_codes(strategy, tax, cluster)
        messages = build_messages(strategy, judge_input, config.prompt_lang, tax, cluster)
        schema = output_schema(strategy, config.prompt_lang, offered, ids, labels)
        result = client.complete(messages, schema, refresh=refresh)
        if result.error is not None:
            parsed = ParsedResponse(result.failure, {
                pid: PredictionVerdict(pid, result.failure, error=result.error) for pid in ids})
            outcome.responses.append(_response_record(cluster, order, result, None))
        else:
            parsed = parse_response(result.content, lang=config.prompt_lang,
                                    strategy=config.strategy, tax=tax, offered=offered,
                                    prediction_ids=ids, finish_reason=result.finish_reason,
                                    refusal=result.refusal, prediction_models=models)
            outcome.responses.append(_response_record(cluster, order, result, parsed))
        parsed_by_cluster[cluster] = parsed
    for position, (pid, generation) in enumerate(zip(ids, ordered), start=1):
        if len(parsed_by_cluster) > 1 or "" not in parsed_by_cluster:  # hierarchical
            verdict = merge_cluster_verdicts(parsed_by_cluster, pid, config.accuracy_policy)
        else:
            verdict = parsed_by_cluster[""].verdicts[pid]
        outcome.verdicts.append(VerdictRecord(
            generation.generation_id, verdict.status, verdict.accuracy,
            [c.as_dict() for c in verdict.codes], position))
    return outcome


# ---------------------------------------------------------------- the database shell


def run_version(config: RunConfig, targets: list[TargetData], tax) -> str:
    """The prompt version of a run over these targets: their layouts, in their language."""
    layouts = {layout_of(t, config.layout) for t in targets}
    return prompt_version(config.prompt_strategy, config.prompt_lang, tax, config.lang,
                          sorted(layouts))


def get_or_create_run(session: Session, config: RunConfig, version: str,
                      price_known: bool) -> models.JudgeRun:
    signature = run_signature(config, version)
    run = session.exec(select(models.JudgeRun).where(models.JudgeRun.signature == signature)).first()
    if run is None:
        run = models.JudgeRun(signature=signature, model=config.model, backend=config.backend,
                              strategy=config.strategy, prompt_language=config.prompt_lang,
                              prompt_version=version, params=config.signature_params())
        session.add(run)
        session.flush()
        if not price_known:  # the ORM writes the column default 0.0 for a None: unknown it is
            session.exec(update(models.JudgeRun).where(models.JudgeRun.id == run.id)
                         .values(cost_usd=None))
            session.refresh(run)
    return run


class StoredRun:
    """A run's row, found by its signature or created by `ensure` only when there is something
    to store in it (an answer, the tokens of one): an endpoint that cannot be reached, or a
    prompt refused before it is sent, leaves no empty run behind. Thread-safe."""

    def __init__(self, db_url: str | None, config: RunConfig, version: str, price_known: bool,
                 session: Session):
        self.db_url, self.config, self.version, self.price_known = (
            db_url, config, version, price_known)
        self.signature = run_signature(config, version)
        found = session.exec(select(models.JudgeRun.id).where(
            models.JudgeRun.signature == self.signature)).first()
        self.run_id: int | None = found  # None until something is stored
        self._lock = threading.Lock()

    def ensure(self) -> int:
        """The run's id, its row created now if it was not stored yet."""
        with self._lock:
            if self.run_id is None:
                with session_scope(self.db_url) as session:
                    self.run_id = get_or_create_run(session, self.config, self.version,
                                                    self.price_known).id
            return self.run_id

    def cost_so_far(self) -> float | None:
        """The run's stored cost (0.0 for a run never stored)."""
        if self.run_id is None:
            return 0.0
        with session_scope(self.db_url) as session:
            return session.get(models.JudgeRun, self.run_id).cost_usd


def finished_targets(session: Session, run_id: int | None, expected_responses: int,
                     redo: Iterable[str] = ()) -> tuple[set[int], set[int]]:
    """(targets with every response stored and none unanswered (api_error, batch_error,
    expired) or of a status in `redo`,
    targets to ask again because a stored response has a status in `redo`)."""
    counts: dict[int, int] = {}
    failed: set[int] = set()
    redone: set[int] = set()
    redo = set(redo)
    for target_id, status in session.exec(
            select(models.JudgeResponse.target_id, models.JudgeResponse.status)
            .where(models.JudgeResponse.run_id == run_id)):
        counts[target_id] = counts.get(target_id, 0) + 1
        if status in UNANSWERED_STATUSES:
            failed.add(target_id)
        if status in redo:
            redone.add(target_id)
    done = {t for t, n in counts.items() if n >= expected_responses and t not in failed | redone}
    return done, redone


def store_outcome(session: Session, run: models.JudgeRun, outcome: TargetOutcome, tax) -> None:
    """Replace this target's responses/verdicts in the run by the new ones (its tokens were
    counted as they arrived: `bill`)."""
    generation_ids = [v.generation_id for v in outcome.verdicts]
    session.exec(delete(models.JudgeResponse).where(models.JudgeResponse.run_id == run.id,
                                                    models.JudgeResponse.target_id == outcome.target_id))
    session.exec(delete(models.JudgeVerdict).where(models.JudgeVerdict.run_id == run.id,
                                                   models.JudgeVerdict.generation_id.in_(generation_ids)))
    for r in outcome.responses:
        session.add(models.JudgeResponse(run_id=run.id, target_id=outcome.target_id, **asdict(r)))
    for v in outcome.verdicts:
        tax.validate_codes([c["code"] for c in v.codes])
        session.add(models.JudgeVerdict(run_id=run.id, generation_id=v.generation_id,
                                        status=v.status, accuracy=v.accuracy, codes=v.codes,
                                        position=v.position))
    if any(n.get("kind") == "plain_json_fallback" for r in outcome.responses for n in r.repairs):
        if not run.params.get("structured_fallback"):
            run.params = {**run.params, "structured_fallback": "endpoint rejected JSON-schema "
                                                               "output; plain JSON used"}
    session.add(run)


def bill(db_url: str | None, run_id: int, cost: float | None, prompt_tokens: int,
         completion_tokens: int) -> None:
    """Add one answer's tokens and cost to the run (`bill_in`, a transaction of its own)."""
    with session_scope(db_url) as session:
        bill_in(session, run_id, cost, prompt_tokens, completion_tokens)


def bill_in(session, run_id: int, cost: float | None, prompt_tokens: int,
            completion_tokens: int) -> None:
    """Add tokens and cost to the run in one UPDATE (safe beside other threads); an unknown
    cost makes the run's cost unknown (NULL + x is NULL)."""
    run = models.JudgeRun
    session.exec(update(run).where(run.id == run_id).values(
        prompt_tokens=run.prompt_tokens + prompt_tokens,
        completion_tokens=run.completion_tokens + completion_tokens,
        cost_usd=run.cost_usd + cost if cost is not None else None))


@dataclass
class RunSummary:
    run_id: int | None  # None: no run was stored (StoredRun)
    signature: str
    prompt_version: str
    targets_total: int
    targets_skipped: int
    targets_judged: int
    statuses: dict[str, int]
    calls: int
    cached: int
    prompt_tokens: int  # billed (not cached) in this invocation
    completion_tokens: int
    cost_usd: float | None  # this invocation; None: price unknown
    run_cost_usd: float | None  # the run so far
    stopped: str | None = None  # why the run stopped before its end (endpoint unusable)
    notes: list[str] = field(default_factory=list)  # more lines for the person (a batch's)
    # targets not sent: their prompts do not fit the model's context (judges.context_fit)
    too_long: list[dict] = field(default_factory=list)
    ways_out: str | None = None  # why, and what would make them fit: one line
    reasons: Counter = field(default_factory=Counter)  # failed responses' errors, as grouped
    examples: dict = field(default_factory=dict)  # a grouped reason -> its first error

    def most_often(self) -> str:
        """The most frequent failure reason of this invocation, for its last line."""
        if not self.reasons:
            return ""
        (reason, n), = self.reasons.most_common(1)
        return f" (most often, {n} of {self.calls}: {self.examples.get(reason, reason)})"

    @property
    def failed(self) -> bool:
        """Nothing useful done: stopped, or requests were made (or refused for the context)
        and none was answered ok."""
        return self.stopped is not None or (
            (self.calls > 0 or bool(self.too_long)) and not self.statuses.get(OK))

    @property
    def none_fit(self) -> bool:
        """Failed without a request: no prompt fits the model's context (`ways_out` says so)."""
        return self.failed and bool(self.ways_out) and not self.calls


def run_judge(client: JudgeClient, config: RunConfig, tax, db_url: str | None, *,
              dataset: str | None = None, limit: int | None = None, concurrency: int = 4,
              prices: dict | None = None, progress: bool = True,
              redo: Iterable[str] = ()) -> RunSummary:
    prices = prices or {}
    config = replace(config, endpoint=config.endpoint or client.endpoint)
    expected = len(request_clusters(config.prompt_strategy, tax))
    price_known = config.backend == "local" or config.model in prices
    with session_scope(db_url) as session:
        targets = load_targets(session, config.lang, dataset, limit)
        version = run_version(config, targets, tax)
        run = StoredRun(db_url, config, version, price_known, session)
        done, redone = finished_targets(session, run.run_id, expected, redo)
    todo = [t for t in targets if t.target_id not in done]
    statuses: dict[str, int] = {}
    calls = cached = 0
    billed = {"prompt": 0, "completion": 0}
    lock = threading.Lock()

    def on_billed(result: ChatResult) -> None:
        with lock:
            billed["prompt"] += result.prompt_tokens
            billed["completion"] += result.completion_tokens
        cost = cost_usd(prices, config.model, config.backend, result.prompt_tokens,
                        result.completion_tokens)
        bill(db_url, run.ensure(), cost, result.prompt_tokens, result.completion_tokens)

    client.on_billed = on_billed
    stopped = None
    too_long: list[dict] = []
    reasons: Counter = Counter()
    examples: dict = {}
    bar = tqdm(total=len(todo), desc=f"judge {config.strategy}/{config.prompt_lang}",
               unit="target", disable=not progress)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    futures = {pool.submit(judge_target, client, t, config, tax, t.target_id in redone): t
               for t in todo}
    try:
        for future in as_completed(futures):
            try:
                outcome = future.result()
            except EndpointUnusable as exc:
                stopped = stopped or str(exc)
                for f in futures:
                    f.cancel()
                continue
            except CancelledError:
                continue
            bar.update(1)
            refused = refused_for_context(outcome)
            if refused is not None:  # nothing was sent: nothing to store, asked again next run
                too_long.append({**refused, "target": futures[future]})
                continue
            run_id = run.ensure()
            with session_scope(db_url) as session:
                store_outcome(session, session.get(models.JudgeRun, run_id), outcome, tax)
            for r in outcome.responses:
                statuses[r.status] = statuses.get(r.status, 0) + 1
                calls += 1
                cached += r.cached
                if r.status != OK:
                    reason = failure_reason(r.error)
                    reasons[reason] += 1
                    examples.setdefault(reason, r.error)
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close()
        client.on_billed = None
    judged = sum(1 for f in futures if f.done() and not f.cancelled() and f.exception() is None)
    cost = cost_usd(prices, config.model, config.backend, billed["prompt"], billed["completion"])
    summary = RunSummary(run.run_id, run.signature, version, len(targets),
                         len(targets) - len(todo), judged - len(too_long), statuses, calls, cached,
                         billed["prompt"], billed["completion"], cost, run.cost_so_far(), stopped)
    summary.reasons, summary.examples = reasons, examples
    if too_long:
        summary.too_long = [{k: v for k, v in n.items() if k != "target"} for n in too_long]
        summary.ways_out = _ways_out(client, config, tax, too_long)
    return summary


def _ways_out(client: JudgeClient, config: RunConfig, tax, too_long: list[dict]) -> str:
    """The line that says which prompts did not fit and what would make them fit, with the
    longest one's English prompt counted where it can be."""
    longest = max(too_long, key=lambda n: n.get("prompt_tokens") or 0)
    judge_input, english = presented(longest["target"], config)[1], None
    if config.prompt_lang != "en" and hasattr(client.backend, "prompt_tokens"):
        cluster = request_clusters(config.prompt_strategy, tax)[0]
        english = client.backend.prompt_tokens(build_messages(
            config.prompt_strategy, judge_input, "en", tax, cluster))
    fit = getattr(client.backend, "fit", None)
    return ways_out(longest, len(too_long), model=config.model,
                    max_tokens=config.sampling.max_tokens, prompt_lang=config.prompt_lang,
                    context_chars=config.context_chars,
                    code_chars=len(judge_input.code_context)
                    if judge_input.layout == "code" else 0,
                    owned_by=getattr(fit, "owned_by", None), english_tokens=english)


def iter_summary_lines(summary: RunSummary) -> Iterable[str]:
    cost = "unknown (no price for this model)" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
    run_cost = "unknown" if summary.run_cost_usd is None else f"${summary.run_cost_usd:.4f}"
    if summary.run_id is None:  # StoredRun: nothing came to store
        run_cost = "none (nothing stored)"
    yield (f"run {summary.run_id}" if summary.run_id is not None else "run: none stored (no "
           "answer came)") + f"  prompt version {summary.prompt_version}"
    yield (f"targets: {summary.targets_total} selected, {summary.targets_skipped} already done, "
           f"{summary.targets_judged} judged now")
    yield "responses: " + (", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items())) or "none")
    yield f"requests: {summary.calls} ({summary.cached} from cache)"
    yield (f"tokens billed now: {summary.prompt_tokens} prompt + {summary.completion_tokens} "
           f"completion; cost now {cost}; run total {run_cost}")
    if summary.ways_out:
        yield f"not sent: {summary.ways_out}"
    yield from summary.notes
