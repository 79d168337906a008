"""When the database cannot be reached or written (PostgreSQL stopped, SQLite locked by an
import, a full disk): the annotator's label stays in the page, one line says so, and the app
retries on its own until the database is back, then stores the label.

The label page keeps the unsaved label under PENDING_KEY (`views/label.py` writes and flushes
it); this module says the one line and schedules the retries."""
from __future__ import annotations

import time

import streamlit as st
from sqlalchemy import text

from db import get_engine, resolve_url
from nlce.cli import is_database_unavailable

PENDING_KEY = "lbl_pending"  # the label a save could not store yet (dict of save_label kwargs)
KEPT_AT_KEY = "lbl_pending_at"
RETRY_EVERY_S = 3.0
KEPT_MESSAGE = "Database unavailable, your label is kept, retrying."  # msg.db_kept in English
WAITING_MESSAGE = "Database unavailable, retrying."  # msg.db_waiting in English

__all__ = ["PENDING_KEY", "is_database_unavailable", "keep", "pending", "retry_due", "forget",
           "wait_for_database"]


def keep(save_kwargs: dict) -> None:
    """Hold the newest label of the page until it can be stored (a later change replaces it:
    each save is the whole label)."""
    st.session_state[PENDING_KEY] = dict(save_kwargs)
    st.session_state[KEPT_AT_KEY] = time.time()


def pending() -> dict | None:
    return st.session_state.get(PENDING_KEY)


def retry_due() -> bool:
    """Whether the kept label may be tried again now (not in the run that just failed)."""
    return time.time() - st.session_state.get(KEPT_AT_KEY, 0.0) >= RETRY_EVERY_S


def forget() -> None:
    st.session_state.pop(PENDING_KEY, None)
    st.session_state.pop(KEPT_AT_KEY, None)


def _database_answers() -> bool:
    try:
        with get_engine(resolve_url(None)).connect() as connection:
            connection.execute(text("SELECT 1"))
        return True
    except Exception as error:  # noqa: BLE001 - anything but an outage is for the page to show
        if is_database_unavailable(error):
            return False
        raise


def wait_for_database() -> None:
    """Say the one line and rerun the whole page once the database answers again (every
    RETRY_EVERY_S seconds), where the label page stores the kept label first."""
    from annotate.ui import t  # the interface language's line (en: KEPT_MESSAGE / WAITING_MESSAGE)

    st.warning(t("msg.db_kept") if pending() else t("msg.db_waiting"), icon="⏳")

    @st.fragment(run_every=RETRY_EVERY_S)
    def retry() -> None:
        if _database_answers():
            st.rerun(scope="app")

    retry()
