"""Fixtures of the align tests: a small filled database (see align_testkit.py)."""
from __future__ import annotations

import pytest
from align_testkit import fill_align_db

from db import get_engine


@pytest.fixture(scope="module")
def align_db(tmp_path_factory):
    """Filled once per test module; the tests only read it."""
    url = f"sqlite:///{tmp_path_factory.mktemp('align') / 'align.db'}"
    info = fill_align_db(url)
    info["url"] = url
    yield info
    get_engine(url).dispose()
    get_engine.cache_clear()


@pytest.fixture
def chromium():
    """A headless Chromium for the report page's browser test."""
    from testing.browser import chromium_browser

    with chromium_browser() as browser:
        yield browser
