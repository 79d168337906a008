"""`python -m annotate [--db URL] [--port 8501] [--demo]`: start the labelling app.

Becomes `streamlit run annotate/server.py` (exec: one process, so stopping it stops the server;
server.py runs the pages of annotate/app.py on Streamlit's server with downloads for leads only)
with the database URL in $NLCE_DATABASE_URL. Sign-in sessions live in the database, so a
restart keeps people signed in. With --demo an empty database first gets the demo dataset
(users anna, bas and lead, password "demo": demo data only, below the password policy)."""
from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from sqlalchemy.engine import make_url

from db import DATABASE_URL_ENV, add_database_argument
from db.engine import SQLITE_BUSY_TIMEOUT_ENV, project_database
from db.passwords import FAST_HASHES_ENV, fast_hashes
from nlce.cli import EXIT_OK, UserError, run_main

APP = Path(__file__).with_name("server.py")  # st.App: annotate/app.py behind the download guard


def database_is_empty(url: str) -> bool:
    from sqlalchemy import func, select

    from db import models as m
    from db import session_scope

    with session_scope(url) as session:
        return session.exec(select(func.count()).select_from(m.Generation)).scalar_one() == 0


def add_user(url: str, username: str, role: str, languages: str, sso_only: bool = False) -> int:
    from annotate import service
    from db import session_scope

    password = None if sso_only else (os.environ.get("NLCE_NEW_PASSWORD")
                                      or getpass.getpass(f"password for {username}: "))
    try:
        with session_scope(url) as session:
            user = service.create_annotator(  # the bootstrap path: direct database access
                session, acting=service.OPERATOR, username=username, password=password,
                role=role,
                languages=[lang for lang in languages.split(",") if lang.strip()])
    except service.AnnotateError as error:
        raise UserError(f"not created: {error}") from error
    print(f"created {user.username} ({user.role}; {', '.join(user.languages) or 'no languages'})")
    return EXIT_OK


def streamlit_command(port: int, address: str, tls_cert: str | None = None,
                      tls_key: str | None = None) -> list[str]:
    command = [sys.executable, "-m", "streamlit", "run", str(APP),
               "--server.port", str(port), "--server.address", address,
               "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none", "--client.toolbarMode", "minimal",
               # annotators see a one-line message, never a traceback (the log keeps it)
               "--client.showErrorDetails", "none"]
    if tls_cert:
        command += ["--server.sslCertFile", tls_cert, "--server.sslKeyFile", tls_key]
    return command


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def clear_text_warning(address: str, port: int, *, tls: bool, behind_proxy: bool) -> str:
    """The start-up warning for a server others reach without TLS ("" when there is none)."""
    if tls or behind_proxy or address in LOOPBACK or address.startswith("127."):
        return ""
    return (f"warning: serving on http://{address}:{port} without TLS: passwords and sign-in "
            f"cookies cross the network in clear text. Give --tls-cert/--tls-key, or put a TLS "
            f"reverse proxy in front and pass --behind-tls-proxy (docs/deployment.md).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m annotate",
                                     description="Start the labelling app (Streamlit).")
    add_database_argument(parser)
    parser.add_argument("--port", type=int, default=8501, help="default 8501")
    parser.add_argument("--address", default="127.0.0.1",
                        help="interface to listen on (default 127.0.0.1; 0.0.0.0 for a team)")
    parser.add_argument("--tls-cert", metavar="FILE",
                        help="serve HTTPS with this certificate (PEM; with --tls-key)")
    parser.add_argument("--tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    parser.add_argument("--behind-tls-proxy", action="store_true",
                        help="a reverse proxy terminates TLS in front of this server (no warning)")
    parser.add_argument("--demo", action="store_true",
                        help="fill an empty database with the demo dataset and accounts first")
    account = parser.add_argument_group(
        "accounts", "create an account and exit (e.g. the first lead of a new database); the "
        "password is asked for, or read from $NLCE_NEW_PASSWORD")
    account.add_argument("--add-user", metavar="USERNAME")
    account.add_argument("--role", default="annotator", choices=("annotator", "lead", "expert"))
    account.add_argument("--languages", default="", help="comma-separated, e.g. nl,pl")
    account.add_argument("--sso-only", action="store_true",
                         help="no password: the account signs in by single sign-on only")
    args = parser.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    for path in filter(None, (args.tls_cert, args.tls_key)):
        if not Path(path).is_file():
            parser.error(f"TLS file not found: {path}")
    url = project_database(args.db, create=args.demo)  # only --demo makes a database
    if args.add_user:
        return add_user(url, args.add_user, args.role, args.languages, args.sso_only)
    if args.demo and database_is_empty(url):
        from db.demo import ensure_demo_database

        ensure_demo_database(url)
        print("demo data written (users anna, bas, lead; password 'demo')")
    env = dict(os.environ)
    env[DATABASE_URL_ENV] = url
    # A save blocked by a SQLite writer (a `db import`) gives up after 5 s instead of 30; the
    # page keeps the label and retries (annotate/outage.py).
    env.setdefault(SQLITE_BUSY_TIMEOUT_ENV, "5")
    if args.behind_tls_proxy:
        env["NLCE_BEHIND_PROXY"] = "1"  # annotate.ui.client_id: clients as the proxy names them
    shown = make_url(url).render_as_string(hide_password=True)  # never print a DB password
    scheme = "https" if args.tls_cert else "http"
    print(f"labelling app on {scheme}://{args.address}:{args.port} (database {shown})",
          flush=True)
    warning = clear_text_warning(args.address, args.port, tls=bool(args.tls_cert),
                                 behind_proxy=args.behind_tls_proxy)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    if fast_hashes():
        print(f"warning: ${FAST_HASHES_ENV} is set: new passwords get a test-only scrypt cost "
              f"that is cheap to crack; unset it on any real server", file=sys.stderr, flush=True)
    # Become the Streamlit server (same process id): TERM, Ctrl-C and a service manager reach
    # it directly, and no child is left holding the port when this command is stopped.
    command = streamlit_command(args.port, args.address, args.tls_cert, args.tls_key)
    os.execve(command[0], command, env)


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m annotate"))
