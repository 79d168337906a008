"""The markers stay true (testing/markers.py): a test that uses a fixture which starts
PostgreSQL, Chromium or a model is marked by that fixture, so the quick loop never sets it up; an
unmarked test that starts one of them anyway fails, naming the marker to add. The checks run
small pytest sessions of their own, in this process, with the plugin."""
from __future__ import annotations

from pathlib import Path

import pytest

from testing.markers import FIXTURES, QUICK_LOOP

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def session(pytester):
    def run(*args):
        return pytester.runpytest("-p", "testing.markers", "--strict-markers",
                                  "-p", "no:cacheprovider", *args)
    return run


def test_a_fixture_marks_every_test_that_uses_it(pytester, session):
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def postgres_server():
            return "a server"

        @pytest.fixture
        def database(postgres_server):  # through another fixture
            return postgres_server

        @pytest.fixture
        def chromium():
            return "a browser"

        @pytest.fixture(scope="session")
        def smollm2():
            return "a model"

        @pytest.fixture
        def markers(request):
            return sorted(m.name for m in request.node.iter_markers())
    """)
    pytester.makepyfile(test_things="""
        def test_plain(markers):
            assert markers == []

        def test_database(database, markers):
            assert markers == ["postgres"]

        def test_browser_and_model(chromium, smollm2, markers):
            assert markers == ["browser", "slow"]

        def test_dynamic(request, markers):
            request.getfixturevalue("chromium")  # rule 1 cannot see this one
            assert markers == []
    """)
    session().assert_outcomes(passed=4)
    quick = session("-m", QUICK_LOOP)
    quick.assert_outcomes(passed=2, deselected=2)
    quick.stdout.no_fnmatch_line("*test_database*")
    assert set(FIXTURES.values()) == {"postgres", "browser", "slow"}


def test_an_unmarked_test_that_starts_postgres_or_chromium_fails_naming_the_marker(
        pytester, session):
    pytester.makepyfile(test_starts="""
        import pytest
        from testing import markers

        def test_postgres():
            from testing.pgtemp import temporary_postgres

            with temporary_postgres():
                pass

        def test_chromium():
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                p.chromium.launch(executable_path="/usr/bin/chromium")

        @pytest.mark.postgres
        def test_marked():
            markers.check_marked("postgres", "starts a PostgreSQL server")
    """)
    result = session("-q")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random([
        "*test_starts.py::test_postgres starts a PostgreSQL server but is not marked 'postgres':"
        " add @pytest.mark.postgres*",
        "*test_starts.py::test_chromium launches Chromium but is not marked 'browser'*"])
    assert "initdb" not in result.stdout.str()  # it failed before making a server


@pytest.mark.slow
def test_an_unmarked_test_that_loads_a_model_fails_after_the_load(pytester, session):
    pytester.makepyfile(test_loads="""
        import pytest
        from models import load_encoder
        from models.errors import ModelUnavailableError

        def test_loads():
            load_encoder("intfloat/multilingual-e5-small", "cpu")

        def test_a_failed_load_is_its_own_error():
            with pytest.raises(ModelUnavailableError):
                load_encoder("no-such-org/no-such-model", "cpu")
    """)
    result = session("-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_loads.py::test_loads loads a real model but is not marked"
                                 " 'slow'*"])


def test_any_db_url_marks_only_its_postgresql_case(any_db_url, request):
    """`-m "not postgres"` keeps the SQLite case and never asks for a server."""
    marked = request.node.get_closest_marker("postgres") is not None
    assert marked == any_db_url.startswith("postgresql")
    assert any_db_url.startswith(("sqlite", "postgresql"))


def test_the_quick_loop_leaves_out_e2e_and_the_full_suite_runs_it(pytester, session):
    """`e2e` (real commands as processes, faults injected) is marked by hand: the quick loop
    leaves it out, `pytest` with no -m runs it, and the README and docs/architecture.md give
    the quick loop as QUICK_LOOP spells it."""
    pytester.makepyfile(test_process="""
        import pytest

        @pytest.mark.e2e
        def test_killed_mid_write():
            assert True

        def test_the_same_message_in_process():
            assert True
    """)
    session().assert_outcomes(passed=2)
    quick = session("-m", QUICK_LOOP)
    quick.assert_outcomes(passed=1, deselected=1)
    quick.stdout.no_fnmatch_line("*test_killed_mid_write*")
    assert QUICK_LOOP == "not slow and not browser and not postgres and not e2e"
    for document in ("README.md", "docs/architecture.md"):
        assert f'-m "{QUICK_LOOP}"' in (ROOT / document).read_text(encoding="utf-8"), document
