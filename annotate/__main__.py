"""`python -m annotate [--db URL] [--port 8501] [--demo]`: start the labelling app.

Becomes `streamlit run annotate/app.py` (exec: one process, so stopping it stops the server)
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

from db import DATABASE_URL_ENV, add_database_argument, resolve_url

APP = Path(__file__).with_name("app.py")


def database_is_empty(url: str) -> bool:
    from sqlalchemy import func, select

    from db import models as m
    from db import session_scope

    with session_scope(url) as session:
        return session.exec(select(func.count()).select_from(m.Generation)).scalar_one() == 0


def add_user(url: str, username: str, role: str, languages: str) -> int:
    from annotate import service
    from db import session_scope

    password = os.environ.get("NLCE_NEW_PASSWORD") or getpass.getpass(f"password for {username}: ")
    try:
        with session_scope(url) as session:
            user = service.create_annotator(  # the bootstrap path: direct database access
                session, acting=service.OPERATOR, username=username, password=password or None,
                role=role,
                languages=[lang for lang in languages.split(",") if lang.strip()])
    except service.AnnotateError as error:
        print(f"not created: {error}", file=sys.stderr)
        return 2
    print(f"created {user.username} ({user.role}; {', '.join(user.languages) or 'no languages'})")
    return 0


def streamlit_command(port: int, address: str) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(APP),
            "--server.port", str(port), "--server.address", address,
            "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none", "--client.toolbarMode", "minimal"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m annotate",
                                     description="Start the labelling app (Streamlit).")
    add_database_argument(parser)
    parser.add_argument("--port", type=int, default=8501, help="default 8501")
    parser.add_argument("--address", default="127.0.0.1",
                        help="interface to listen on (default 127.0.0.1; 0.0.0.0 for a team)")
    parser.add_argument("--demo", action="store_true",
                        help="fill an empty database with the demo dataset and accounts first")
    account = parser.add_argument_group(
        "accounts", "create an account and exit (e.g. the first lead of a new database); the "
        "password is asked for, or read from $NLCE_NEW_PASSWORD")
    account.add_argument("--add-user", metavar="USERNAME")
    account.add_argument("--role", default="annotator", choices=("annotator", "lead", "expert"))
    account.add_argument("--languages", default="", help="comma-separated, e.g. nl,pl")
    args = parser.parse_args(argv)
    url = resolve_url(args.db)
    if args.add_user:
        return add_user(url, args.add_user, args.role, args.languages)
    if args.demo and database_is_empty(url):
        from db.demo import ensure_demo_database

        ensure_demo_database(url)
        print("demo data written (users anna, bas, lead; password 'demo')")
    env = dict(os.environ)
    env[DATABASE_URL_ENV] = url
    shown = make_url(url).render_as_string(hide_password=True)  # never print a DB password
    print(f"labelling app on http://{args.address}:{args.port} (database {shown})", flush=True)
    # Become the Streamlit server (same process id): TERM, Ctrl-C and a service manager reach
    # it directly, and no child is left holding the port when this command is stopped.
    command = streamlit_command(args.port, args.address)
    os.execve(command[0], command, env)


if __name__ == "__main__":
    from nlce.cli import run_main

    sys.exit(run_main(main, prog="python -m annotate"))
