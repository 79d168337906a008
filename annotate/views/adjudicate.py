"""Lead: items where annotators disagree, side by side with the code around the comment,
resolved into a stored gold label (with history; the annotators' own labels stay as they were).
Imported expert labels stay out unless the lead asks for them."""
from __future__ import annotations

import streamlit as st

from annotate import service, ui
from annotate.codepick import pick_codes, said, toggled
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
code_names = {c: f"{c} {taxonomy.code(c).text('name', lang)}" for c in codes}
majority, majority_codes = service.majority_label(choice.labels)
start = choice.gold or {"accuracy": majority, "codes": majority_codes}
S = st.session_state
gid = choice.generation_id  # the form's widgets are the item's: another item, another form
codes_key, note_key, pick_key = (f"adj_{what}_{gid}" for what in ("codes", "note", "pick"))
S.setdefault(codes_key, [c for c in codes if c in start.get("codes", ())])
S.setdefault(note_key, start.get("note", "") or "")


def on_pick(pick_key: str, codes_key: str) -> None:
    """Enter in the gold codes field: what the annotator's picker ticks (an exact id, a unique
    start or part of a name: one code; several matches: none, named), never a group."""
    pick = pick_codes(S.get(pick_key) or "", list(code_names.items()))
    S[pick_key] = ""
    S[codes_key] = toggled(pick, S.get(codes_key, []), codes)
    S["adj_pick_said"] = said(pick, lambda code: code in S[codes_key], t)


st.caption(t("adj.start"))
accuracy_names = {a: taxonomy.accuracy_text(a, lang)[0] for a in ("correct", "partial",
                                                                   "incorrect")}
with st.container(key="adj_gold", border=True):  # no st.form: Enter in a form's field stores
    accuracy = st.segmented_control(t("adj.gold_accuracy"), list(accuracy_names),
                                    default=start.get("accuracy"), format_func=accuracy_names.get,
                                    required=True,  # a click on the chosen one keeps it
                                    key=f"adj_accuracy_{gid}")
    st.text_input(t("adj.gold_codes"), key=pick_key, on_change=on_pick,
                  args=(pick_key, codes_key), placeholder=t("adj.pick_placeholder"))
    picked = S.pop("adj_pick_said", "")
    if picked:
        st.caption(ui.plain(picked))
    gold_codes = st.multiselect(t("adj.ticked_codes"), codes, key=codes_key,
                                format_func=code_names.get,  # the mouse's way; typing: above
                                filter_mode=None, select_all=False)
    note = st.text_input(t("adj.note"), key=note_key)
    stored = st.button(t("adj.store"), type="primary", key="adj_store")
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
