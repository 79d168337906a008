"""The labelling app's entry point (`streamlit run annotate/app.py`, or `python -m annotate`).

Signs the user in, then routes to the pages in `annotate/views/`: the labelling view for
everyone, the lead's pages (team, assign, agreement, adjudicate, summary, analysis) for leads."""
from __future__ import annotations

import streamlit as st

from annotate import service, ui

# An "About" entry keeps the app menu, and with it the theme choice (light, dark, system), in
# the minimal toolbar `python -m annotate` asks for.
st.set_page_config(page_title="Comment labelling", page_icon="🏷️", layout="wide",
                   initial_sidebar_state="collapsed",  # the item view needs the width
                   menu_items={"About": "Comment labelling for nlcomment-eval: annotators label "
                                        "LLM-generated code comments in their native language."})
ui.inject_css()


def sign_in_page() -> None:
    st.title("Comment labelling")
    st.caption("Label LLM-generated code comments in your native language.")
    error = st.session_state.pop("nlce_sign_in_error", None)
    if error:
        st.error(ui.plain(error))
    with st.form("sign_in", clear_on_submit=False, width=420):
        username = st.text_input("Username", key="sign_in_user")
        password = st.text_input("Password", type="password", key="sign_in_password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        try:
            with ui.db() as session:
                user = service.authenticate(session, username, password)
        except service.AuthError as failure:
            st.error(ui.plain(failure))
        else:
            ui.sign_in(user)
            st.rerun()
    if ui.oidc_configured():
        st.divider()
        if st.button("Sign in with single sign-on"):
            st.login()


def sidebar(user: service.AnnotatorInfo) -> None:
    from taxonomy import LANGUAGES

    with st.sidebar:
        st.markdown(f"**{ui.plain(user.display_name)}** · {user.role} · "
                    f"{', '.join(user.languages) or '-'}")
        current = ui.interface_language()
        choice = st.selectbox("Interface language (taxonomy texts)", LANGUAGES,
                              index=LANGUAGES.index(current) if current in LANGUAGES else 0,
                              key="nlce_ui_lang_select")
        if choice != current:
            st.session_state["nlce_ui_lang"] = choice
            with ui.db() as session:
                service.set_interface_language(session, user.id, choice)
        if st.button("Sign out"):
            ui.sign_out()
            if ui.oidc_configured() and getattr(st.user, "is_logged_in", False):
                st.logout()
            st.rerun()


def main() -> None:
    user = ui.current_user()
    ui.write_pending_cookie()
    if user is None:
        st.navigation([st.Page(sign_in_page, title="Sign in", url_path="signin")],
                      position="hidden").run()
        return
    pages = {"Labelling": [st.Page("views/label.py", title="Label", icon="🏷️", default=True)]}
    if user.is_lead:
        pages["Lead"] = [
            st.Page("views/team.py", title="Team and progress", icon="👥"),
            st.Page("views/assign.py", title="Assign", icon="📋"),
            st.Page("views/agreement.py", title="Agreement", icon="🤝"),
            st.Page("views/adjudicate.py", title="Adjudicate", icon="⚖️"),
            st.Page("views/summary.py", title="Summary tables", icon="📊"),
            st.Page("views/analysis.py", title="Metric analysis", icon="📈"),
        ]
    page = st.navigation(pages, position="top")
    sidebar(user)
    page.run()


main()
