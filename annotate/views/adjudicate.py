"""Lead: items where annotators disagree, side by side with the code around the comment,
resolved into a stored gold label (with history; the annotators' own labels stay as they were).
Imported expert labels stay out unless the lead asks for them."""
from __future__ import annotations

import streamlit as st

from annotate import service, ui
from annotate.render import item_html
from annotate.ui import t
from taxonomy import LANGUAGES, default_taxonomy

lead = ui.require_lead()
ui.show_flash()
st.header(t("adj.header"))
language_names = {"all": t("adj.all"), **{lang: lang for lang in LANGUAGES}}
language = st.segmented_control(t("adj.language"), list(language_names), default="all",
                                key="adj_lang", format_func=language_names.get)
c1, c2 = st.columns(2)
show_resolved = c1.toggle(t("adj.resolved_too"), value=False, key="adj_resolved")
with_expert = c2.toggle(t("adj.expert"), value=False, key="adj_expert")
with ui.db() as session:
    labels = service.finished_labels(
        session, acting=lead.id, language=None if language in (None, "all") else language,
        include_expert=with_expert)
    gold = service.gold_labels(session, acting=lead.id)
kept = st.session_state.setdefault("adj_kept", set())  # resolved here: stays in the list
items = [d for d in service.find_disagreements(labels, gold, include_resolved=True)
         if show_resolved or d.gold is None or d.generation_id in kept]
st.caption(t("adj.count", count=len(items)))
if not items:
    st.info(t("adj.none"))
    st.stop()
kinds = {kind: t(f"adj.kind_{kind}") for kind in ("accuracy", "codes")}
titles = {d.generation_id: (
    f"#{d.generation_id} · {d.language} · {d.model} · "
    f"{t('adj.differ_on', kinds=(' ' + t('adj.and') + ' ').join(kinds[k] for k in d.kinds))}"
    f"{' · ' + t('adj.resolved') if d.gold else ''}") for d in items}
by_id = {d.generation_id: d for d in items}
chosen = st.selectbox(t("adj.item"), list(by_id), key="adj_item", format_func=titles.get)
choice = by_id[chosen]  # by item id: a stored gold label never moves the choice on
with ui.db() as session:
    view = service.item_for_review(session, choice.generation_id, acting=lead.id)
    history = service.gold_history(session, choice.generation_id, acting=lead.id)
if view is not None:
    st.html(item_html(view, ui.item_words()))
taxonomy = default_taxonomy()
lang = ui.interface_language()
cols = st.columns(len(choice.labels))
for col, label in zip(cols, choice.labels):
    with col.container(border=True):
        st.markdown(f"**{ui.plain(label.annotator)}**: "
                    f"{ui.plain(taxonomy.accuracy_text(label.accuracy, lang)[0])}")
        st.markdown(" ".join(f"`{c}`" for c in label.codes) or f"_{t('adj.no_codes')}_")
        if label.note:
            st.text(label.note)  # user text: shown as typed, never as Markdown
codes = [c.id for c in taxonomy.labelable()]
majority, majority_codes = service.majority_label(choice.labels)
start = choice.gold or {"accuracy": majority, "codes": majority_codes}
st.caption(t("adj.start"))
accuracy_names = {a: taxonomy.accuracy_text(a, lang)[0] for a in ("correct", "partial",
                                                                   "incorrect")}
with st.form(f"gold_{choice.generation_id}"):
    accuracy = st.segmented_control(t("adj.gold_accuracy"), list(accuracy_names),
                                    default=start.get("accuracy"), format_func=accuracy_names.get,
                                    required=True)  # a click on the chosen one keeps it
    code_names = {c: f"{c} {taxonomy.code(c).text('name', lang)}" for c in codes}
    gold_codes = st.multiselect(t("adj.gold_codes"), codes, default=list(start.get("codes", ())),
                                format_func=code_names.get)
    note = st.text_input(t("adj.note"), value=start.get("note", ""))
    stored = st.form_submit_button(t("adj.store"), type="primary")
if stored and accuracy is None:  # nothing chosen (there was no majority to start from)
    st.error(t("adj.choose_accuracy"))
elif stored:
    try:
        with ui.db() as session:
            service.adjudicate(session, generation_id=choice.generation_id,
                               adjudicator_id=lead.id, accuracy=accuracy, codes=gold_codes,
                               note=note)
    except service.AnnotateError as error:
        st.error(ui.plain(error))
    else:
        kept.add(choice.generation_id)
        ui.flash("success", t("adj.stored", gid=choice.generation_id))
        st.rerun()
if history:
    with st.expander(t("adj.history", gid=choice.generation_id, count=len(history))):
        st.dataframe(history, hide_index=True, key="adj_history")
