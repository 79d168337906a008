"""Lead: create annotator accounts and see progress per annotator and language, and the stop
rule of each label plan."""
from __future__ import annotations

import streamlit as st

from annotate import plan_views, service, ui
from annotate.ui import t
from taxonomy import LANGUAGES

lead = ui.require_lead()
ui.show_flash()
st.header(t("nav.team"))
roles = {r: t(f"role.{r}") for r in service.ROLES}
languages_of = lambda p: ", ".join(p.languages) or t("lead.no_languages")  # noqa: E731

with st.form("new_annotator", clear_on_submit=True):
    st.subheader(t("team.new_account"))
    c1, c2, c3 = st.columns(3)
    username = c1.text_input(t("team.username"))
    password = c2.text_input(t("team.password"), type="password")
    role = c3.selectbox(t("team.role"), service.ROLES, format_func=roles.get)
    c4, c5, c6 = st.columns(3)
    languages = c4.multiselect(t("team.languages"), LANGUAGES)
    interface = c5.selectbox(t("sidebar.interface_language"), LANGUAGES)
    display = c6.text_input(t("team.display"))
    if st.form_submit_button(t("team.create"), type="primary"):
        try:
            with ui.db() as session:
                created = service.create_annotator(
                    session, username=username, languages=languages,
                    # no password: single sign-on only, which needs single sign-on set up
                    password=password if password or not ui.oidc_configured() else None,
                    role=role, display_name=display, interface_language=interface,
                    acting=lead.id)
        except service.AnnotateError as error:
            st.error(ui.plain(error))
        else:
            st.success(t("team.created", username=ui.plain(created.username),
                         role=roles[created.role], languages=languages_of(created)))

with ui.db() as session:
    people = service.list_annotators(session, acting=lead.id)
    progress = service.team_progress(session, acting=lead.id)
st.subheader(t("team.accounts"))
st.dataframe([{"username": p.username, "name": p.display_name, "role": p.role,
               "active": p.active, "languages": ", ".join(p.languages),
               "interface": p.interface_language}
              for p in people], hide_index=True, key="team_accounts")
st.subheader(t("team.progress"))
if progress:
    st.dataframe(progress, hide_index=True, key="team_progress")
else:
    st.info(t("team.nothing_assigned"))

plan_views.plan_stop_rule(lead)

st.subheader(t("team.change"))
if people:
    with st.form("edit_annotator"):
        who = st.selectbox(t("team.account"), people, format_func=lambda p: p.username
                           + ("" if p.active else f" ({t('team.deactivated')})"))
        e1, e2, e3 = st.columns(3)
        new_languages = e1.multiselect(t("team.new_languages"), LANGUAGES)
        keep_or_role = {"(keep)": t("lead.keep"), **roles}
        new_role = e2.selectbox(t("team.role"), list(keep_or_role), format_func=keep_or_role.get)
        new_password = e3.text_input(t("team.new_password"), type="password")
        statuses = {"(keep)": t("lead.keep"), "active": t("team.active"),
                    "deactivated": t("team.deactivated")}
        status = st.segmented_control(t("team.status"), list(statuses), default="(keep)",
                                      format_func=statuses.get, help=t("team.status_help"))
        if st.form_submit_button(t("team.save")):
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
                st.success(t("team.saved", username=ui.plain(changed.username),
                             role=roles[changed.role], languages=languages_of(changed),
                             status=t("team.active" if changed.active else "team.deactivated")))

st.subheader(t("flags.header"))
with ui.db() as session:
    flags = service.flagged_items(session, acting=lead.id)
if not flags:
    st.info(t("flags.none"))
else:
    with st.form("answer_flag"):
        flag = st.selectbox(t("flags.item"), flags, format_func=lambda f: (
            f"#{f['generation_id']} · {f['language']} · {f['annotator']}"
            f"{' · ' + t('flags.answered') if f['reply'] else ''}"))
        st.caption(t("flags.note"))
        st.text(flag["note"] or "-")  # user text: shown as typed
        answer = st.text_area(t("flags.answer"), value=flag["reply"], height=80)
        if st.form_submit_button(t("flags.send")):
            try:
                with ui.db() as session:
                    service.answer_flag(session, generation_id=flag["generation_id"],
                                        annotator_id=flag["annotator_id"], text=answer,
                                        acting=lead.id)
            except service.AnnotateError as error:
                st.error(ui.plain(error))
            else:  # run again: the navigation's count of open flags is drawn first
                ui.flash("success", t("flags.sent", username=flag["annotator"],
                                      gid=flag["generation_id"]))
                st.rerun()
