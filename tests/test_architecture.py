"""The architecture, checked from the source text (AST only: nothing here imports the project).

- no import cycles between project modules (imports inside functions count: they run too);
- layers import downwards only: taxonomy, models < db < agreement < stages < bench, where the
  stages (corpus, annotate, metrics, judges, align) do not import each other except as listed
  below;
- product packages never import `testing` (test helpers) or `tests`;
- no module over 500 lines, except generated migrations and the files listed below;
- a command with `--db` checks the database it is given (`project_database`, or `read_only_url`
  where it only reads) rather than opening it as it is: a mistyped path is named, never made.

A package that does not exist (yet) is simply absent from the graph.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# nlce (the console script and the shared CLI conventions) imports no project package statically
# (its dispatcher loads commands by name), so every layer may use nlce.cli.
LAYERS = {"nlce": -1, "taxonomy": 0, "models": 0, "db": 1, "agreement": 2,
          "corpus": 3, "annotate": 3, "metrics": 3, "judges": 3, "align": 3, "bench": 4}
STAGES = {"corpus", "annotate", "metrics", "judges", "align"}
PRODUCT = {"nlce", "taxonomy", "db", "models", "agreement", *STAGES}
TEST_ONLY = {"testing", "tests"}
SCANNED = [*LAYERS, *TEST_ONLY, "scripts"]

# Stage -> stage imports that are allowed, importer module -> imported module, each with why.
STAGE_EXCEPTIONS = {
    ("annotate.views.analysis", "align.pipeline"):
        "the app's analysis page runs the metric-human alignment (lazily: works without it)",
    ("annotate.views.analysis", "align.report"):
        "the app's analysis page renders the alignment report (lazily: works without it)",
    ("align.demo", "metrics.config"): "`python -m align --demo` scores the demo database first",
    ("align.demo", "metrics.runner"): "`python -m align --demo` scores the demo database first",
    ("metrics.align", "align.__main__"): "`python -m metrics.align`, the old name, runs align",
}

MAX_LINES = 500
# Modules allowed over MAX_LINES for now (empty: every module is within the limit).
TOO_LONG_FOR_NOW: set[str] = set()
GENERATED = ("db/migrations/versions/",)  # Alembic revisions


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source_files() -> dict[str, Path]:
    files = {}
    for top in SCANNED:
        if (ROOT / top).is_dir():
            for path in sorted((ROOT / top).rglob("*.py")):
                files[_module_name(path)] = path
    return files


class _Imports(ast.NodeVisitor):
    """Every module named by an import statement or `importlib.import_module("literal")`,
    anywhere in the file; `if TYPE_CHECKING` blocks (those never run) only with `type_only`."""

    def __init__(self, module: str, is_package: bool, type_only: bool = False):
        self.package = module if is_package else module.rpartition(".")[0]
        self.type_only = type_only
        self.found: list[tuple[str, tuple[str, ...]]] = []  # (module, names imported from it)

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if name == "TYPE_CHECKING" and not self.type_only:
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.extend((alias.name, ()) for alias in node.names)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name == "import_module" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            self.found.append((node.args[0].value, ()))
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            anchor = self.package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        self.found.append((base, tuple(alias.name for alias in node.names)))


def _import_graph(type_only: bool = False) -> dict[str, set[str]]:
    """Project module -> the project modules it imports (a `from pkg import name` counts as an
    import of `pkg.name` when that is a module, else of `pkg`); with `type_only`, also the
    imports under `if TYPE_CHECKING`."""
    files = _source_files()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in files.items():
        visitor = _Imports(module, path.name == "__init__.py", type_only)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        for target, names in visitor.found:
            if target.split(".")[0] not in SCANNED:
                continue  # the standard library or a third-party package
            for name in names or (None,):
                submodule = f"{target}.{name}"
                graph[module].add(submodule if name and submodule in files else target)
        graph[module].discard(module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return _import_graph()


def _edges(graph, *, between=lambda a, b: True):
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if between(a.split(".")[0], b.split(".")[0]))


def test_the_graph_sees_the_project(graph):
    """Guards the checks below against passing on an empty or misread graph."""
    assert "taxonomy.loader" in graph["taxonomy"]
    assert "models" in graph["metrics.bertscore"]
    assert "db.engine" in graph["db.__main__"]


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_imports_name_existing_modules(graph):
    files = _source_files()
    missing = [(a, b) for a, b in _edges(graph) if b not in files]
    assert not missing, f"imports of project modules that do not exist: {missing}"


def test_no_import_cycles(graph):
    cycles = _cycles(graph)
    assert not cycles, "import cycles (move one name to break each): " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_no_import_cycles_through_type_only_imports():
    """A loop that only type hints close (`if TYPE_CHECKING:`) is still a loop in the design."""
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import b\n"
    seen = _Imports("a", False, type_only=True)
    seen.visit(ast.parse(source))
    assert ("b", ()) in seen.found
    cycles = _cycles(_import_graph(type_only=True))
    assert not cycles, "import cycles through type-only imports: " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_layers_import_downwards_only(graph):
    upwards = _edges(graph, between=lambda a, b: a in LAYERS and b in LAYERS
                     and LAYERS[a] < LAYERS[b])
    assert not upwards, f"imports from a lower layer into a higher one: {upwards}"


def test_stages_do_not_import_each_other(graph):
    across = _edges(graph, between=lambda a, b: a in STAGES and b in STAGES and a != b)
    unexplained = [edge for edge in across if edge not in STAGE_EXCEPTIONS]
    assert not unexplained, (f"stage-to-stage imports (go through db/models/agreement, or add an "
                             f"entry with its reason to STAGE_EXCEPTIONS): {unexplained}")


def test_stage_exceptions_are_still_needed(graph):
    stale = [edge for edge in STAGE_EXCEPTIONS if edge[1] not in graph.get(edge[0], ())]
    assert not stale, f"STAGE_EXCEPTIONS entries no import needs any more: {stale}"


def test_product_never_imports_test_helpers(graph):
    leaks = _edges(graph, between=lambda a, b: a in PRODUCT and b in TEST_ONLY)
    assert not leaks, f"product code importing testing/ or tests/: {leaks}"
    upwards = _edges(graph, between=lambda a, b: a == "testing" and b in {"tests", "bench"})
    assert not upwards, f"testing/ importing tests or benchmarks: {upwards}"


def test_no_module_over_500_lines():
    too_long = {}
    for path in _source_files().values():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(GENERATED) or relative in TOO_LONG_FOR_NOW:
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            too_long[relative] = lines
    assert not too_long, f"modules over {MAX_LINES} lines (split them by role): {too_long}"


def test_too_long_list_is_current():
    """An entry leaves TOO_LONG_FOR_NOW once its file is split (or gone)."""
    fine = [name for name in TOO_LONG_FOR_NOW if not (ROOT / name).is_file()
            or len((ROOT / name).read_text(encoding="utf-8").splitlines()) <= MAX_LINES]
    assert not fine, f"no longer too long, remove from TOO_LONG_FOR_NOW: {fine}"


def test_nothing_imports_the_deprecated_metrics_hub(graph):
    """`metrics.hub` only keeps `python -m metrics.hub` alive; code imports `models`."""
    importers = sorted(a for a, targets in graph.items() if "metrics.hub" in targets)
    assert not importers, f"import from `models` instead of `metrics.hub`: {importers}"


def _called(tree: ast.AST) -> set[str]:
    """The names of the functions a module calls (`f(...)` or `x.f(...)`)."""
    return {node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))}


def test_commands_with_a_database_flag_check_the_database():
    """`db.engine.add_database_argument` gives a command `--db`; opening that URL as it is
    (`resolve_url` then a session) migrates whatever is there and makes a missing file, so
    the module also calls `project_database` (works on an existing project database, or makes
    one where it is a command that makes databases) or `read_only_url` (only reads)."""
    checks = {"project_database", "read_only_url"}
    commands, unchecked = [], []
    for module, path in _source_files().items():
        called = _called(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if "add_database_argument" in called:
            commands.append(module)
            if not called & checks:
                unchecked.append(module)
    assert {"annotate.plan", "db.__main__", "align.__main__"} <= set(commands), commands
    assert not unchecked, (f"commands with --db that never check it (call "
                           f"db.engine.project_database, or read_only_url to only read): "
                           f"{unchecked}")
