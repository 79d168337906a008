"""`python -m annotate`: --add-user (the first lead of a new database, without the app), and
stopping the server with TERM or Ctrl-C, as a real process."""
from __future__ import annotations

import signal
import socket
import time
import urllib.request

import pytest
from sqlmodel import Session

from annotate import service
from annotate.__main__ import main as annotate_main
from db import get_engine
from testing.cli import as_command, run_in_process

main = as_command(annotate_main, "python -m annotate")


def test_add_user_creates_a_hashed_account_and_refuses_bad_input(db_url, monkeypatch, capsys):
    monkeypatch.setenv("NLCE_NEW_PASSWORD", "first-lead-pw")
    assert main(["--db", db_url, "--add-user", "lead@example.org", "--role", "lead"]) == 2
    assert "no database at" in capsys.readouterr().err  # --add-user makes no database
    assert run_in_process("db", "upgrade", "--db", db_url).returncode == 0
    assert main(["--db", db_url, "--add-user", "lead@example.org", "--role", "lead",
                 "--languages", "nl,pl"]) == 0
    assert "created lead@example.org (lead; nl, pl)" in capsys.readouterr().out
    with Session(get_engine(db_url)) as session:
        assert service.authenticate(session, "lead@example.org", "first-lead-pw").is_lead
    assert main(["--db", db_url, "--add-user", "lead@example.org"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["--db", db_url, "--add-user", "x", "--languages", "de"]) == 2
    assert "unknown language 'de'" in capsys.readouterr().err
    # no password: only on request (single sign-on); an empty one is refused like a short one
    assert main(["--db", db_url, "--add-user", "sso@example.org", "--languages", "nl",
                 "--sso-only"]) == 0
    with Session(get_engine(db_url)) as session:
        people = {p.username: p for p in service.list_annotators(session,
                                                                 acting=service.OPERATOR)}
        assert not people["sso@example.org"].has_password
        assert people["lead@example.org"].has_password
        with pytest.raises(service.AnnotateError, match="at least 10 characters"):
            service.create_annotator(session, acting=service.OPERATOR, username="empty",
                                     password="", languages=["nl"])
    get_engine(db_url).dispose()
    get_engine.cache_clear()


def _port_is_free(port: int) -> bool:
    """Whether a server could listen on the port now (as Streamlit does: SO_REUSEADDR, so the
    health check's closed connections in TIME_WAIT do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "Ctrl-C"])
def test_stopping_the_command_stops_the_server_and_frees_the_port(app_db, launch_app, sig):
    """The signal goes to the command's own process only (as `kill PID` or a service manager
    sends it); afterwards nothing answers on the port and a new start can take it."""
    app = launch_app(app_db)
    app.proc.send_signal(sig)
    assert app.proc.wait(timeout=20) is not None
    deadline = time.time() + 10
    while not _port_is_free(app.port) and time.time() < deadline:
        time.sleep(0.2)
    assert _port_is_free(app.port), "a process still holds the port after the command stopped"
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{app.url}/_stcore/health", timeout=2)
    again = launch_app(app_db, port=app.port)  # the next start gets the port
    assert again.proc.poll() is None


def test_serving_to_the_network_without_tls_warns_at_start(app_db, launch_app):
    app = launch_app(app_db, extra_args=("--address", "0.0.0.0"))
    log = app.log.read_text()
    assert f"warning: serving on http://0.0.0.0:{app.port} without TLS" in log
    assert "--tls-cert" in log and "--behind-tls-proxy" in log


def test_no_tls_warning_on_loopback_or_behind_a_proxy(app_db, launch_app, capsys):
    from annotate.__main__ import clear_text_warning

    app = launch_app(app_db)  # 127.0.0.1: nobody else can listen in
    assert "without TLS" not in app.log.read_text()
    assert clear_text_warning("0.0.0.0", 8501, tls=False, behind_proxy=True) == ""
    assert clear_text_warning("10.0.0.5", 8501, tls=True, behind_proxy=False) == ""
    assert main(["--db", app_db, "--tls-cert", "missing.pem"]) == 2
    assert "--tls-cert and --tls-key go together" in capsys.readouterr().err


def test_annotators_never_see_error_details():
    from annotate.__main__ import streamlit_command

    command = streamlit_command(8501, "127.0.0.1")
    assert command[command.index("--client.showErrorDetails") + 1] == "none"
