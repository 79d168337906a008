"""Lead: how the automatic metrics and judges agree with the humans, from metrics.align when
that part of the platform is installed (imported lazily; the app works without it)."""
from __future__ import annotations

import importlib

import streamlit as st

from annotate import ui

ui.require_lead()
st.header("Metric and judge analysis")
try:
    views = importlib.import_module("metrics.align.views")
except ImportError as error:
    st.info("The metric analysis views (metrics.align.views) are not available in this "
            f"installation ({error}). Run `python -m metrics.align` for the reports.")
    st.stop()
render = getattr(views, "render", None)
if render is None:
    st.info("metrics.align.views has no render() function; nothing to show here.")
    st.stop()
render(db_url=ui.db_url())
