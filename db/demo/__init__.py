"""The DEMO dataset shipped with the package (db/demo/demo.jsonl, authored by
db/demo/build_demo.py; invented for trying the platform, not data from the study).

25 targets in en/nl/zh/el/pl x 5 models = 125 generations, every one labelled by "expert",
overlapping subsets labelled by "anna" and "bas", a few gold labels by "lead".
Demo accounts anna, bas and lead sign in with the password "demo" (DEMO ONLY).
"""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

DEMO_JSONL = Path(__file__).with_name("demo.jsonl")
DEMO_DATASET = "demo"
DEMO_USERS = ("anna", "bas", "lead")
DEMO_PASSWORD = "demo"  # DEMO ONLY


def load_demo(url: str | None = None) -> dict[str, int]:
    """Import the demo dataset (one transaction, idempotent); returns row counts per table."""
    from db.engine import session_scope, table_counts
    from db.importer import RecordWriter, import_jsonl
    from db.importer.accounts import ACCOUNTS_TRUSTED

    with session_scope(url) as session:  # the shipped demo file brings its demo accounts
        import_jsonl(session, [DEMO_JSONL],  # and its lead
                     writer=RecordWriter(session, accounts=ACCOUNTS_TRUSTED, privileges=True))
    return table_counts(url)


def ensure_demo_database(url: str | None = None) -> dict[str, int] | None:
    """Load the demo only into a database without generations; returns the counts if it did."""
    from db import models as m
    from db.engine import session_scope

    with session_scope(url) as session:
        if session.execute(select(func.count()).select_from(m.Generation)).scalar_one():
            return None
    return load_demo(url)
