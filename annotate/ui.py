"""What every page of the app shares: the database URL, the signed-in user (password, session
cookie or OIDC), the lead check, the flash message and the page CSS."""
from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from typing import Iterator

import streamlit as st

from annotate import service
from annotate.render import code_css
from annotate.session_token import COOKIE_NAME, LIFETIME_S, make_token, read_token
from db import resolve_url, session_scope

USER_KEY = "nlce_user"
RECHECK_S = 30.0
FLASH_KEY = "nlce_flash"

PAGE_CSS = """
<style>
.block-container { padding-top: 4.2rem !important; padding-bottom: 0.5rem !important; }
[data-testid="stVerticalBlock"] { gap: 0.45rem; }
[data-testid="stCheckbox"] label p { font-size: 0.84rem; }
[data-testid="stCheckbox"] { min-height: 1.35rem; }
.nlce-cat { font-size: 0.78rem; font-weight: 600; color: #555; margin: 0.1rem 0 -0.2rem 0; }
.nlce-head { font-size: 0.9rem; color: #333; }
.nlce-keys { font-size: 0.78rem; color: #666; }
.nlce-keys kbd { border: 1px solid #bbb; border-radius: 3px; padding: 0 4px; background: #f6f6f6; }
</style>
"""


def db_url() -> str:
    return resolve_url(None)


@contextmanager
def db() -> Iterator:
    """A database session for one step of a page. A lead action the service refuses (the
    account lost its role since the page was opened) ends the page with the refusal."""
    try:
        with session_scope(db_url()) as session:
            yield session
    except service.NotAllowedError as refused:
        st.error(plain(refused))
        st.stop()


def inject_css() -> None:
    st.html(PAGE_CSS + f"<style>{code_css()}</style>")


_MARKDOWN_SYNTAX = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&=\"'])")


def plain(text: object) -> str:
    """`text` escaped for Streamlit's Markdown (st.markdown, st.caption, st.error, ...), so user
    text (notes, names, messages quoting them) shows as typed: no image that makes the reader's
    browser fetch a host, no link, no formatting. Where a whole element is user text, prefer
    `st.text`, which parses nothing."""
    return _MARKDOWN_SYNTAX.sub(r"\\\1", str(text))


def flash(kind: str, message: str) -> None:
    """A message shown once, at the top of the next run (callbacks cannot draw)."""
    st.session_state[FLASH_KEY] = (kind, message)


def show_flash() -> None:
    kind, message = st.session_state.pop(FLASH_KEY, (None, None))
    if message:
        {"error": st.error, "warning": st.warning, "success": st.success}.get(kind, st.info)(
            plain(message))


def oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def _set_cookie(value: str, max_age: int) -> None:
    try:
        secure = "; Secure" if str(st.context.url or "").startswith("https:") else ""
    except Exception:  # no browser context (AppTest)
        secure = ""
    st.html(f"<script>document.cookie = {json.dumps(COOKIE_NAME)} + '=' + {json.dumps(value)}"
            f" + '; path=/; max-age={int(max_age)}; SameSite=Strict{secure}';</script>",
            unsafe_allow_javascript=True)


def sign_in(user: service.AnnotatorInfo) -> None:
    st.session_state[USER_KEY] = user
    st.session_state["nlce_signed_out"] = False
    st.session_state["nlce_set_cookie"] = make_token(user.id)


def sign_out() -> None:
    for key in list(st.session_state.keys()):
        del st.session_state[key]
    st.session_state["nlce_signed_out"] = True  # the old cookie still comes with this session
    st.session_state["nlce_set_cookie"] = ""


def write_pending_cookie() -> None:
    """Set (or clear) the session cookie after sign-in or sign-out; a script runs in the page."""
    if "nlce_set_cookie" in st.session_state:
        token = st.session_state.pop("nlce_set_cookie")
        _set_cookie(token, LIFETIME_S if token else 0)


def current_user() -> service.AnnotatorInfo | None:
    """The signed-in annotator: this session's, else the session cookie's, else OIDC's."""
    user = st.session_state.get(USER_KEY)
    if user is not None:
        return _recheck(user)
    annotator_id = read_token(_cookie())
    if annotator_id is not None and not st.session_state.get("nlce_signed_out"):
        try:
            with db() as session:
                user = service.get_annotator(session, annotator_id, active_only=True)
        except service.AnnotateError:
            user = None
        if user is not None:
            st.session_state[USER_KEY] = user
            return user
    if oidc_configured() and getattr(st.user, "is_logged_in", False):
        try:
            with db() as session:
                user = service.annotator_for_email(session, st.user.get("email"))
        except service.AuthError as error:
            st.session_state["nlce_sign_in_error"] = str(error)
            return None
        sign_in(user)
        return user
    return None


def _recheck(user: service.AnnotatorInfo) -> service.AnnotatorInfo | None:
    """Re-read the account now and then, so a changed role or a deactivation applies to
    sessions that are already signed in."""
    now = time.time()
    if now - st.session_state.get("nlce_user_checked", 0.0) < RECHECK_S:
        return user
    try:
        with db() as session:
            fresh = service.get_annotator(session, user.id, active_only=True)
    except service.AuthError as error:
        sign_out()
        st.session_state["nlce_sign_in_error"] = str(error)
        return None
    st.session_state[USER_KEY] = fresh
    st.session_state["nlce_user_checked"] = now
    return fresh


def _cookie() -> str | None:
    try:
        return st.context.cookies.get(COOKIE_NAME)
    except Exception:  # AppTest and bare runs have no request cookies
        return None


def require_lead() -> service.AnnotatorInfo:
    user = current_user()
    if user is None or not user.is_lead:
        st.error("This page is for the lead only.")
        st.stop()
    return user


def interface_language() -> str:
    user = current_user()
    return st.session_state.get("nlce_ui_lang") or (user.interface_language if user else "en")
