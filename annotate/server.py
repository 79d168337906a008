"""The labelling app's web server: Streamlit's own (Starlette, through `st.App`; `python -m
annotate` runs `streamlit run` on this file) with one guard. Streamlit serves every file a page
offers for download (the lead's Tables 1 and 2 and `export.jsonl`) at a `/media/...` address to
anyone who has the address, for as long as the file is in memory (issue 42: the whole export,
with every label, note and username, answered a request without a cookie 53 minutes after the
lead's browser closed; streamlit/streamlit#8148 is the same report, still open). Here an address
under `/media/` answers only a request whose session cookie (`annotate.ui.COOKIE_NAME`) is an
open session of an active lead, never cached; anyone else gets 403. The app shows no other
media (no images, audio or video), so the guard takes the whole route."""
from __future__ import annotations

from http.cookies import CookieError, SimpleCookie

from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from streamlit.starlette import App

REFUSED = "Downloads are for a lead who is signed in: sign in to the labelling app as a lead."
UNAVAILABLE = "Database unavailable: try the download again in a moment."


def _media_prefix() -> str:
    from streamlit import config

    base = (config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/media/" if base else "/media/"


def _session_token(scope: Scope) -> str | None:
    from annotate.ui import COOKIE_NAME

    header = b"; ".join(value for name, value in scope.get("headers", ()) if name == b"cookie")
    cookies = SimpleCookie()
    try:
        cookies.load(header.decode("latin-1"))
    except CookieError:
        return None
    morsel = cookies.get(COOKIE_NAME)
    return morsel.value if morsel is not None and morsel.value else None


def lead_signed_in(token: str | None) -> bool:
    """Whether `token` is an open session of an active lead (`service.session_account`)."""
    if not token:
        return False
    from annotate import service
    from db import resolve_url, session_scope

    with session_scope(resolve_url(None)) as session:
        user = service.session_account(session, token)
    return user is not None and user.is_lead


class LeadOnlyMedia:
    """ASGI middleware: `/media/...` for a signed-in lead only, with `Cache-Control: no-store`
    (no proxy or shared cache keeps a copy for the next person)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(_media_prefix()):
            await self.app(scope, receive, send)
            return
        try:
            allowed = await run_in_threadpool(lead_signed_in, _session_token(scope))
        except Exception as error:  # noqa: BLE001 - a database outage refuses, anything else is a bug
            from nlce.cli import is_database_unavailable

            if not is_database_unavailable(error):
                raise
            await PlainTextResponse(UNAVAILABLE, status_code=503)(scope, receive, send)
            return
        if not allowed:
            await PlainTextResponse(REFUSED, status_code=403)(scope, receive, send)
            return

        async def no_store(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      (b"cache-control", b"no-store, private")]
            await send(message)

        await self.app(scope, receive, no_store)


app = App("app.py", middleware=[Middleware(LeadOnlyMedia)])
