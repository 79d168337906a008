"""Lead: put items into annotators' queues (by language and model, N annotators per item,
random or stratified order, seeded)."""
from __future__ import annotations

import streamlit as st
from sqlalchemy import select

from annotate import service, ui
from db import models as m
from taxonomy import LANGUAGES

lead = ui.require_lead()
st.header("Assign items")
with ui.db() as session:
    people = [p for p in service.list_annotators(session, acting=lead.id) if p.languages]
    models = sorted(session.exec(select(m.Generation.model).distinct()).scalars().all())

with st.form("assign"):
    chosen = st.multiselect("Annotators", people,  # the team's active raters, not `expert`
                            default=[p for p in people if p.role == "annotator" and p.active],
                            format_func=lambda p: f"{p.username} ({', '.join(p.languages)})")
    c1, c2 = st.columns(2)
    languages = c1.multiselect("Languages (empty: all)", LANGUAGES)
    chosen_models = c2.multiselect("Models (empty: all)", models)
    c3, c4, c5, c6 = st.columns(4)
    per_item = c3.number_input("Annotators per item", min_value=1, max_value=10, value=1)
    strategy = c4.segmented_control("Order", ["stratified", "random"], default="stratified")
    seed = c5.number_input("Seed", min_value=0, value=0)
    limit = c6.number_input("At most N items (0: all)", min_value=0, value=0)
    submitted = st.form_submit_button("Assign", type="primary")
if submitted:
    try:
        with ui.db() as session:
            added = service.assign(
                session, acting=lead.id, annotator_ids=[p.id for p in chosen],
                languages=languages or None,
                models=chosen_models or None, per_item=int(per_item),
                strategy=strategy or "stratified", seed=int(seed), limit=int(limit) or None)
    except service.AnnotateError as error:
        st.error(ui.plain(error))
    else:
        st.success(f"Added {added} assignments.")

st.subheader("Take back untouched items")
with st.form("unassign"):
    who = st.selectbox("Annotator", people, format_func=lambda p: p.username)
    if st.form_submit_button("Take back every item they have not started"):
        with ui.db() as session:
            taken = service.unassign_open(session, who.id, acting=lead.id)
        st.success(f"Took back {taken} items from {ui.plain(who.username)} (their labels "
                   f"stay).")
