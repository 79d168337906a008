"""The scoring runner: one configuration from start to finish (see `metrics` for the path).

`score_configuration` selects the generations (or their noise samples, created on demand),
gets or creates the MetricRun, skips what is stored, scores in chunks (in this process or on an
executor) and stores each chunk in its own transaction: an interrupted run keeps every finished
chunk, and re-running resumes. One bad item gets ``MetricScore.error`` and the run goes on.
Scorers of the same run at the same time split the chunks between them (`metrics.claims`).
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

from metrics import store
from metrics.claims import Claims, wait_message
from metrics.config import ScoringConfig
from metrics.core import ScoringItem, progress_to, score_chunk
from metrics.parallel import score_chunks

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    run_id: int
    signature: str
    selected: int = 0
    skipped: int = 0
    scored: int = 0
    errors: int = 0
    noise_created: int = 0
    noise_failed: int = 0
    error_examples: list = field(default_factory=list)
    unscored: int = 0  # items of chunks whose worker kept failing (--executor); a re-run retries
    elsewhere: int = 0  # scored by another scorer of the same run at the same time
    warnings: list = field(default_factory=list)

    def line(self) -> str:
        extra = f", {self.noise_created} noise samples created" if self.noise_created else ""
        if self.noise_failed:
            extra += f", {self.noise_failed} targets without noise"
        if self.unscored:
            extra += f", {self.unscored} not scored (worker failures; re-run to retry)"
        if self.elsewhere:
            extra += f", {self.elsewhere} scored by another scorer meanwhile"
        return (f"run {self.run_id}: {self.selected} selected, {self.skipped} already stored, "
                f"{self.scored} scored, {self.errors} errors{extra}")

    def example(self, text: str) -> None:
        if len(self.error_examples) < 5:
            self.error_examples.append(text)

    def failure(self) -> Optional[str]:
        """Why this run left nothing usable, naming what to fix; None when it did its job
        (something scored, or everything already stored)."""
        if not self.selected:
            return ("nothing selected: no generation matches --lang/--dataset (or the database "
                    "has none; see `python -m db info`)")
        if self.skipped or self.scored > self.errors or self.unscored or self.elsewhere:
            return None
        if self.noise_failed == self.selected:
            cause = self.error_examples[0] if self.error_examples else "no noise"
            return (f"nothing scored: none of the {self.selected} targets got a noise sample "
                    f"(e.g. {cause})")
        cause = self.error_examples[0] if self.error_examples else "?"
        return f"nothing scored: all {self.scored} items failed (e.g. {cause})"


def progress_bar(total: int, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="item", disable=not enabled or not total,
                file=sys.stderr, dynamic_ncols=True)


def _run_params(config: ScoringConfig) -> dict:
    params = {"device": config.device, "batch_size": config.batch_size}
    params = {k: v for k, v in params.items() if v is not None}
    return {**params, **config.implementation.run_params(config), **store.run_identity(config)}


def _language_warnings(config: ScoringConfig, langs: set[str]) -> list[str]:
    """A warning per valid language outside the study's five that the project's comment
    tokenizer splits (the signature's tok: rule): a standard tokenizer (sacrebleu's 13a, chrF as
    written, a model's own) needs no such check. Invalid codes get a per-item error instead."""
    from metrics.tokenize import UnsupportedLanguageError, check_language
    from taxonomy.languages import APP_LANGUAGES, ENGLISH_NAMES

    out = []
    for lang in sorted(langs):
        try:
            code = check_language(lang)
        except UnsupportedLanguageError:
            continue
        tokenizer = config.implementation.language_tokenizer(config, code)
        if code in APP_LANGUAGES or not tokenizer.startswith("comment-"):
            continue
        out.append(f"language {lang!r} ({ENGLISH_NAMES[code]}) is not one of the study's "
                   f"({', '.join(APP_LANGUAGES)}): scored with {tokenizer}, as the "
                   f"signature's tok: rule says; check that it suits {ENGLISH_NAMES[code]}")
    return out


def _ensure_noise(url, config: ScoringConfig, rows: list[store.Row], summary: RunSummary,
                  progress: bool) -> dict[int, tuple[int, str]]:
    """target id -> (noise sample id, text), creating missing samples (stored per chunk)."""
    from metrics.noise import context_without_comment, make_noise

    metric = config.implementation
    targets = {}
    for row in rows:
        targets.setdefault(row.target_id, row)
    found = store.noise_samples(url, config, targets)
    missing = [t for t in sorted(targets) if t not in found]
    tokenizers: dict = {}  # lexical: one vocabulary per (dataset, language); neural: one

    def tokenizer(row: store.Row):
        key = (row.dataset_id, row.lang) if metric.lexical else None
        if key not in tokenizers:
            tokenizers[key] = metric.noise_tokenizer(
                config, row.lang, lambda: store.dataset_texts(url, row.dataset_id, row.lang))
        return tokenizers[key]

    pools: dict = {}  # (dataset, language) -> pairs references, the pool of pairs targets

    def surrounding(row: store.Row, contents: dict) -> str:
        """What targeted noise draws from: the file without the comment; for a pairs target the
        other references of its dataset and language (its context text may be in another
        language, e.g. a translation's source sentence: noise is drawn in the reference's)."""
        if not row.is_pairs:
            return context_without_comment(contents[row.source_file_id], row.span)
        key = (row.dataset_id, row.lang)
        if key not in pools:
            pools[key] = store.pairs_references(url, row.dataset_id, row.lang)
        return "\n".join(text for t, text in sorted(pools[key].items())
                         if t != row.target_id and text)

    bar = progress_bar(len(missing), f"noise {config.noise}", progress)
    for i in range(0, len(missing), 200):
        chunk = missing[i:i + 200]
        contents = store.file_contents(url, [targets[t].source_file_id for t in chunk
                                             if not targets[t].is_pairs])
        texts = {}
        for t in chunk:
            row = targets[t]
            try:
                texts[t] = make_noise(config.noise, row.reference, tokenizer(row), config.seed,
                                      t, surrounding(row, contents))
            except Exception as exc:  # this target gets no noise; the others go on
                summary.noise_failed += 1
                summary.example(f"target {t}: noise: {exc}")
        created = store.add_noise_samples(url, config, texts)
        found.update(created)
        summary.noise_created += len(created)
        bar.update(len(chunk))
    bar.close()
    if len(found) < len(targets):  # re-read anything created by a concurrent process
        found.update(store.noise_samples(url, config, set(targets) - set(found)))
    return found


def score_configuration(config: ScoringConfig, url: Optional[str] = None, *,
                        progress: bool = True, retry_errors: bool = False,
                        chunk_size: Optional[int] = None, executor=None,
                        retries: int = 2) -> RunSummary:
    """Score the selected generations (or their noise) under ``config`` and store the scores.
    ``executor`` (metrics.parallel) scores the chunks in worker processes or on Ray; the
    scores are still written here, once per chunk."""
    config = config.validated()
    metric = config.implementation
    loaded = metric.prepare(config)  # fail fast on an unknown model, before creating a run
    if getattr(loaded, "backend", config.backend) != config.backend:  # onnx fell back to torch
        config = replace(config, backend=loaded.backend)  # stored under what really runs
    run_id, params = store.get_or_create_run(url, config, lambda: _run_params(config))
    summary = RunSummary(run_id, config.signature())
    rows = store.select_rows(url, config)
    noise = config.noise != "none"
    if noise:  # one noise sample per target: the first generation row stands for its target
        seen, unique = set(), []
        for row in rows:
            if row.target_id not in seen:
                seen.add(row.target_id)
                unique.append(row)
        rows = unique
    if config.limit:
        rows = rows[:config.limit]
    summary.selected = len(rows)
    if not rows:
        return summary
    summary.warnings += _language_warnings(config, {row.lang for row in rows})

    references = store.references(url, config, rows) if metric.needs_references(config) else {}
    setup, new_params = metric.prepare_run(config, references, params)
    if new_params != params:
        store.store_params(url, run_id, new_params)

    noise_of = _ensure_noise(url, config, rows, summary, progress) if noise else {}
    done = store.scored_subjects(url, run_id, noise, retry_errors)

    def subject_of(row: store.Row) -> Optional[int]:
        if not noise:
            return row.generation_id
        return noise_of[row.target_id][0] if row.target_id in noise_of else None

    scorable = [r for r in rows if subject_of(r) is not None]
    summary.skipped = sum(1 for r in scorable if subject_of(r) in done)
    size = chunk_size or max(64, (config.batch_size or 64) * 4)
    # Shards are cut from the whole selection, so every scorer of this run cuts the same ones
    # and claims them one by one (metrics.claims): concurrent scorers split the work.
    shards = [scorable[i:i + size] for i in range(0, len(scorable), size)]

    def make_items(chunk: list[store.Row]) -> list[ScoringItem]:
        contents = store.file_contents(url, [r.source_file_id for r in chunk
                                             if not r.is_pairs]) \
            if config.context == "full" else {}
        return [ScoringItem("noise" if noise else "generation", subject_of(r), r.target_id,
                            noise_of[r.target_id][1] if noise else r.prediction, r.reference,
                            r.lang, contents.get(r.source_file_id), r.span,
                            has_source=not r.is_pairs) for r in chunk]

    def item_chunks(claims: Claims, shards: list, held_elsewhere: list, key_of: dict):
        for key, chunk in _claimed(url, run_id, noise, shards, done, subject_of, claims,
                                   summary, bar, held_elsewhere):
            items = make_items(chunk)
            key_of[items[0].subject_id] = key
            yield items

    bar = progress_bar(len(scorable) - summary.skipped, metric.run_name(config), progress)
    shown = [0]  # items of the chunk being scored that the bar has moved by already

    def moved(items: int) -> None:  # a scorer in this process finished a batch
        shown[0] += items
        bar.update(items)

    said = None  # what the last wait message was about
    with Claims(url, run_id) as claims, progress_to(moved):
        while shards:
            held_elsewhere: list[list[store.Row]] = []
            key_of: dict[int, str] = {}  # first subject id of a chunk -> its shard key
            chunks = item_chunks(claims, shards, held_elsewhere, key_of)
            for items, scores, failure in score_chunks(score_chunk, (config, setup), chunks,
                                                       executor, retries=retries,
                                                       key=f"run{run_id}"):
                bar.update(max(0, len(items) - shown[0]))
                shown[0] = 0
                key = key_of.pop(items[0].subject_id)
                if scores is None:  # nothing stored for these: the next run picks them up
                    claims.release(key)
                    summary.unscored += len(items)
                    summary.error_examples.append(f"{len(items)} items: worker failed: "
                                                  f"{failure.splitlines()[-1]}")
                    continue
                store.insert_scores(url, run_id, items, scores, noise)
                claims.release(key)
                summary.scored += len(items)
                for item, score in zip(items, scores):
                    if score.error:
                        summary.errors += 1
                        summary.example(f"{item.subject} {item.subject_id}: {score.error}")
            if held_elsewhere:  # another scorer holds these now: wait for it (or its lease)
                said = _say_waiting(claims, [_shard_key(s, subject_of) for s in held_elsewhere],
                                    sum(len(s) for s in held_elsewhere), said)
                time.sleep(min(1.0, claims.lease / 4))
            shards = held_elsewhere
    bar.close()
    return summary


def _shard_key(shard: list[store.Row], subject_of) -> str:
    return f"{subject_of(shard[0])}-{subject_of(shard[-1])}"


def _say_waiting(claims: Claims, keys: list[str], items: int, said):
    """Log that this scorer waits, whose claims and how long at most, when that changed (not
    every second); returns what was said about."""
    holders = claims.holders(keys)
    about = (len(keys), frozenset(h.owner for h in holders))
    if about != said and holders:
        log.warning(wait_message(claims.run_id, holders, items))
    return about


def _claimed(url, run_id: int, noise: bool, shards: list[list[store.Row]], done: set[int],
             subject_of, claims: Claims, summary: RunSummary, bar, held_elsewhere: list):
    """(shard key, rows to score) of every shard this scorer claims, in order. A shard that is
    fully stored (by this run before, or by another scorer since) is skipped and counted; one
    another scorer holds goes to `held_elsewhere`, for the next round."""
    for shard in shards:
        pending = [r for r in shard if subject_of(r) not in done]
        if not pending:
            continue
        key = _shard_key(shard, subject_of)
        stored = store.stored_among(url, run_id, noise, [subject_of(r) for r in pending])
        if len(stored) < len(pending) and claims.claim(key):
            # re-read under the claim: another scorer may have finished it a moment ago
            stored = store.stored_among(url, run_id, noise, [subject_of(r) for r in pending])
        elif len(stored) < len(pending):
            held_elsewhere.append(shard)
            continue
        if stored:
            done.update(stored)
            summary.elsewhere += len(stored)
            bar.update(len(stored))
        todo = [r for r in pending if subject_of(r) not in stored]
        if todo:
            yield key, todo
        elif key in claims.held:
            claims.release(key)


def score_grid(configs: Sequence[ScoringConfig], url: Optional[str] = None, *,
               progress: bool = True, retry_errors: bool = False, executor=None,
               retries: int = 2) -> list[RunSummary]:
    """Score several configurations in turn (models stay loaded between them)."""
    return [score_configuration(c, url, progress=progress, retry_errors=retry_errors,
                                executor=executor, retries=retries)
            for c in configs]
