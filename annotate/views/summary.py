"""Lead: the study's Tables 1 and 2 from whatever has been labelled, with CSV export, and the
whole database as export.jsonl. Each download is made when clicked (a callable: nothing sits in
Streamlit's media store before) and served to a signed-in lead only (annotate/server.py)."""
from __future__ import annotations

import streamlit as st

from agreement.labels import SUMMARY_POLICY
from annotate import service, ui
from annotate.ui import t
from db import session_scope

lead = ui.require_lead()
st.header(t("nav.summary"))
with ui.db() as session:
    labels = service.finished_labels(session, acting=lead.id)
    gold = service.gold_labels(session, acting=lead.id)
resolved, unresolved = service.resolve_labels(labels, gold)
sources = {s: sum(1 for r in resolved if r.source == s) for s in ("gold", "single", "agreed")}
st.caption(t("summary.counted", policy=SUMMARY_POLICY, counted=len(resolved),
             gold=sources["gold"], single=sources["single"], agreed=sources["agreed"],
             unresolved=len(unresolved)))

st.subheader(t("summary.table1"))
errors = service.error_table(resolved)
hide_empty = st.toggle(t("summary.hide_empty"), value=False)
shown = [r for r in errors if r["total"]] if hide_empty else errors
st.dataframe(shown, hide_index=True, key="summary_errors")
st.download_button(t("summary.download1"), lambda: service.rows_to_csv(errors),
                   file_name="errors_per_code.csv", mime="text/csv", on_click="ignore")

st.subheader(t("summary.table2"))
accuracy = service.accuracy_table(resolved)
if accuracy:
    st.dataframe(accuracy, hide_index=True, key="summary_accuracy")
    st.download_button(t("summary.download2"), lambda: service.rows_to_csv(accuracy),
                       file_name="accuracy_per_model.csv", mime="text/csv", on_click="ignore")
else:
    st.info(t("summary.none"))
quality = service.quality_rows(resolved)
if quality:
    st.subheader(t("summary.quality"))
    st.dataframe(quality, hide_index=True, key="summary_quality")
    st.caption(t("summary.quality_caption"))
    st.download_button(t("summary.download_quality"), lambda: service.rows_to_csv(quality),
                       file_name="quality.csv", mime="text/csv", on_click="ignore")

st.subheader(t("summary.export"))
st.caption(t("summary.export_caption"))


def export() -> str:
    """The database as `python -m db export` writes it, made when the button is clicked (in
    Streamlit's server thread, outside this page's run)."""
    with session_scope(ui.db_url()) as session:
        return service.export_jsonl(session, acting=lead.id)


st.download_button(t("summary.export_download"), export, file_name="export.jsonl",
                   mime="application/jsonl", key="summary_export_download", on_click="ignore")
