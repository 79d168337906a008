"""Lead: the study's Tables 1 and 2 from whatever has been labelled, with CSV export."""
from __future__ import annotations

import streamlit as st

from agreement.labels import SUMMARY_POLICY
from annotate import service, ui

lead = ui.require_lead()
st.header("Summary tables")
with ui.db() as session:
    labels = service.finished_labels(session, acting=lead.id)
    gold = service.gold_labels(session, acting=lead.id)
resolved, unresolved = service.resolve_labels(labels, gold)
sources = {s: sum(1 for r in resolved if r.source == s) for s in ("gold", "single", "agreed")}
st.caption(f"Label policy {SUMMARY_POLICY}: {len(resolved)} items counted (gold "
           f"{sources['gold']}, single annotator "
           f"{sources['single']}, annotators agreeing {sources['agreed']}); {len(unresolved)} "
           f"items with disagreeing annotators left out until adjudicated.")

st.subheader("Table 1: errors per code and category")
errors = service.error_table(resolved)
hide_empty = st.toggle("Hide codes nobody used", value=False)
shown = [r for r in errors if r["total"]] if hide_empty else errors
st.dataframe(shown, hide_index=True, key="summary_errors")
st.download_button("Download Table 1 (CSV)", service.rows_to_csv(errors),
                   file_name="errors_per_code.csv", mime="text/csv")

st.subheader("Table 2: accuracy per model and language")
accuracy = service.accuracy_table(resolved)
if accuracy:
    st.dataframe(accuracy, hide_index=True, key="summary_accuracy")
    st.download_button("Download Table 2 (CSV)", service.rows_to_csv(accuracy),
                       file_name="accuracy_per_model.csv", mime="text/csv")
else:
    st.info("No finished labels yet.")
