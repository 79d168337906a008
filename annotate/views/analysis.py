"""Lead: how the automatic metrics and judges agree with the humans. Everything is computed by
metrics.align (imported lazily: the app works without it) and only shown here."""
from __future__ import annotations

import importlib

import streamlit as st

from agreement.labels import POLICY_HELP
from annotate import ui

POLICY_CHOICES = ["auto", "gold-else-expert", "gold", "expert", "majority", "gold-else-agreed"]

ui.require_lead()
st.header("Metric and judge analysis")
try:
    pipeline = importlib.import_module("metrics.align.pipeline")
    report_module = importlib.import_module("metrics.align.report")
except ImportError as error:
    st.info("The metric analysis (metrics.align) is not available in this installation "
            f"({error}). Run `python -m metrics.align` where it is.")
    st.stop()

c1, c2 = st.columns(2)
bootstrap = c1.number_input("Bootstrap resamples (0: no intervals)", min_value=0, value=0,
                            step=100)
labels = c2.selectbox("Human labels (label policy)", POLICY_CHOICES, index=0, help=POLICY_HELP)
if st.button("Run the alignment", type="primary", key="analysis_run"):
    try:
        with st.spinner("Aligning metric scores and judge verdicts with the human labels ..."):
            options = pipeline.AlignOptions(bootstrap=int(bootstrap), labels=labels)
            st.session_state["analysis_report"] = pipeline.run_alignment(ui.db_url(), options)
    except Exception as error:  # show the analysis' own message; the app keeps running
        st.error(f"metrics.align could not run: {error}")
report = st.session_state.get("analysis_report")
if report is None:
    st.caption("Runs `metrics.align` on this database (the same as `python -m metrics.align`).")
    st.stop()
st.caption(f"Human labels: label policy {report.label_policy}.")
for warning in report.warnings:
    st.warning(warning)
for name, frame in report_module.tables(report).items():
    if frame is None or getattr(frame, "empty", True):
        continue
    st.subheader(name.replace("_", " "))
    st.dataframe(frame, hide_index=True, key=f"analysis_{name}")
