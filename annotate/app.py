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


LANGUAGE_NAMES = {"en": "English", "zh": "中文", "nl": "Nederlands", "el": "Ελληνικά",
                  "pl": "Polski"}


def language_choice(label: str, key: str) -> str:
    """The interface language chosen on this page, shown in its own language's name."""
    from taxonomy import LANGUAGES

    current = ui.interface_language()
    choice = st.selectbox(label, LANGUAGES, key=key, format_func=LANGUAGE_NAMES.get,
                          index=LANGUAGES.index(current) if current in LANGUAGES else 0)
    return choice or current


def sign_in_page() -> None:
    t = ui.t
    chosen = language_choice(t("signin.language"), "nlce_signin_lang")
    if chosen != ui.interface_language():
        st.session_state[ui.LANGUAGE_KEY] = chosen
        st.rerun()
    st.title(t("app.title"))
    st.caption(t("signin.caption"))
    error = st.session_state.pop("nlce_sign_in_error", None)
    if error:
        st.error(ui.plain(error))
    with st.form("sign_in", clear_on_submit=False, width=420):
        username = st.text_input(t("signin.username"), key="sign_in_user")
        password = st.text_input(t("signin.password"), type="password", key="sign_in_password")
        submitted = st.form_submit_button(t("signin.submit"), type="primary")
    if submitted:
        try:
            with ui.db() as session:  # a re-hash at today's cost is committed with the sign-in
                user = service.authenticate(session, username, password,
                                            client=ui.client_id())
        except service.TooManyAttempts as failure:
            st.error(t("signin.too_many", count=failure.retry_after))
        except service.AuthError as failure:
            st.error(t("signin.failed", max_failures=service.MAX_FAILURES,
                       minutes=int(service.LOCKOUT.total_seconds() // 60))
                     if str(failure) == service.SIGN_IN_FAILED else ui.plain(failure))
        else:
            ui.sign_in(user)
            st.rerun()
    if ui.oidc_configured():
        st.divider()
        if st.button(t("signin.sso")):
            st.login()


def sidebar(user: service.AnnotatorInfo) -> None:
    t = ui.t
    with st.sidebar:
        st.markdown(f"**{ui.plain(user.display_name)}** · {t('role.' + user.role)} · "
                    f"{', '.join(user.languages) or '-'}")
        current = ui.interface_language()
        choice = language_choice(t("sidebar.interface_language"), "nlce_ui_lang_select")
        if choice != current:
            st.session_state[ui.LANGUAGE_KEY] = choice
            with ui.db() as session:
                service.set_interface_language(session, user.id, choice)
            st.rerun()
        if st.button(t("sidebar.sign_out")):
            ui.sign_out()
            if ui.oidc_configured() and getattr(st.user, "is_logged_in", False):
                st.logout()
            st.rerun()


def main() -> None:
    try:
        run_pages()
    except Exception as error:
        from annotate import outage

        if not outage.is_database_unavailable(error):
            raise
        outage.wait_for_database()  # one line, never a traceback; the page comes back by itself


def lead_pages(team: str, visibility: str = "visible") -> list:
    """The lead's pages; their url paths are fixed, so that bookmarks work in every language.
    Each page checks the role itself (`ui.require_lead`)."""
    t = ui.t
    return [st.Page(f"views/{name}.py", title=title, icon=icon, url_path=name,
                    visibility=visibility)
            for name, title, icon in (
                ("team", team, "👥"), ("assign", t("nav.assign"), "📋"),
                ("agreement", t("nav.agreement"), "🤝"), ("adjudicate", t("nav.adjudicate"), "⚖️"),
                ("review", t("nav.review"), "✅"), ("summary", t("nav.summary"), "📊"),
                ("analysis", t("nav.analysis"), "📈"))]


def run_pages() -> None:
    user = ui.current_user()
    ui.write_pending_cookie()
    if user is None:
        st.navigation([st.Page(sign_in_page, title=ui.t("signin.submit"), url_path="signin")],
                      position="hidden").run()
        return
    t = ui.t
    pages = {t("nav.labelling"): [
        st.Page("views/label.py", title=t("nav.label"), icon="🏷️", default=True),
        st.Page("views/guidelines.py", title=t("nav.guidelines"), icon="📖",
                url_path="guidelines")]}
    if user.is_lead:
        with ui.db() as session:
            flags = service.open_flag_count(session, acting=user.id)
        count = " · " + t("nav.open_flags", count=flags) if flags else ""  # on the menu too
        pages[t("nav.lead") + count] = lead_pages(t("nav.team") + count)
    else:  # a lead's address opens and says it is the lead's (not Streamlit's "Page not found")
        pages[t("nav.labelling")] += lead_pages(t("nav.team"), visibility="hidden")
    page = st.navigation(pages, position="top")
    sidebar(user)
    page.run()


main()
