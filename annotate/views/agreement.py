"""Lead: inter-annotator agreement per language, on the accuracy label and per taxonomy code.
The statistics come from metrics.align.agreement, the project's one implementation."""
from __future__ import annotations

import streamlit as st

from annotate import service, ui
from taxonomy import default_taxonomy

ui.require_lead()
st.header("Inter-annotator agreement")
with ui.db() as session:
    labels = service.finished_labels(session)
codes = [c.id for c in default_taxonomy().labelable()]
reports = service.agreement_by_language(labels, codes)
if not any(r.n_items for r in reports):
    st.info("No item has two finished labels yet: assign with 2 or more annotators per item.")
for report in reports:
    st.subheader(f"{report.language}: {report.n_items} items labelled by two or more")
    if not report.n_items:
        continue
    cols = st.columns(2)
    cols[0].metric("Annotators", len(report.raters))
    if report.alpha is not None:
        cols[1].metric("Krippendorff's alpha (ordinal)", f"{report.alpha:.3f}")
    st.caption("Accuracy label: quadratically weighted Cohen's kappa per pair")
    st.dataframe(report.pairs, hide_index=True, key=f"agree_pairs_{report.language}")
    with st.expander("Per taxonomy code"):
        st.dataframe(report.codes, hide_index=True, key=f"agree_codes_{report.language}")
