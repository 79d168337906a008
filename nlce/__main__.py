"""`nlce GROUP [COMMAND] ARGS...`: dispatch to the `python -m` entry points.

A group with several commands (corpus, metrics, judges) also runs as `python -m GROUP COMMAND`
through `group_main`, which lists the group's commands when none is given."""
from __future__ import annotations

import importlib
import sys
from typing import Sequence

from nlce.cli import EXIT_ERROR, EXIT_OK, run_main

# (words after `nlce`) -> (module whose main() runs, prefix arguments, one-line help)
COMMANDS: dict[tuple[str, ...], tuple[str, tuple[str, ...], str]] = {
    ("taxonomy",): ("taxonomy.__main__", (), "show or validate the error taxonomy"),
    ("db",): ("db.__main__", (), "database: demo, import, export, info, upgrade"),
    ("models",): ("models.__main__", (), "offline models: list, prepare"),
    ("corpus", "extract"): ("corpus.extract", (), "source files -> target comments"),
    ("corpus", "generate"): ("corpus.generate", (), "FIM-generate comments for the targets"),
    ("annotate",): ("annotate.__main__", (), "start the labelling app"),
    ("annotate", "plan"): ("annotate.plan", (), "plan labels where a judge is least reliable"),
    ("metrics", "score"): ("metrics.score", (), "score generations with a metric or a grid"),
    ("align",): ("align.__main__", (), "align metrics and judges with the humans"),
    ("metrics", "align"): ("align.__main__", (), "the old name of `nlce align`"),
    ("judges", "run"): ("judges.run", (), "run an LLM judge over targets"),
    ("judges", "report"): ("judges.report", (), "report judge runs against the humans"),
    ("judges", "import"): ("judges.importer", (), "import judge results (study layout, labels)"),
    ("judges", "serve"): ("judges.serve", (), "serve a packaged GGUF judge on this machine"),
    ("judges", "jury"): ("judges.jury", (), "combine judge runs into a jury (majority or median)"),
}
HELP = ("-h", "--help", "help")


def usage(group: str | None = None, prog: str = "nlce") -> str:
    """Every command, or a group's commands."""
    shown = {words: " ".join(words if group is None else words[1:]) for words in COMMANDS
             if group is None or words[0] == group}
    width = max(map(len, shown.values()))
    if group is None:
        lines = ["usage: nlce GROUP [COMMAND] [ARGS...]   (each also runs as python -m "
                 "GROUP[.COMMAND])", "", "commands:"]
    else:
        lines = [f"usage: {prog} COMMAND [ARGS...]   (each also runs as python -m {group}.COMMAND)",
                 "", "commands:"]
    for words, name in shown.items():
        lines.append(f"  {name:<{width}}  {COMMANDS[words][2]}")
    lines.append(f"\n`{prog} {'GROUP [COMMAND]' if group is None else 'COMMAND'} --help` shows a "
                 "command's own options.")
    return "\n".join(lines)


def resolve(argv: Sequence[str]) -> tuple[tuple[str, ...], list[str]] | None:
    """The longest command whose words start argv, and the arguments left for it."""
    for size in (2, 1):
        words = tuple(argv[:size])
        if words in COMMANDS:
            return words, list(argv[size:])
    return None


def main(argv: Sequence[str] | None = None, *, prog: str = "nlce") -> int:
    """`prog` is how the person called it: `nlce`, or `python -m GROUP` for `group_main`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in HELP:
        print(usage())
        return EXIT_OK
    group = argv[0]
    in_group = [" ".join(w) for w in COMMANDS if w[0] == group]
    found = resolve(argv)
    if found is None and in_group and (len(argv) == 1 or argv[1] in HELP):
        wanted_help = len(argv) > 1
        print(usage(group, prog), file=sys.stdout if wanted_help else sys.stderr)
        return EXIT_OK if wanted_help else EXIT_ERROR
    if found is None:
        groups = sorted({words[0] for words in COMMANDS})
        print(f"{prog}: unknown command {' '.join(argv[:2])!r}; "
              + (f"did you mean: {', '.join(in_group)}?" if in_group else f"groups: {', '.join(groups)}"),
              file=sys.stderr)
        return EXIT_ERROR
    words, rest = found
    module_name, prefix, _ = COMMANDS[words]
    module = importlib.import_module(module_name)
    shown = ("python -m " + ".".join(words)) if prog.startswith("python -m") else "nlce " + " ".join(words)
    return run_main(module.main, [*prefix, *rest], prog=shown)


def group_main(group: str, argv: Sequence[str] | None = None) -> int:
    """`python -m GROUP COMMAND ARGS...` for a group of commands: the same as `nlce GROUP ...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return main([group, *argv], prog=f"python -m {group}")


if __name__ == "__main__":
    sys.exit(main())
