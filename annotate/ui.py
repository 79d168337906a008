"""What every page of the app shares: the database URL, the signed-in user (password, session
cookie or OIDC; the cookie holds a server-side session's token), the lead check, the flash
message, user text shown as typed, and the page CSS."""
from __future__ import annotations

import html
import json
import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import streamlit as st

from annotate import i18n, service
from annotate.render import code_css
from db import resolve_url, session_scope
from taxonomy import LANGUAGES

USER_KEY = "nlce_user"
TOKEN_KEY = "nlce_session_token"  # this tab's server-side session (see service.signin)
CHECKED_KEY = "nlce_user_checked"
COOKIE_NAME = "nlce_session"
COOKIE_SLOT = "nlce_cookie"  # the container the cookie's script is drawn in (hidden)
RECHECK_S = 30.0
FLASH_KEY = "nlce_flash"

PAGE_CSS = """
<style>
.block-container { padding-top: 4.2rem !important; padding-bottom: 0.5rem !important; }
[data-testid="stVerticalBlock"] { gap: 0.45rem; }
[data-testid="stCheckbox"] label p { font-size: 0.84rem; }
/* code names show whole (Greek and Polish ones are long): wrap, never cut with an ellipsis */
[data-testid="stCheckbox"] label p, [data-testid="stCheckbox"] label div {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
[data-testid="stCheckbox"] { min-height: 1.35rem; }
[data-testid^="stBaseButton"] p { white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important; word-break: normal !important; overflow-wrap: normal !important; }
/* the labelling buttons keep their whole label in a narrow column (the sidebar open at 1440 px):
   less padding, and the shortcut key goes under the label rather than cutting it */
[class*="st-key-lbl_"] [data-testid^="stBaseButton"] { padding-left: 0.3rem !important;
  padding-right: 0.3rem !important; }
[data-testid^="stBaseButton"] [data-has-shortcut] { flex-wrap: wrap; justify-content: center;
  column-gap: 0.3rem; }
[data-testid^="stBaseButton"] div { overflow: visible !important; text-overflow: clip !important; }
/* colours as light-dark() pairs: the theme's colour scheme picks one (see render.code_css) */
.nlce-cat { font-size: 0.78rem; font-weight: 600; color: light-dark(#4a4a4a, #c9d1d9);
  margin: 0.1rem 0 -0.2rem 0; }
div:has(> .st-key-nlce_cookie) { display: none; }  /* the cookie's script, no space */
/* keyboard.js's notices (a paste cut to the note's limit), over the page like a toast */
.nlce-notice { position: fixed; right: 1.5rem; bottom: 1.5rem; z-index: 1000000;
  max-width: 30rem; padding: 0.7rem 1rem; border-radius: 0.5rem; font-size: 0.9rem;
  color: light-dark(#31333f, #fafafa); background: light-dark(#fff6d5, #3d3408);
  box-shadow: 0 2px 12px rgba(0, 0, 0, 0.25); }
.nlce-head { font-size: 0.9rem; color: inherit; }
.nlce-keys { font-size: 0.78rem; color: light-dark(#595959, #b1bac4); }
.nlce-keys kbd { border: 1px solid light-dark(#bbbbbb, #59636e); border-radius: 3px;
  padding: 0 4px; color: inherit; background: light-dark(#f6f6f6, #262c36); }
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


KEYBOARD_JS = (Path(__file__).resolve().parent / "data" / "keyboard.js").read_text("utf-8")


def keyboard_helper() -> None:
    """The page's keyboard and note keeper (annotate/data/keyboard.js), put in once a page."""
    st.html(f"<script>{KEYBOARD_JS}</script>", unsafe_allow_javascript=True)


def note_hash(text: str) -> str:
    """FNV-1a over UTF-16 code units, as keyboard.js computes it: the page tells the browser
    which note the database holds, so the browser knows when its draft has arrived."""
    h = 0x811C9DC5
    data = text.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h ^= data[i] | (data[i + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    return format(h, "x")


def note_state(user_id: int, generation_id: int, stored_note: str) -> None:
    """Which note the database holds for this item, the note's limit with what to say when a
    paste or a key would pass it, and what to say while the server is away (read by
    keyboard.js, shown as nothing)."""
    limit = service.max_note_chars()
    say = {"cut": t("note.cut", limit=limit, dropped="{dropped}"),
           "full": t("note.full", limit=limit), "away": t("note.away")}
    st.html(f'<div class="nlce-note-state" data-user="{int(user_id)}" '
            f'data-item="{int(generation_id)}" data-stored="{note_hash(stored_note)}" '
            f'data-max="{limit}" data-cut="{html.escape(say["cut"])}" '
            f'data-full="{html.escape(say["full"])}" '
            f'data-away="{html.escape(say["away"])}"></div>')


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
    """The message as a toast: it floats over the page instead of pushing the buttons away
    under the mouse; errors and warnings stay until closed."""
    kind, message = st.session_state.pop(FLASH_KEY, (None, None))
    if message:
        icon = {"error": "⛔", "warning": "⚠️", "success": "✅"}.get(kind, "ℹ️")
        st.toast(plain(message), icon=icon,
                 duration="infinite" if kind in ("error", "warning") else "long")


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
    """Start a server-side session for `user`; its token goes into the cookie."""
    with db() as session:
        token = service.start_session(session, user.id)
    st.session_state[USER_KEY] = user
    st.session_state[TOKEN_KEY] = token
    st.session_state[CHECKED_KEY] = time.time()
    st.session_state["nlce_set_cookie"] = token


def _forget() -> None:
    """Clear this browser tab's state and its cookie (the server-side session is not touched)."""
    for key in list(st.session_state.keys()):
        del st.session_state[key]
    st.session_state["nlce_set_cookie"] = ""


def sign_out() -> None:
    """Revoke the session on the server (a copied cookie signs nobody in any more), then forget
    it here. The cookie this page was loaded with is revoked too: it still comes with every
    rerun of this tab."""
    tokens = {st.session_state.get(TOKEN_KEY), _cookie()} - {None, ""}
    if tokens:
        with db() as session:
            for token in tokens:
                service.end_session(session, token)
    _forget()


def write_pending_cookie() -> None:
    """Set (or clear) the session cookie after sign-in or sign-out; a script runs in the page.
    Its (hidden) container is drawn on every run, empty when there is nothing to set: an
    element at the top of the page that came and went would shift every element under it, and
    the browser would remount them, the note field included, taking the focus from whoever is
    typing there (issue 34: the first pause in typing on the first item after signing in)."""
    with st.container(key=COOKIE_SLOT):
        if "nlce_set_cookie" in st.session_state:
            token = st.session_state.pop("nlce_set_cookie")
            _set_cookie(token, int(service.SESSION_LIFETIME.total_seconds()) if token else 0)


def current_user() -> service.AnnotatorInfo | None:
    """The signed-in annotator: this tab's, else the session cookie's, else OIDC's."""
    user = st.session_state.get(USER_KEY)
    if user is not None:
        return _recheck(user)
    token = _cookie()
    if token:
        with db() as session:
            user = service.session_account(session, token)
        if user is not None:
            st.session_state[USER_KEY] = user
            st.session_state[TOKEN_KEY] = token
            st.session_state[CHECKED_KEY] = time.time()
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
    """Re-read the session and the account now and then, so a sign-out in another tab, a
    deactivation, a new password or a changed role applies to tabs already signed in."""
    now = time.time()
    if now - st.session_state.get(CHECKED_KEY, 0.0) < RECHECK_S:
        return user
    with db() as session:
        fresh = service.session_account(session, st.session_state.get(TOKEN_KEY))
        if fresh is None:
            try:
                service.get_annotator(session, user.id, active_only=True)
                why = t("session.ended")
            except service.AuthError as error:
                why = str(error)
    if fresh is None:
        _forget()
        st.session_state["nlce_sign_in_error"] = why
        return None
    st.session_state[USER_KEY] = fresh
    st.session_state[CHECKED_KEY] = now
    return fresh


BEHIND_PROXY_ENV = "NLCE_BEHIND_PROXY"  # set by `python -m annotate --behind-tls-proxy`


def client_id() -> str | None:
    """Where this browser connects from, for the sign-in rate limit and lockout: the remote
    address (behind a proxy on this machine, the address its X-Forwarded-For header names: the
    server takes that header from loopback peers only). Behind a proxy that forwards no address,
    each browser tab counts alone rather than all as one. None for a browser on this machine
    without a proxy (and for AppTest): one lockout per name, no rate limit."""
    try:
        address = st.context.ip_address
    except Exception:  # no browser context (AppTest)
        address = None
    if address:
        return f"ip:{address}"
    if os.environ.get(BEHIND_PROXY_ENV):
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        context = get_script_run_ctx()
        return f"session:{context.session_id}" if context else None
    return None


def _cookie(name: str = COOKIE_NAME) -> str | None:
    try:
        value = st.context.cookies.get(name)
    except Exception:  # AppTest and bare runs have no request cookies
        return None
    return value if isinstance(value, str) and value else None


ITEM_COOKIE = "nlce_item"  # "<account id>:<item id>", set by keyboard.js when an item shows


def last_item(user_id: int) -> int | None:
    """The item this browser showed `user_id` last (any tab): where a new tab starts."""
    user, _, item = (_cookie(ITEM_COOKIE) or "").partition(":")
    return int(item) if user == str(user_id) and item.isdigit() else None


def require_lead() -> service.AnnotatorInfo:
    user = current_user()
    if user is None or not user.is_lead:
        st.error(t("lead.only"))
        st.stop()
    return user


LANGUAGE_KEY = "nlce_ui_lang"


def interface_language() -> str:
    """This tab's choice, else the account's setting, else (signed out) the browser's language
    when the interface has it, else English."""
    chosen = st.session_state.get(LANGUAGE_KEY)
    if chosen:
        return chosen
    user = st.session_state.get(USER_KEY)
    if user is not None:
        return user.interface_language
    return browser_language()


def browser_language() -> str:
    try:
        locale = str(st.context.locale or "")
    except Exception:  # no browser context (AppTest)
        locale = ""
    lang = locale.split("-")[0].lower()
    return lang if lang in LANGUAGES else "en"


def item_words() -> dict[str, str]:
    """The interface texts `render.item_html` shows around an item."""
    return {key: t(f"label.{key}") for key in ("context", "wrote_nothing", "original",
                                                "predicted", "overflow")}


def t(key: str, **values: object) -> str:
    """Interface text `key` in the interface language (annotate/data/messages.yaml)."""
    return i18n.text(key, interface_language(), **values)
