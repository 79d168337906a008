"""Run an LLM judge over the targets of one language.

    python -m judges.run --model MODEL --strategy standard|cot|rubric|hierarchical --lang el
        [--prompt-lang en] [--layout auto|code|pairs]
        [--template FILE] [--limit N] [--order fixed|shuffle|rotate] [--concurrency N]
        [--backend openai|local] [--base-url URL] [--structured auto|on|off]
        [--redo parse_error ...] [--db URL] ...
        [--repeats K [--temperatures T ...] [--vary-order]] [--code-mix CMD ... [--code-mix-seed S]]
        [--batch [--poll-interval S] [--no-wait]]

The targets may be in any language the database holds (`--lang de`); the prompt is written in
one of the five prompt languages: the targets' own where it is one, else English (said on the
first line; `--prompt-lang` chooses), and names the targets' language. A pairs target (a
reference and predictions, no code) gets the pairs layout's prompt, a comment in a file the
code-comment prompt with its <FIM_MASK> (`--layout` forces one for all).

The endpoint is any OpenAI-compatible chat-completions server: --base-url or $OPENAI_BASE_URL;
the key comes from $OPENAI_API_KEY or a secrets file (--secrets-file / $NLCE_SECRETS_FILE), never
from a flag. `--backend local` runs a Hugging Face causal LM in this process instead. Answers are
cached (--cache, keyed on the endpoint too), finished targets are skipped, so an interrupted run
is resumed by running the same command again; `--redo STATUS` asks again (past the cache) for
targets with a response of that status. A server on this machine (localhost, 127.x: llama.cpp,
llama-cpp-python, vLLM, Ollama) gets one request at a time and a 600 s timeout unless
--concurrency/--timeout say otherwise. An endpoint that is down, refuses the key or keeps
failing stops the run with one line on stderr; the exit status is 1 then, and when no request
of this invocation was answered ok.

`--batch` sends the same requests through the endpoint's Batch API (judges.batch: /v1/files,
/v1/batches; half the price, no rate limits), waits for the batch (`--poll-interval`) and stores
its answers; stopped while it waits (or `--no-wait`), the same command collects that batch.

Studies of how much a verdict depends on the run (judges.report shows them):
`--repeats K` makes K runs of the same configuration, seed + 0..K-1 (and, with --temperatures,
their temperatures in turn; with --vary-order, the prediction order shuffled with order seed +
0..K-1), each recorded as its own run with params.repeat = {group, index, of}. `--code-mix CMD ...`
judges with prompts whose wording is code-mixed (judges.codemix: CMD = share of switchable
segments in English), one run per CMD, recorded in params.code_mix.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

from db.engine import add_database_argument, project_database
from db.models import JUDGE_STATUSES, JUDGE_STRATEGIES
from judges.api_key import read_api_key
from judges.batch import run_batch
from judges.cache import ResponseCache
from judges.client import (
    CACHE_ENV,
    DEFAULT_CACHE,
    STRUCTURED_MODES,
    JudgeClient,
    OpenAIBackend,
    SamplingParams,
    is_loopback,
)
from judges.codemix import code_mixed_template
from judges.i18n import PROMPT_LANGUAGES
from judges.local_backend import LocalBackend
from judges.order import ORDER_POLICIES
from judges.pricing import load_prices
from judges.prompts import LAYOUTS
from judges.runner import RunConfig, iter_summary_lines, run_judge, run_signature
from judges.templates import load_template
from nlce.cli import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_NOTHING_DONE, EXIT_OK, InputError, run_main
from taxonomy import default_taxonomy
from taxonomy.languages import ENGLISH_NAMES, normalise_language


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m judges.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="model id at the endpoint, or a HF id/folder "
                   "for --backend local")
    p.add_argument("--strategy", choices=JUDGE_STRATEGIES,
                   help="a built-in strategy (or give --template)")
    p.add_argument("--template", metavar="FILE",
                   help="a prompt variant file (YAML: name, base strategy, texts per language); "
                        "see judges/templates.py")
    p.add_argument("--lang", required=True, metavar="LANG",
                   help="language of the targets: any ISO 639 code the database holds (de, es, "
                        "...); also the prompt's where it is one of "
                        f"{', '.join(PROMPT_LANGUAGES)}, unless --prompt-lang")
    p.add_argument("--prompt-lang", choices=PROMPT_LANGUAGES,
                   help="write the prompt in another language than the targets' (default: "
                        "theirs where there is a prompt in it, else en)")
    p.add_argument("--layout", choices=("auto", *LAYOUTS), default="auto",
                   help="the prompt's layout: auto (default) shows a comment in its file around "
                        "<FIM_MASK> and a pairs target as a reference and predictions; code or "
                        "pairs for every target")
    p.add_argument("--backend", choices=("openai", "local"), default="openai")
    p.add_argument("--base-url", help=f"OpenAI-compatible endpoint (default ${'OPENAI_BASE_URL'})")
    p.add_argument("--secrets-file", help="file holding OPENAI_API_KEY=... (if not in the env)")
    p.add_argument("--dataset", help="only targets of this dataset")
    p.add_argument("--limit", type=int, help="only the first N targets (by id)")
    p.add_argument("--order", choices=ORDER_POLICIES, default="fixed",
                   help="order of the predictions in the prompt (position-bias control)")
    p.add_argument("--order-seed", type=int, default=42)
    p.add_argument("--concurrency", type=int, default=None,
                   help="targets judged at the same time (default 4; 1 for a server on this "
                        "machine)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--max-tokens", type=int, default=None,
                   help=f"output tokens per answer (default {ENDPOINT_MAX_TOKENS:,}, the study's; "
                        f"{LOCAL_MAX_TOKENS:,} with --backend local, which generates on this "
                        f"machine)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per request (default 120; 600 for a server on this machine)")
    p.add_argument("--max-retries", type=int, default=5)
    p.add_argument("--context-tokens", type=int, metavar="N",
                   help="the model's context window (default: as a server on this machine "
                        "lists it, as judges.serve's does): a prompt that does not fit is not "
                        "sent and its target not stored; the run says how many and the ways out "
                        "in one line. The endpoint must count tokens (llama-cpp-python's, as "
                        "judges.serve starts it)")
    p.add_argument("--structured", choices=STRUCTURED_MODES, default="auto",
                   help="JSON-schema structured output: auto falls back to plain JSON when the "
                        "endpoint rejects it")
    p.add_argument("--context-chars", type=int, default=4000,
                   help="characters of code on each side of the mask (0: whole file)")
    p.add_argument("--hierarchical-accuracy", choices=("worst", "semantic"), default="worst",
                   help="merged accuracy of the 7 cluster answers: the worst label (default) or "
                        "the semantic_accuracy cluster's")
    p.add_argument("--cache", default=None,
                   help=f"response cache file (default ${CACHE_ENV} or ./{DEFAULT_CACHE})")
    p.add_argument("--no-cache", action="store_true", help="ask the endpoint even for known requests")
    p.add_argument("--redo", nargs="+", default=(), metavar="STATUS",
                   choices=[s for s in JUDGE_STATUSES if s != "ok"],
                   help="ask again (past the cache) for targets with a response of these "
                        "statuses, e.g. parse_error truncated")
    p.add_argument("--repeats", type=int, default=1, metavar="K",
                   help="judge K times, seed + 0..K-1 (stability: U@K, I@K, flip rate)")
    p.add_argument("--temperatures", type=float, nargs="+", metavar="T",
                   help="with --repeats: the repeats' temperatures in turn (default --temperature)")
    p.add_argument("--vary-order", action="store_true",
                   help="with --repeats: shuffle the predictions with order seed + 0..K-1")
    p.add_argument("--code-mix", type=float, nargs="+", metavar="CMD",
                   help="code-mixed prompts: one run per degree in [0, 1] (share of the prompt's "
                        "switchable segments kept in English), e.g. 0 0.3 0.6 0.9 1")
    p.add_argument("--code-mix-seed", type=int, default=0,
                   help="which segments are switched (deterministic per seed)")
    p.add_argument("--batch", action="store_true",
                   help="send the requests through the endpoint's Batch API (/v1/files, "
                        "/v1/batches: OpenAI's half price, no rate limits), wait for the batch "
                        "and store its answers; a run stopped while it waits resumes the batch")
    p.add_argument("--poll-interval", type=float, default=None, metavar="SECONDS",
                   help="with --batch: seconds between polls (default 60; 2 for a server on "
                        "this machine)")
    p.add_argument("--no-wait", action="store_true",
                   help="with --batch: submit and exit; the same command later collects it")
    p.add_argument("--prices", help="price table (YAML) instead of judges/prices.yaml")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_database_argument(p)
    return p


def study_configs(base: RunConfig, repeats: int = 1, temperatures=None, vary_order: bool = False,
                  code_mix=None, code_mix_seed: int = 0) -> list[RunConfig]:
    """The runs one invocation makes: per code-mixing degree (or the plain prompt), K repeats."""
    configs = []
    for cmd in (code_mix if code_mix else (None,)):
        config, study = base, {}
        if cmd is not None:
            template = code_mixed_template(base.strategy, base.prompt_lang, cmd, code_mix_seed)
            config = replace(base, template=template, strategy=template.name)
            study["code_mix"] = {"cmd": cmd, "seed": code_mix_seed, "base": base.strategy}
        group = run_signature(replace(config, study=study or None), "repeat-group").rsplit("|", 1)[-1]
        for i in range(repeats):
            sampling = replace(base.sampling, seed=base.sampling.seed + i, temperature=(
                temperatures[i % len(temperatures)] if temperatures else base.sampling.temperature))
            order, order_seed = base.order, base.order_seed
            if vary_order:
                order, order_seed = (order if order != "fixed" else "shuffle"), order_seed + i
            run_study = dict(study)
            if repeats > 1:
                run_study["repeat"] = {"group": group, "index": i, "of": repeats}
            configs.append(replace(config, sampling=sampling, order=order, order_seed=order_seed,
                                   study=run_study or None))
    return configs


def prompt_language(lang: str, prompt_lang: str | None) -> tuple[str, str | None]:
    """(the prompt language, the line that says it was chosen for the person, if it was): the
    targets' language where there is a prompt in it, else English."""
    if prompt_lang is not None or lang in PROMPT_LANGUAGES:
        return prompt_lang or lang, None
    return "en", (f"prompt language: en (there is no prompt in {lang}, "
                  f"{ENGLISH_NAMES.get(lang, lang)}; --prompt-lang chooses one of "
                  f"{', '.join(PROMPT_LANGUAGES)})")


ENDPOINT_MAX_TOKENS = 10_000  # the study's: a reasoning model may think at length
# --backend local generates in this process, on the CPU as a rule (~1 s a token for SmolLM2 on
# two shared cores): an answer for five predictions takes 150-700 tokens (bench/README.md)
LOCAL_MAX_TOKENS = 1_024


def sampling_params(args: argparse.Namespace) -> SamplingParams:
    default = LOCAL_MAX_TOKENS if args.backend == "local" else ENDPOINT_MAX_TOKENS
    if args.max_tokens is not None and args.max_tokens < 1:
        raise InputError("--max-tokens must be at least 1")
    return SamplingParams(args.temperature, args.seed, args.max_tokens or default)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.lang = normalise_language(args.lang)
    args.prompt_lang, chosen = prompt_language(args.lang, args.prompt_lang)
    if args.repeats < 1:
        raise InputError("--repeats must be at least 1")
    if args.code_mix and (args.template or args.prompt_lang == "en"):
        raise InputError("--code-mix mixes English into a built-in --strategy's prompt in another "
                         "language: give --strategy and a non-English --lang/--prompt-lang")
    if any(not 0 <= c <= 1 for c in args.code_mix or ()):
        raise InputError("--code-mix degrees must lie between 0 and 1")
    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be at least 1")
    if (args.strategy is None) == (args.template is None):
        raise InputError("give one of --strategy or --template")
    if args.batch and args.backend == "local":
        raise InputError("--batch sends the requests to an endpoint's Batch API: not with "
                         "--backend local")
    if (args.no_wait or args.poll_interval is not None) and not args.batch:
        raise InputError("--no-wait and --poll-interval go with --batch")
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    local_server = args.backend == "openai" and is_loopback(base_url)
    concurrency = args.concurrency or (1 if local_server else 4)
    template = load_template(args.template) if args.template else None
    prices = load_prices(args.prices)
    sampling = sampling_params(args)
    args.db = project_database(args.db)  # an existing project database, before any model
    if args.backend == "local":
        backend = LocalBackend(args.model, sampling)
    else:
        backend = OpenAIBackend(args.model, sampling, base_url=base_url,
                                api_key=read_api_key(args.secrets_file),
                                timeout_s=args.timeout or (600.0 if local_server else 120.0),
                                max_retries=args.max_retries,
                                context_tokens=args.context_tokens)
    cache = None if args.no_cache else ResponseCache(
        args.cache or os.environ.get(CACHE_ENV) or DEFAULT_CACHE)
    client = JudgeClient(backend, cache, args.structured)
    config = RunConfig(model=args.model, strategy=template.name if template else args.strategy,
                       template=template, lang=args.lang,
                       prompt_lang=args.prompt_lang, backend=args.backend, layout=args.layout,
                       sampling=sampling, order=args.order, order_seed=args.order_seed,
                       context_chars=args.context_chars or None,
                       accuracy_policy=args.hierarchical_accuracy, structured=args.structured)
    config = replace(config, endpoint=client.endpoint)  # repeat groups are per endpoint too
    configs = study_configs(config, args.repeats, args.temperatures, args.vary_order,
                            args.code_mix, args.code_mix_seed)
    if chosen:
        print(chosen)
    summaries = []
    try:
        for config in configs:
            client.backend.params = config.sampling  # the backend samples with this run's seed
            if len(configs) > 1:
                print(f"== {config.strategy}  seed {config.sampling.seed}  temperature "
                      f"{config.sampling.temperature:g}  order {config.order}")
            if args.batch:
                summary = run_batch(client, config, default_taxonomy(), args.db,
                                    dataset=args.dataset, limit=args.limit, prices=prices,
                                    progress=not args.quiet, redo=args.redo,
                                    poll_s=args.poll_interval or (2.0 if local_server else 60.0),
                                    wait_for_it=not args.no_wait)
            else:
                summary = run_judge(client, config, default_taxonomy(), args.db,
                                    dataset=args.dataset, limit=args.limit,
                                    concurrency=concurrency, prices=prices,
                                    progress=not args.quiet, redo=args.redo)
            summaries.append(summary)
            if summary.stopped:
                break
            for line in iter_summary_lines(summary):
                print(line)
    except KeyboardInterrupt:
        print("interrupted: the submitted batch is stored; run the same command to collect it "
              "(nothing is sent again)" if args.batch else
              "interrupted: finished targets are stored; run the same command to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if cache is not None:
            cache.close()
    for summary in summaries:
        if summary.stopped:
            for line in iter_summary_lines(summary):
                print(line)
            print(f"error: stopped: {summary.stopped}", file=sys.stderr)
        elif summary.none_fit:  # nothing could be sent
            print(f"error: {summary.ways_out}", file=sys.stderr)
        elif summary.failed:
            print(f"error: run {summary.run_id}: none of the {summary.calls} requests was "
                  f"answered ok{summary.most_often()}; see `python -m judges.report`",
                  file=sys.stderr)
    if any(s.none_fit and not s.stopped for s in summaries):
        return EXIT_ERROR  # a configuration whose prompts cannot be sent
    return EXIT_NOTHING_DONE if any(s.failed for s in summaries) else EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m judges.run"))
