"""Fixtures of the db tests (data builders live in db_testkit.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from db_testkit import small_records, write_jsonl


@pytest.fixture
def small_jsonl(tmp_path) -> Path:
    return write_jsonl(tmp_path / "small.jsonl", small_records())
