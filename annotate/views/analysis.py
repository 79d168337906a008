"""Lead: how the automatic metrics and judges agree with the humans. Everything is computed by
`align` (imported lazily: the app works without it) and only shown here."""
from __future__ import annotations

import importlib

import streamlit as st

from agreement.labels import POLICY_HELP
from annotate import ui
from annotate.ui import t

POLICY_CHOICES = ["auto", "gold-else-expert", "gold", "expert", "majority", "gold-else-agreed"]

ui.require_lead()
st.header(t("analysis.header"))
try:
    pipeline = importlib.import_module("align.pipeline")
    report_module = importlib.import_module("align.report")
except ImportError as error:
    st.info(t("analysis.unavailable", error=error))
    st.stop()

c1, c2 = st.columns(2)
bootstrap = c1.number_input(t("analysis.bootstrap"), min_value=0, value=0, step=100)
labels = c2.selectbox(t("analysis.labels"), POLICY_CHOICES, index=0, help=POLICY_HELP)
if st.button(t("analysis.run"), type="primary", key="analysis_run"):
    try:
        with st.spinner(t("analysis.running")):
            options = pipeline.AlignOptions(bootstrap=int(bootstrap), labels=labels)
            st.session_state["analysis_report"] = pipeline.run_alignment(ui.db_url(), options)
    except Exception as error:  # show the analysis' own message; the app keeps running
        st.error(t("analysis.failed", error=error))
report = st.session_state.get("analysis_report")
if report is None:
    st.caption(t("analysis.caption"))
    st.stop()
st.caption(t("analysis.policy", policy=report.label_policy))
for warning in report.warnings:
    st.warning(warning)
for name, frame in report_module.tables(report).items():
    if frame is None or getattr(frame, "empty", True):
        continue
    st.subheader(name.replace("_", " "))
    st.dataframe(frame, hide_index=True, key=f"analysis_{name}")
