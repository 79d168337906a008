"""Lead: create annotator accounts and see progress per annotator and language."""
from __future__ import annotations

import streamlit as st

from annotate import service, ui
from taxonomy import LANGUAGES

lead = ui.require_lead()
ui.show_flash()
st.header("Team and progress")

with st.form("new_annotator", clear_on_submit=True):
    st.subheader("New account")
    c1, c2, c3 = st.columns(3)
    username = c1.text_input("Username (an e-mail address for single sign-on)")
    password = c2.text_input("Password (empty: single sign-on only)", type="password")
    role = c3.selectbox("Role", service.ROLES)
    c4, c5, c6 = st.columns(3)
    languages = c4.multiselect("Languages they label", LANGUAGES)
    interface = c5.selectbox("Interface language", LANGUAGES)
    display = c6.text_input("Display name")
    if st.form_submit_button("Create account", type="primary"):
        try:
            with ui.db() as session:
                created = service.create_annotator(
                    session, username=username, password=password or None, languages=languages,
                    role=role, display_name=display, interface_language=interface,
                    acting=lead.id)
        except service.AnnotateError as error:
            st.error(ui.plain(error))
        else:
            st.success(f"Created {ui.plain(created.username)} ({created.role}; "
                       f"{', '.join(created.languages) or 'no languages'}).")

with ui.db() as session:
    people = service.list_annotators(session, acting=lead.id)
    progress = service.team_progress(session, acting=lead.id)
st.subheader("Accounts")
st.dataframe([{"username": p.username, "name": p.display_name, "role": p.role,
               "active": p.active, "languages": ", ".join(p.languages),
               "interface": p.interface_language}
              for p in people], hide_index=True, key="team_accounts")
st.subheader("Progress per annotator and language")
if progress:
    st.dataframe(progress, hide_index=True, key="team_progress")
else:
    st.info("Nothing assigned yet.")

st.subheader("Change an account")
if people:
    with st.form("edit_annotator"):
        who = st.selectbox("Account", people, format_func=lambda p: p.username
                           + ("" if p.active else " (deactivated)"))
        e1, e2, e3 = st.columns(3)
        new_languages = e1.multiselect("Languages (empty: keep)", LANGUAGES)
        new_role = e2.selectbox("Role", ["(keep)", *service.ROLES])
        new_password = e3.text_input("New password (empty: keep)", type="password")
        status = st.segmented_control(
            "Status", ["(keep)", "active", "deactivated"], default="(keep)",
            help="Deactivated: cannot sign in, signed-in sessions end, labels stay. Active "
                 "again: can sign in with the same password.")
        if st.form_submit_button("Save account"):
            try:
                with ui.db() as session:
                    changed = service.update_annotator(
                        session, who.id, acting=lead.id, languages=new_languages or None,
                        role=None if new_role == "(keep)" else new_role,
                        active={"active": True, "deactivated": False}.get(status),
                        password=new_password or None)
            except service.AnnotateError as error:
                st.error(ui.plain(error))
            else:
                st.success(f"Saved {ui.plain(changed.username)}: {changed.role}, "
                           f"{', '.join(changed.languages) or 'no languages'}, "
                           f"{'active' if changed.active else 'deactivated'}.")
