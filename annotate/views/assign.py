"""Lead: put items into annotators' queues (by language and model, N annotators per item,
random or stratified order, seeded), or by need (a label plan: `annotate.plan_views`)."""
from __future__ import annotations

import streamlit as st

from annotate import plan_views, service, ui
from annotate.ui import t
from taxonomy import LANGUAGES

lead = ui.require_lead()
st.header(t("assign.header"))
with ui.db() as session:
    people = [p for p in service.list_annotators(session, acting=lead.id) if p.languages]
    models = service.models_to_assign(session, acting=lead.id)

with st.form("assign"):
    chosen = st.multiselect(t("assign.annotators"), people,  # the team's active raters, not `expert`
                            default=[p for p in people if p.role == "annotator" and p.active],
                            format_func=lambda p: f"{p.username} ({', '.join(p.languages)})")
    c1, c2 = st.columns(2)
    languages = c1.multiselect(t("assign.languages"), LANGUAGES)
    chosen_models = c2.multiselect(t("assign.models"), models)
    c3, c4, c5, c6 = st.columns(4)
    per_item = c3.number_input(t("assign.per_item"), min_value=1, max_value=10, value=1)
    orders = {"stratified": t("assign.stratified"), "random": t("assign.random")}
    strategy = c4.segmented_control(t("assign.order"), list(orders), default="stratified",
                                    format_func=orders.get)
    seed = c5.number_input(t("assign.seed"), min_value=0, value=0)
    limit = c6.number_input(t("assign.limit"), min_value=0, value=0)
    submitted = st.form_submit_button(t("assign.submit"), type="primary")
if submitted:
    try:
        with ui.db() as session:
            done = service.assign_items(
                session, acting=lead.id, annotator_ids=[p.id for p in chosen],
                languages=languages or None,
                models=chosen_models or None, per_item=int(per_item),
                strategy=strategy or "stratified", seed=int(seed), limit=int(limit) or None)
    except service.AnnotateError as error:
        st.error(ui.plain(error))
    else:
        st.success(t("assign.added", count=done.added))
        for short in done.short:  # never a silent "fewer than asked"
            items = ", ".join(f"#{g}" for g in short.items[:10]) + (
                " …" if len(short.items) > 10 else "")
            st.warning(t("assign.short", count=len(short.items), language=short.language,
                         wanted=short.wanted, items=items, speakers=short.speakers))
        locked_out = [p.username for p in chosen if not p.has_password]
        if locked_out and not ui.oidc_configured():
            st.warning(t("assign.no_sign_in", usernames=ui.plain(", ".join(locked_out))))

plan_views.assign_by_need(lead)

st.subheader(t("assign.take_back"))
with st.form("unassign"):
    who = st.selectbox(t("assign.annotator"), people, format_func=lambda p: p.username)
    if st.form_submit_button(t("assign.take_back_button")):
        with ui.db() as session:
            taken = service.unassign_open(session, who.id, acting=lead.id)
        st.success(t("assign.taken", count=taken, username=ui.plain(who.username)))
