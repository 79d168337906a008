"""The test markers, and the pytest plugin that keeps them true (tests/conftest.py loads it).

The quick loop, `pytest -m "not slow and not browser and not postgres and not e2e"`
(`QUICK_LOOP`), must never load a model, launch Chromium or start PostgreSQL, so those markers
are not left to memory. Two rules:

1. By fixture, at collection: a test that uses a fixture of `FIXTURES`, directly or through
   other fixtures, gets that fixture's marker, so a deselected test never sets it up.
   (`any_db_url`'s PostgreSQL case carries the marker on its parameter instead.)
2. At run time (`GUARDED`): starting PostgreSQL, launching Chromium through Playwright, loading
   a real model through `models.loaders` (a million parameters or more), starting the local
   llama.cpp judge server or Ray fails a test that lacks the marker, naming the marker to add.
   This catches what rule 1 cannot see: a direct call in a test, or in a fixture not listed.

Only this process is watched: a command the test runs as a subprocess (a CLI under test) is not,
so a test that runs a model-loading command in a subprocess is marked `slow` by hand.

`e2e` is by hand too: a test whose point is the process (killed mid-write, stopped by a signal,
under a resource limit or a read-only mount, racing a second process) runs real commands and
costs seconds; it keeps an in-process sibling in the quick loop that checks the same message or
logic where one can.
"""
from __future__ import annotations

import functools
import importlib

import pytest

MARKERS = {
    "slow": "loads a real model (packaged e5-small or SmolLM2, the llama.cpp judge server) or "
            "starts a local Ray cluster, or runs a command that does",
    "browser": "drives headless Chromium",
    "postgres": "needs a PostgreSQL server (a throwaway one on loopback, testing/pgtemp.py)",
    "e2e": "runs real commands as processes to inject faults a process meets (a kill -9, a "
           "signal, a full disk or file-size limit, a read-only mount, a second process at "
           "once); seconds each by nature, and its messages are checked in-process too",
}
QUICK_LOOP = " and ".join(f"not {marker}" for marker in MARKERS)

# fixture name -> the marker of every test that uses it (fixtures of tests/ and its packages)
FIXTURES = {
    "postgres_server": "postgres",
    "stopped_postgres_url": "postgres",  # tests/cli/test_database_errors.py
    "guarded_server": "postgres",  # tests/db/test_credentials.py
    "own_postgres": "postgres",  # tests/annotate/test_outage.py
    "chromium": "browser",
    "e5_small_encoder": "slow",
    "smollm2_causal_lm": "slow",
    "smollm2": "slow",  # tests/corpus
    "smollm2_server": "slow",  # tests/judges/test_llama_server.py
    "ray_cluster": "slow",
}

REAL_MODEL = 1_000_000  # parameters: a test's own tiny random model (thousands) is no real one


def _a_real_model(loaded) -> bool:
    model, _tokenizer = loaded
    return sum(p.numel() for p in model.parameters()) >= REAL_MODEL


def _always(_result) -> bool:
    return True


# (module, attribute, marker, what it does, judged after the call by): rule 2's watch list.
# None judges before the call; a load judged after it can see what it loaded, and one that
# failed (a wrong id, a broken file) loaded nothing.
GUARDED = [
    ("testing.pgtemp", "TemporaryPostgres.start", "postgres", "starts a PostgreSQL server", None),
    ("playwright.sync_api._generated", "BrowserType.launch", "browser", "launches Chromium", None),
    ("models.loaders", "_load", "slow", "loads a real model", _a_real_model),
    ("judges.serve", "LocalJudgeServer.start", "slow", "starts the llama.cpp judge server",
     _always),
    ("metrics.parallel", "RayExecutor.start", "slow", "starts or joins a Ray cluster", _always),
]

_running: list = []  # the test whose setup, call or teardown runs now
_GUARDS = pytest.StashKey[list]()


def pytest_configure(config):
    for marker, meaning in MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: {meaning}")
    config.stash[_GUARDS] = install_guards()


def pytest_unconfigure(config):
    remove_guards(config.stash.get(_GUARDS, []))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these markers
def pytest_collection_modifyitems(items):
    mark_by_fixture(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item):
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


def mark_by_fixture(items) -> None:
    """Rule 1: add each test the markers its fixtures call for."""
    for item in items:
        for name in getattr(item, "fixturenames", ()):
            marker = FIXTURES.get(name)
            if marker and item.get_closest_marker(marker) is None:
                item.add_marker(marker)


def check_marked(marker: str, what: str) -> None:
    """Rule 2: fail the running test unless it carries `marker`."""
    item = _running[-1] if _running else None
    if item is not None and item.get_closest_marker(marker) is None:
        pytest.fail(f"{item.nodeid} {what} but is not marked {marker!r}: add "
                    f"@pytest.mark.{marker}, or use a fixture that carries it "
                    f"(testing/markers.py)", pytrace=False)


def _guarded(original, marker: str, what: str, after):
    @functools.wraps(original)
    def guard(*args, **kwargs):
        if after is None:
            check_marked(marker, what)
        result = original(*args, **kwargs)
        if after is not None and after(result):
            check_marked(marker, what)
        return result

    for extra in ("cache_clear", "cache_info"):  # models.loaders._load is an lru_cache
        if hasattr(original, extra):
            setattr(guard, extra, getattr(original, extra))
    return guard


def install_guards() -> list:
    """Rule 2's wrappers in place; returns what `remove_guards` needs to undo them."""
    undo = []
    for module_name, path, marker, what, after in GUARDED:
        try:
            owner = importlib.import_module(module_name)
        except ImportError:  # playwright not installed: no browser to watch
            continue
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        original = getattr(owner, name)
        setattr(owner, name, _guarded(original, marker, what, after))
        undo.append((owner, name, original))
    return undo


def remove_guards(undo: list) -> None:
    for owner, name, original in reversed(undo):
        setattr(owner, name, original)
