"""Lead: the review queue. Every finished label (not only disagreements), filtered by language,
annotator, model and text: accept it (it becomes the item's gold label) or reject it (it goes
back to its annotator, open again, with the reason shown on the item)."""
from __future__ import annotations

import streamlit as st

from annotate import service, ui
from annotate.render import item_html
from annotate.ui import t
from taxonomy import default_taxonomy

lead = ui.require_lead()
ui.show_flash()
st.header(t("review.header"))
with ui.db() as session:
    labels = service.finished_labels(session, acting=lead.id)
    gold = service.gold_labels(session, acting=lead.id)
c1, c2, c3, c4 = st.columns(4)
everyone = t("filter.all")
language = c1.selectbox(t("search.language"), [everyone, *sorted({x.language for x in labels})])
annotator = c2.selectbox(t("review.annotator"), [everyone, *sorted({x.annotator for x in labels})])
model = c3.selectbox(t("search.model"), [everyone, *sorted({x.model for x in labels})])
text = c4.text_input(t("search.text"), placeholder=t("review.placeholder")).strip().lower()
reviewed_too = st.toggle(t("review.reviewed_too"), value=False, key="review_all")
shown = [x for x in labels
         if language in (everyone, x.language) and annotator in (everyone, x.annotator)
         and model in (everyone, x.model) and (reviewed_too or x.generation_id not in gold)
         and (not text or text.lstrip("#") == str(x.generation_id) or text in x.note.lower()
              or any(text in c.lower() for c in x.codes))]
st.caption(t("review.count", count=len(shown)))
if not shown:
    st.info(t("review.none"))
    st.stop()
taxonomy = default_taxonomy()
lang = ui.interface_language()
keys = {(x.generation_id, x.annotator): x for x in shown}
choice = keys[st.selectbox(t("adj.item"), list(keys), key="review_item", format_func=lambda k: (
    f"#{k[0]} · {keys[k].language} · {keys[k].model} · {k[1]} · "
    f"{taxonomy.accuracy_text(keys[k].accuracy, lang)[0]}"
    f"{' · ' + t('adj.resolved') if k[0] in gold else ''}"))]
with ui.db() as session:
    view = service.item_for_review(session, choice.generation_id, acting=lead.id)
    people = {p.username: p.id for p in service.list_annotators(session, acting=lead.id)}
if view is not None:
    st.html(item_html(view, ui.item_words()))
with st.container(border=True):
    st.markdown(f"**{ui.plain(choice.annotator)}**: "
                f"{ui.plain(taxonomy.accuracy_text(choice.accuracy, lang)[0])}")
    st.markdown(" ".join(f"`{c}`" for c in choice.codes) or f"_{t('adj.no_codes')}_")
    if choice.note:
        st.text(choice.note)  # user text: shown as typed
accept, reject = st.columns(2)
reason = reject.text_input(t("review.reason"),  # one per label: a reason never carries over
                          key=f"review_reason_{choice.generation_id}_{choice.annotator}")
if accept.button(t("review.accept"), type="primary", key="review_accept"):
    try:
        with ui.db() as session:
            service.accept_label(session, generation_id=choice.generation_id,
                                 annotator_id=people[choice.annotator], acting=lead.id)
    except service.AnnotateError as error:
        st.error(ui.plain(error))
    else:
        ui.flash("success", t("review.accepted", gid=choice.generation_id,
                              username=choice.annotator))
        st.rerun()
if reject.button(t("review.reject"), key="review_reject"):
    try:
        with ui.db() as session:
            service.reject_label(session, generation_id=choice.generation_id,
                                 annotator_id=people[choice.annotator], reason=reason,
                                 acting=lead.id)
    except service.AnnotateError as error:
        st.error(ui.plain(error))
    else:
        ui.flash("success", t("review.rejected", gid=choice.generation_id,
                              username=choice.annotator))
        st.rerun()
