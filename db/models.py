"""The data model: one database where every stage meets.

Dataset -> SourceFile -> Target -> Generation is the corpus; Annotator, Assignment, Annotation
(+ AnnotationEvent history, GoldLabel for adjudication, AnnotatorSession and SignInThrottle for
the app's sign-in) are the humans; MetricRun -> MetricScore (+ NoiseSample) the metrics;
JudgeRun -> JudgeResponse -> JudgeVerdict the LLM judges; LabelPlan -> LabelPlanItem the label
budgets drawn where a judge is least reliable.

Integrity lives in the database, not only here: unique keys, foreign keys, CHECK constraints on
labels and enumerations, and error codes as rows of `error_code` that annotations reference.
Portable SQL only: the same tables run on SQLite and PostgreSQL.
"""
from __future__ import annotations

import unicodedata
from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import JSON, CheckConstraint, Column, Index, Text, UniqueConstraint, event
from sqlmodel import Field, SQLModel

from taxonomy import ACCURACY_LABELS


def utcnow() -> datetime:
    """Now, timezone-aware in UTC (SQLModel's datetime columns refuse naive values)."""
    return datetime.now(timezone.utc)


def _in(column: str, values) -> str:
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"{column} IN ({quoted})"


ANNOTATOR_ROLES = ("annotator", "lead", "expert")
ANNOTATION_STATUSES = ("done", "skipped", "flagged", "draft")  # draft: no accuracy yet
CONTEXT_VARIANTS = ("none", "minimal", "full")
NOISE_KINDS = ("none", "uniform", "targeted")
JUDGE_STRATEGIES = ("standard", "cot", "rubric", "hierarchical")
JUDGE_STATUSES = ("ok", "parse_error", "empty", "refused", "truncated", "api_error",
                  "batch_error", "expired")
# no answer came: the endpoint gave none (api_error), a batch's line failed (batch_error), the
# batch expired or was cancelled first (expired); such targets are asked again on the next run
UNANSWERED_STATUSES = ("api_error", "batch_error", "expired")
ACCURACY_CHECK = _in("accuracy", ACCURACY_LABELS)


def _json(nullable: bool = False) -> Any:
    if nullable:
        return Field(default=None, sa_column=Column(JSON, nullable=True))
    return Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


def _text(nullable: bool = False) -> Any:
    return Field(default=None if nullable else "", sa_column=Column(Text, nullable=nullable))


# ---------------------------------------------------------------- corpus

class Dataset(SQLModel, table=True):
    __tablename__ = "dataset"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    description: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class SourceFile(SQLModel, table=True):
    __tablename__ = "source_file"
    __table_args__ = (
        UniqueConstraint("dataset_id", "repo", "path", name="uq_source_file_location"),
        CheckConstraint("length(natural_language) BETWEEN 2 AND 8", name="ck_source_file_lang"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True, ondelete="CASCADE")
    external_id: Optional[str] = Field(default=None, index=True)  # e.g. the study's file_id
    natural_language: str = Field(index=True)  # ISO 639-1: en, nl, zh, el, pl, ...
    programming_language: str = ""
    repo: str = ""
    path: str = ""
    licence: str = ""
    content: str = _text()
    content_sha256: str = Field(index=True)
    # the file's encoding on disk (utf-8, gb18030, big5, utf-16 ...); `content` is always Unicode
    source_encoding: str = Field(default="utf-8", sa_column_kwargs={"server_default": "utf-8"})


class Target(SQLModel, table=True):
    """One comment in a source file that models are asked to regenerate, or (a pairs target,
    `source_file_id` NULL) one reference text of a dataset, imported without a file."""
    __tablename__ = "target"
    __table_args__ = (
        UniqueConstraint("source_file_id", "span_start", "span_end", name="uq_target_span"),
        UniqueConstraint("dataset_id", "external_id", name="uq_target_item"),
        CheckConstraint("span_start >= 0 AND span_start <= span_end", name="ck_target_span"),
        CheckConstraint("(source_file_id IS NULL) <> (dataset_id IS NULL)",
                        name="ck_target_owner"),
        CheckConstraint("source_file_id IS NOT NULL OR length(natural_language) BETWEEN 2 AND 8",
                        name="ck_target_lang"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    source_file_id: Optional[int] = Field(default=None, foreign_key="source_file.id", index=True,
                                          ondelete="CASCADE")
    span_start: int  # character offsets into SourceFile.content, end exclusive
    span_end: int
    original_comment: str = _text()
    comment_kind: str = ""  # line | block | docstring
    # pairs targets only (NULL for a file's comment): their dataset, item id, language, and
    # optional context text standing in for the file around the comment
    dataset_id: Optional[int] = Field(default=None, foreign_key="dataset.id", index=True,
                                      ondelete="CASCADE")
    external_id: Optional[str] = None
    natural_language: Optional[str] = None
    context: Optional[str] = _text(nullable=True)


class Generation(SQLModel, table=True):
    """What one model predicted for one target."""
    __tablename__ = "generation"
    __table_args__ = (UniqueConstraint("target_id", "model", name="uq_generation_target_model"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    target_id: int = Field(foreign_key="target.id", index=True, ondelete="CASCADE")
    model: str = Field(index=True)
    fim_input: str = _text()
    raw_output: str = _text()
    predicted_comment: str = _text()
    backend: str = ""
    params: dict = _json()
    created_at: datetime = Field(default_factory=utcnow)

    @property
    def is_empty(self) -> bool:
        """The model wrote nothing (a real, labelled outcome: scored and shown as such)."""
        return not self.predicted_comment.strip() and not self.raw_output.strip()


# ---------------------------------------------------------------- humans

class ErrorCode(SQLModel, table=True):
    """The taxonomy's codes as rows, so the database itself rejects a code that does not exist."""
    __tablename__ = "error_code"
    code: str = Field(primary_key=True)
    level: str
    parent: Optional[str] = None
    taxonomy_version: str


def username_key(name: str) -> str:
    """What tells account names apart: NFKC, str.casefold, NFKC again (casefold can leave text
    that is not normalised), in Python, so every backend agrees ('Łukasz', 'ŁUKASZ' and
    'łukasz' are one name; SQLite's lower() folds ASCII only). Lookups: `db.usernames`."""
    folded = unicodedata.normalize("NFKC", (name or "").strip()).casefold()
    return unicodedata.normalize("NFKC", folded)


class Annotator(SQLModel, table=True):
    __tablename__ = "annotator"
    __table_args__ = (CheckConstraint(_in("role", ANNOTATOR_ROLES), name="ck_annotator_role"),
                      UniqueConstraint("username_key", name="uq_annotator_username_key"))
    id: Optional[int] = Field(default=None, primary_key=True)
    username: str = Field(unique=True, index=True)
    # username_key(username), set on insert; NULL only for an account that an older release let
    # in beside its case twin (migration 0011), which then signs in by its exact name alone
    username_key: Optional[str] = None
    display_name: str = ""
    languages: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    interface_language: str = "en"
    role: str = "annotator"
    password_hash: Optional[str] = None  # scrypt; never the password itself
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow)


@event.listens_for(Annotator, "before_insert")
def _key_the_username(_mapper, _connection, account: Annotator) -> None:
    account.username_key = username_key(account.username)


class Assignment(SQLModel, table=True):
    """An item in an annotator's queue."""
    __tablename__ = "assignment"
    __table_args__ = (UniqueConstraint("generation_id", "annotator_id", name="uq_assignment"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    generation_id: int = Field(foreign_key="generation.id", index=True, ondelete="CASCADE")
    annotator_id: int = Field(foreign_key="annotator.id", index=True, ondelete="CASCADE")
    position: int = 0
    created_at: datetime = Field(default_factory=utcnow)


class Annotation(SQLModel, table=True):
    """An annotator's current label for a generation; every change is also in AnnotationEvent."""
    __tablename__ = "annotation"
    __table_args__ = (
        UniqueConstraint("generation_id", "annotator_id", name="uq_annotation"),
        CheckConstraint(f"accuracy IS NULL OR {ACCURACY_CHECK}", name="ck_annotation_accuracy"),
        CheckConstraint(_in("status", ANNOTATION_STATUSES), name="ck_annotation_status"),
        CheckConstraint("seconds_spent >= 0", name="ck_annotation_seconds"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    generation_id: int = Field(foreign_key="generation.id", index=True, ondelete="CASCADE")
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    accuracy: Optional[str] = None
    status: str = "done"
    note: str = _text()
    seconds_spent: float = 0.0
    taxonomy_version: str = ""
    revision: int = 1  # bumped on every save; optimistic concurrency for the app
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class AnnotationCode(SQLModel, table=True):
    __tablename__ = "annotation_code"
    annotation_id: int = Field(foreign_key="annotation.id", primary_key=True, ondelete="CASCADE")
    code: str = Field(foreign_key="error_code.code", primary_key=True)


class AnnotationEvent(SQLModel, table=True):
    """Append-only history: one row per save, holding the full label as it was then."""
    __tablename__ = "annotation_event"
    id: Optional[int] = Field(default=None, primary_key=True)
    annotation_id: int = Field(foreign_key="annotation.id", index=True, ondelete="CASCADE")
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    revision: int
    accuracy: Optional[str] = None
    status: str = "done"
    codes: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    note: str = _text()
    seconds_spent: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)


class GoldLabel(SQLModel, table=True):
    """The adjudicated label of a generation; the annotators' own labels stay as they were."""
    __tablename__ = "gold_label"
    __table_args__ = (CheckConstraint(ACCURACY_CHECK, name="ck_gold_accuracy"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    generation_id: int = Field(foreign_key="generation.id", unique=True, ondelete="CASCADE")
    adjudicator_id: int = Field(foreign_key="annotator.id")
    accuracy: str
    note: str = _text()
    taxonomy_version: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class GoldLabelEvent(SQLModel, table=True):
    """Append-only history of gold labels: one row per adjudication, holding the full gold label
    as it was stored then (like annotation_event for the annotators' labels)."""
    __tablename__ = "gold_label_event"
    id: Optional[int] = Field(default=None, primary_key=True)
    gold_label_id: int = Field(foreign_key="gold_label.id", index=True, ondelete="CASCADE")
    adjudicator_id: int = Field(foreign_key="annotator.id")
    accuracy: str
    codes: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    note: str = _text()
    created_at: datetime = Field(default_factory=utcnow)


class FlagReply(SQLModel, table=True):
    """The lead's answer to an annotator's flagged label, shown to that annotator on the item."""
    __tablename__ = "flag_reply"
    id: Optional[int] = Field(default=None, primary_key=True)
    annotation_id: int = Field(foreign_key="annotation.id", unique=True, ondelete="CASCADE")
    lead_id: int = Field(foreign_key="annotator.id")
    text: str = _text()
    created_at: datetime = Field(default_factory=utcnow)


class GoldLabelCode(SQLModel, table=True):
    __tablename__ = "gold_label_code"
    gold_label_id: int = Field(foreign_key="gold_label.id", primary_key=True, ondelete="CASCADE")
    code: str = Field(foreign_key="error_code.code", primary_key=True)


class AnnotatorSession(SQLModel, table=True):
    """A signed-in browser of the labelling app. The cookie holds a random token and this table
    only its SHA-256, so sign-out and deactivation revoke it and a server restart keeps it."""
    __tablename__ = "annotator_session"
    id: Optional[int] = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True, ondelete="CASCADE")
    token_sha256: str = Field(unique=True, index=True)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    revoked_at: Optional[datetime] = None


class SignInThrottle(SQLModel, table=True):
    """Failed password sign-ins per (lower-cased) username, kept for names without an account
    too, so a lockout tells nothing about whether an account exists."""
    __tablename__ = "sign_in_throttle"
    username: str = Field(primary_key=True)
    failures: int = 0
    locked_until: Optional[datetime] = None
    last_failure_at: Optional[datetime] = None


# ---------------------------------------------------------------- metrics

class MetricRun(SQLModel, table=True):
    """One metric configuration; `signature` names everything needed to reproduce its scores."""
    __tablename__ = "metric_run"
    __table_args__ = (
        CheckConstraint(_in("context", CONTEXT_VARIANTS), name="ck_metric_run_context"),
        CheckConstraint(_in("noise", NOISE_KINDS), name="ck_metric_run_noise"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    signature: str = Field(unique=True, index=True)
    metric: str = Field(index=True)
    model: str = ""
    layer: Optional[int] = None
    tokenizer: str = ""
    context: str = "none"
    noise: str = "none"
    seed: Optional[int] = None
    params: dict = _json()
    library_versions: dict = _json()
    created_at: datetime = Field(default_factory=utcnow)


class NoiseSample(SQLModel, table=True):
    """A noise control scored like a prediction: random tokens standing in for a target's comment."""
    __tablename__ = "noise_sample"
    __table_args__ = (
        UniqueConstraint("target_id", "kind", "tokenizer", "seed", name="uq_noise_sample"),
        CheckConstraint(_in("kind", ("uniform", "targeted")), name="ck_noise_kind"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    target_id: int = Field(foreign_key="target.id", index=True, ondelete="CASCADE")
    kind: str
    tokenizer: str
    seed: int
    text: str = _text()


class MetricScore(SQLModel, table=True):
    """One score of one run, for a generation or a noise sample (exactly one of the two)."""
    __tablename__ = "metric_score"
    __table_args__ = (
        UniqueConstraint("run_id", "generation_id", name="uq_score_generation"),
        UniqueConstraint("run_id", "noise_sample_id", name="uq_score_noise"),
        CheckConstraint(
            "(generation_id IS NULL) <> (noise_sample_id IS NULL)", name="ck_score_subject"
        ),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="metric_run.id", index=True, ondelete="CASCADE")
    generation_id: Optional[int] = Field(
        default=None, foreign_key="generation.id", index=True, ondelete="CASCADE"
    )
    noise_sample_id: Optional[int] = Field(
        default=None, foreign_key="noise_sample.id", index=True, ondelete="CASCADE"
    )
    precision: Optional[float] = None
    recall: Optional[float] = None
    f: Optional[float] = None  # the headline score (BLEU, ROUGE-L F, BERTScore F, BARTScore ...)
    error: Optional[str] = None  # why this item has no score; the run goes on
    details: dict = _json()


class MetricClaim(SQLModel, table=True):
    """A shard of a metric run one scorer is working on (`metrics.claims`): scorers of the same
    run at once (other processes, other machines) each take the shards nobody holds. The holder
    renews `expires_at` while it works and deletes the row when the shard is stored; a killed
    scorer's claim expires and another takes the shard over."""
    __tablename__ = "metric_claim"
    run_id: int = Field(foreign_key="metric_run.id", primary_key=True, ondelete="CASCADE")
    shard: str = Field(primary_key=True)  # "FIRST-LAST": the shard's first and last subject id
    owner: str  # host:pid:random of the scorer holding it
    expires_at: float  # seconds since the epoch (time.time() of the holder)


# ---------------------------------------------------------------- judges

class JudgeRun(SQLModel, table=True):
    __tablename__ = "judge_run"
    # strategy: one of JUDGE_STRATEGIES or the name of a prompt template file (judges.templates),
    # so it has no CHECK constraint (migration 0003_judges_strategy dropped it)
    id: Optional[int] = Field(default=None, primary_key=True)
    signature: str = Field(unique=True, index=True)
    model: str = Field(index=True)
    backend: str = "openai"
    strategy: str
    prompt_language: str
    prompt_version: str
    params: dict = _json()  # temperature, seed, max_tokens, order policy, ...
    # None: unknown (imported from a file that kept no token usage), never a false 0
    prompt_tokens: Optional[int] = 0
    completion_tokens: Optional[int] = 0
    cost_usd: Optional[float] = 0.0  # None: a price was unknown, so the cost is unknown
    created_at: datetime = Field(default_factory=utcnow)


class JudgeResponse(SQLModel, table=True):
    """One call to the judge: the raw answer for one target (and one cluster, hierarchical)."""
    __tablename__ = "judge_response"
    __table_args__ = (
        UniqueConstraint("run_id", "target_id", "cluster", name="uq_judge_response"),
        CheckConstraint(_in("status", JUDGE_STATUSES), name="ck_judge_response_status"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="judge_run.id", index=True, ondelete="CASCADE")
    target_id: int = Field(foreign_key="target.id", index=True, ondelete="CASCADE")
    cluster: str = ""  # "" unless the strategy is hierarchical
    order: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    status: str
    raw_response: str = _text()
    repairs: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    error: Optional[str] = None
    prompt_tokens: Optional[int] = 0  # None: unknown (an imported answer without usage)
    completion_tokens: Optional[int] = 0
    latency_s: float = 0.0
    cached: bool = False
    created_at: datetime = Field(default_factory=utcnow)


class JudgeVerdict(SQLModel, table=True):
    """The judge's verdict on one generation (merged over clusters for the hierarchical strategy)."""
    __tablename__ = "judge_verdict"
    __table_args__ = (
        UniqueConstraint("run_id", "generation_id", name="uq_judge_verdict"),
        CheckConstraint(_in("status", JUDGE_STATUSES), name="ck_judge_verdict_status"),
        CheckConstraint(f"accuracy IS NULL OR {ACCURACY_CHECK}", name="ck_judge_accuracy"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="judge_run.id", index=True, ondelete="CASCADE")
    generation_id: int = Field(foreign_key="generation.id", index=True, ondelete="CASCADE")
    status: str
    accuracy: Optional[str] = None
    # [{"code": "SE-HA2", "confidence": 0.8, "justification": "..."}]; codes checked on write
    codes: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    position: Optional[int] = None  # where this prediction stood in the prompt
    created_at: datetime = Field(default_factory=utcnow)


class JudgeBatch(SQLModel, table=True):
    """One submission of a run's requests to an OpenAI-style Batch API (judges.batch): stored
    before the batch is created, so a run killed while it waits collects the same batch again."""
    __tablename__ = "judge_batch"
    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="judge_run.id", index=True, ondelete="CASCADE")
    submission: str = Field(unique=True)  # our id for it, also in the batch's metadata
    batch_id: Optional[str] = Field(default=None, index=True)  # the provider's, once created
    input_file_id: Optional[str] = None
    output_file_id: Optional[str] = None
    error_file_id: Optional[str] = None
    # preparing (nothing created yet), then the provider's (validating, in_progress, finalizing,
    # completed, failed, expired, cancelling, cancelled), then collected (answers stored)
    status: str = "preparing"
    # custom_id -> {"target_id", "cluster", "key"}: which request each line is
    requests: dict = _json()
    counts: dict = _json()  # the provider's request_counts as last seen
    error: Optional[str] = None
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None


# ---------------------------------------------------------------- active labelling plans

PLAN_ESTIMANDS = ("mean_score", "share_correct", "share_partial", "share_incorrect")


class LabelPlan(SQLModel, table=True):
    """A label budget spent where a judge is least reliable (`annotate.plan`, issue 39): each
    generation of the plan's slice that had an ok verdict and no human label was drawn for
    labelling with a known probability (`LabelPlanItem`), so the estimates stay unbiased
    (`agreement.plans`). Never redrawn: a new plan is a new name."""
    __tablename__ = "label_plan"
    __table_args__ = (CheckConstraint(_in("estimand", PLAN_ESTIMANDS), name="ck_plan_estimand"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True, ondelete="CASCADE")
    judge_run_id: int = Field(foreign_key="judge_run.id", index=True, ondelete="CASCADE")
    predictor: str  # the judge's key when the plan was made, as align named it
    estimand: str = "mean_score"
    language: Optional[str] = None  # None: every language of the dataset
    budget: float  # the expected number of labels: the probabilities sum to it
    min_probability: float = 0.05
    seed: int = 0
    method: str = ""  # how the probabilities were made (the pilot's errors, or uniform)
    # which human label counted for the pilot (agreement.labels); the status reads labels so too
    label_policy: str = Field(default="auto", sa_column_kwargs={"server_default": "auto"})
    target_width: Optional[float] = None  # the stop rule's interval width
    compare: dict = _json()  # the stop rule's comparison: {"language", "a", "b"} or {}
    created_at: datetime = Field(default_factory=utcnow)


class LabelPlanItem(SQLModel, table=True):
    """One generation of a plan: a pilot item (labelled when the plan was made: probability 1)
    or a planned one, with the judge's value, its probability and whether it was drawn."""
    __tablename__ = "label_plan_item"
    plan_id: int = Field(foreign_key="label_plan.id", primary_key=True, ondelete="CASCADE")
    generation_id: int = Field(foreign_key="generation.id", primary_key=True, index=True,
                               ondelete="CASCADE")
    pilot: bool = False
    predictor_value: float
    probability: float
    drawn: bool


Index("ix_annotation_annotator_status", Annotation.annotator_id, Annotation.status)
