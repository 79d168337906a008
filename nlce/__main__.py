"""`nlce GROUP [COMMAND] ARGS...`: dispatch to the `python -m` entry points."""
from __future__ import annotations

import importlib
import sys
from typing import Sequence

from nlce.cli import EXIT_ERROR, run_main

# (words after `nlce`) -> (module whose main() runs, prefix arguments, one-line help)
COMMANDS: dict[tuple[str, ...], tuple[str, tuple[str, ...], str]] = {
    ("taxonomy",): ("taxonomy.__main__", (), "show or validate the error taxonomy"),
    ("db",): ("db.__main__", (), "database: demo, import, export, info, upgrade"),
    ("models",): ("models.__main__", (), "offline models: list, prepare"),
    ("corpus", "extract"): ("corpus.extract", (), "source files -> target comments"),
    ("corpus", "generate"): ("corpus.generate", (), "FIM-generate comments for the targets"),
    ("annotate",): ("annotate.__main__", (), "start the labelling app"),
    ("metrics", "score"): ("metrics.score", (), "score generations with a metric or a grid"),
    ("align",): ("align.__main__", (), "align metrics and judges with the humans"),
    ("metrics", "align"): ("align.__main__", (), "the old name of `nlce align`"),
    ("judges", "run"): ("judges.run", (), "run an LLM judge over targets"),
    ("judges", "report"): ("judges.report", (), "report judge runs against the humans"),
    ("judges", "import"): ("judges.importer", (), "import judge results (the study's layout)"),
}


def usage() -> str:
    width = max(len(" ".join(words)) for words in COMMANDS)
    lines = ["usage: nlce GROUP [COMMAND] [ARGS...]   (each also runs as python -m GROUP[.COMMAND])",
             "", "commands:"]
    for words, (_, _, help_text) in COMMANDS.items():
        lines.append(f"  {' '.join(words):<{width}}  {help_text}")
    lines.append("\n`nlce GROUP [COMMAND] --help` shows a command's own options.")
    return "\n".join(lines)


def resolve(argv: Sequence[str]) -> tuple[tuple[str, ...], list[str]] | None:
    """The longest command whose words start argv, and the arguments left for it."""
    for size in (2, 1):
        words = tuple(argv[:size])
        if words in COMMANDS:
            return words, list(argv[size:])
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    found = resolve(argv)
    if found is None:
        groups = sorted({words[0] for words in COMMANDS})
        hint = [" ".join(w) for w in COMMANDS if w[0] == argv[0]]
        print(f"nlce: unknown command {' '.join(argv[:2])!r}; "
              + (f"did you mean: {', '.join(hint)}?" if hint else f"groups: {', '.join(groups)}"),
              file=sys.stderr)
        return EXIT_ERROR
    words, rest = found
    module_name, prefix, _ = COMMANDS[words]
    module = importlib.import_module(module_name)
    return run_main(module.main, [*prefix, *rest], prog="nlce " + " ".join(words))


if __name__ == "__main__":
    sys.exit(main())
