"""Lead: items where annotators disagree, side by side with the code around the comment,
resolved into a stored gold label (with history; the annotators' own labels stay as they were).
Imported expert labels stay out unless the lead asks for them."""
from __future__ import annotations

import streamlit as st

from annotate import service, ui
from annotate.render import code_html, diff_html
from taxonomy import LANGUAGES, default_taxonomy

lead = ui.require_lead()
ui.show_flash()
st.header("Adjudication")
language = st.segmented_control("Language", ["all", *LANGUAGES], default="all",
                                key="adj_lang")
c1, c2 = st.columns(2)
show_resolved = c1.toggle("Show resolved items too", value=False, key="adj_resolved")
with_expert = c2.toggle("Include imported expert labels", value=False, key="adj_expert")
with ui.db() as session:
    labels = service.finished_labels(
        session, acting=lead.id, language=None if language in (None, "all") else language,
        include_expert=with_expert)
    gold = service.gold_labels(session, acting=lead.id)
items = service.find_disagreements(labels, gold, include_resolved=show_resolved)
st.caption(f"{len(items)} items with disagreement")
if not items:
    st.info("No disagreements to resolve.")
    st.stop()
choice = st.selectbox("Item", items, key="adj_item", format_func=lambda d: (
    f"#{d.generation_id} · {d.language} · {d.model} · differ on {' and '.join(d.kinds)}"
    f"{' · resolved' if d.gold else ''}"))
with ui.db() as session:
    view = service.item_for_review(session, choice.generation_id, acting=lead.id)
    history = service.gold_history(session, choice.generation_id, acting=lead.id)
if view is not None:
    st.html(code_html(view.content, view.span_start, view.span_end,
                      programming_language=view.programming_language, path=view.path))
    st.html(diff_html(view.original_comment, view.predicted_comment,
                      original_label="Original comment", predicted_label="Predicted comment"))
cols = st.columns(len(choice.labels))
for col, label in zip(cols, choice.labels):
    with col.container(border=True):
        st.markdown(f"**{ui.plain(label.annotator)}**: {label.accuracy}")
        st.markdown(" ".join(f"`{c}`" for c in label.codes) or "_no codes_")
        if label.note:
            st.text(label.note)  # user text: shown as typed, never as Markdown
taxonomy = default_taxonomy()
codes = [c.id for c in taxonomy.labelable()]
majority, majority_codes = service.majority_label(choice.labels)
start = choice.gold or {"accuracy": majority, "codes": majority_codes}
st.caption("The form starts from the stored gold label, else from the majority of the raters "
           "(accuracy and codes chosen by more than half of them; no accuracy when there is no "
           "majority).")
with st.form(f"gold_{choice.generation_id}"):
    accuracy = st.segmented_control("Gold accuracy", ["correct", "partial", "incorrect"],
                                    default=start.get("accuracy"))
    gold_codes = st.multiselect("Gold codes", codes, default=list(start.get("codes", ())),
                                format_func=lambda c: f"{c} {taxonomy.code(c).text('name', 'en')}")
    note = st.text_input("Note", value=start.get("note", ""))
    if st.form_submit_button("Store gold label", type="primary"):
        try:
            with ui.db() as session:
                service.adjudicate(session, generation_id=choice.generation_id,
                                   adjudicator_id=lead.id, accuracy=accuracy or "",
                                   codes=gold_codes, note=note)
        except service.AnnotateError as error:
            st.error(ui.plain(error))
        else:
            ui.flash("success", f"Gold label stored for #{choice.generation_id}.")
            st.rerun()
if history:
    with st.expander(f"Gold label history of #{choice.generation_id} ({len(history)} "
                     f"versions)"):
        st.dataframe(history, hide_index=True, key="adj_history")
