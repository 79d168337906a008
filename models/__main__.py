"""CLI: `python -m models list`, `python -m models prepare [ids...] [--rebuild]` and
`python -m models prepare-vocabs` (`models.vocabs`)."""
from __future__ import annotations

import argparse
import os
import sys
import time

from models.cache import CACHE_ENV, cache_folder, cache_root, is_current_build, materialise
from models.registry import OFFLINE_MODELS, OfflineModel
from nlce.cli import DEBUG_ENV, EXIT_NOTHING_DONE, EXIT_OK, error_line, run_main


def _status(spec: OfflineModel) -> str:
    if is_current_build(cache_folder(spec.model_id), spec):
        return f"ready: {cache_folder(spec.model_id)}"
    missing = spec.missing_modules()
    if missing:
        return f"not installed: {spec.install_hint()}"
    return "installed, not built yet (run: python -m models prepare)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m models",
        description="Model ids that work offline, and their one-time conversion into "
                    f"${CACHE_ENV} (now {cache_root()}).")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="show the offline ids and whether each is ready")
    prep = sub.add_parser("prepare", help="build the offline models now (default: all installed)")
    prep.add_argument("ids", nargs="*", help="model ids (default: every installed one)")
    prep.add_argument("--rebuild", action="store_true", help="rebuild even if already built")
    sub.add_parser("prepare-vocabs", help="keep the target model families' tokenizer "
                   "vocabularies (from the llama-cpp-python sdist on PyPI) for token counts")
    args = parser.parse_args(argv)

    if args.command == "prepare-vocabs":
        from models.vocabs import prepare_vocabs

        for path in prepare_vocabs():
            print(f"ready: {path}")
        return EXIT_OK
    if args.command == "list":
        width = max(len(mid) for mid in OFFLINE_MODELS)
        for mid, spec in OFFLINE_MODELS.items():
            print(f"{mid:<{width}}  {spec.kind:<9}  {_status(spec)}")
        return EXIT_OK

    ids = args.ids or [mid for mid, spec in OFFLINE_MODELS.items() if not spec.missing_modules()]
    failed = 0
    for mid in ids:
        started = time.perf_counter()
        try:
            folder = materialise(mid, rebuild=args.rebuild)
        except Exception as exc:  # noqa: BLE001 - report each model's failure, go on with the others
            if os.environ.get(DEBUG_ENV):
                raise
            print(f"{mid}: FAILED: {error_line(exc)}", file=sys.stderr)
            failed += 1
            continue
        print(f"{mid}: ready at {folder} ({time.perf_counter() - started:.1f} s)")
    skipped = [mid for mid in OFFLINE_MODELS if mid not in ids and not args.ids]
    for mid in skipped:
        print(f"{mid}: skipped, {_status(OFFLINE_MODELS[mid])}")
    return EXIT_NOTHING_DONE if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m models"))
