"""Sign-in security in the service layer, on a real SQLite database: one message for every
failure, a lockout against password guessing, the password policy, and server-side sessions
that sign-out, deactivation and a new password revoke."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select
from sqlmodel import Session

from annotate import service
from annotate.service.signin import throttle_key
from db import get_engine
from db import models as m

PASSWORD = "s3cret-pass"  # the accounts of conftest.app_db


@pytest.fixture
def session(app_db):
    with Session(get_engine(app_db)) as s:
        yield s


def _failure(session, username, password, **kwargs) -> str:
    with pytest.raises(service.AuthError) as failed:
        service.authenticate(session, username, password, **kwargs)
    return str(failed.value)


def test_every_failed_sign_in_gets_the_same_message(session, ids):
    service.create_annotator(session, acting=ids["lead"], username="eva@example.org",
                             password=None, languages=["nl"])  # single sign-on only
    service.create_annotator(session, acting=ids["lead"], username="gone", password=PASSWORD,
                             languages=["nl"])
    gone = next(a for a in service.list_annotators(session, acting=ids["lead"])
                if a.username == "gone")
    service.update_annotator(session, gone.id, acting=ids["lead"], active=False)
    session.commit()
    messages = {_failure(session, "nobody", PASSWORD),  # no such account
                _failure(session, "anna", "wrong-password"),  # wrong password
                _failure(session, "eva@example.org", PASSWORD),  # single sign-on only
                _failure(session, "gone", PASSWORD),  # deactivated, right password
                _failure(session, "", "")}
    assert messages == {service.SIGN_IN_FAILED}
    assert "anna" not in service.SIGN_IN_FAILED and "exist" not in service.SIGN_IN_FAILED


def test_five_failures_lock_the_account_even_for_the_right_password(session):
    for _ in range(service.MAX_FAILURES):
        assert _failure(session, "anna", "guess") == service.SIGN_IN_FAILED
    # the failures were committed by authenticate itself: a rollback does not erase them
    session.rollback()
    assert _failure(session, "Anna", PASSWORD) == service.SIGN_IN_FAILED
    # other accounts are not affected
    assert service.authenticate(session, "bas", PASSWORD).username == "bas"
    # after the lockout the right password works again, and clears the count
    later = datetime.now(timezone.utc) + service.LOCKOUT + timedelta(seconds=1)
    assert service.authenticate(session, "anna", PASSWORD, now=later).username == "anna"
    session.commit()
    assert session.get(m.SignInThrottle, "anna") is None


def test_guesses_while_locked_do_not_count_and_unknown_names_lock_alike(session):
    now = datetime.now(timezone.utc)
    for _ in range(service.MAX_FAILURES):
        _failure(session, "nobody", "guess", now=now)
    throttle = session.get(m.SignInThrottle, "nobody")
    assert throttle.locked_until is not None  # same behaviour as for a real name
    locked_until = throttle.locked_until
    _failure(session, "nobody", "guess", now=now + timedelta(minutes=1))
    session.refresh(throttle)
    assert throttle.locked_until == locked_until  # not extended by guesses during the lock


def test_password_policy_on_create_and_change(session, ids):
    with pytest.raises(service.AnnotateError,
                       match=r"a password needs at least 10 characters \(this one has 1\)"):
        service.create_annotator(session, acting=ids["lead"], username="carl", password="x",
                                 languages=["nl"])
    with pytest.raises(service.AnnotateError, match="at least 10 characters"):
        service.create_annotator(session, acting=ids["lead"], username="carl",
                                 password="          x", languages=["nl"])
    with pytest.raises(service.AnnotateError, match="at least 10 characters"):
        service.update_annotator(session, ids["anna"], acting=ids["lead"], password="short")
    session.rollback()
    assert service.authenticate(session, "anna", PASSWORD).username == "anna"
    assert not session.exec(select(m.Annotator).where(m.Annotator.username == "carl")).first()


def test_a_session_is_valid_until_sign_out_wherever_the_token_was_copied(session, ids):
    token = service.start_session(session, ids["anna"])
    session.commit()
    stored = session.exec(select(m.AnnotatorSession.token_sha256)).scalars().all()
    assert token not in stored  # only the digest is kept
    assert service.session_account(session, token).username == "anna"
    assert service.session_account(session, token + "x") is None
    assert service.end_session(session, token)
    session.commit()
    assert service.session_account(session, token) is None  # the copied cookie is dead too
    assert not service.end_session(session, token)


def test_deactivation_and_a_new_password_revoke_sessions(session, ids):
    bas = [service.start_session(session, ids["bas"]) for _ in range(2)]
    anna = service.start_session(session, ids["anna"])
    service.update_annotator(session, ids["bas"], acting=ids["lead"], password="a-new-password")
    assert [service.session_account(session, t) for t in bas] == [None, None]
    assert service.session_account(session, anna).username == "anna"
    service.update_annotator(session, ids["anna"], acting=ids["lead"], active=False)
    assert service.session_account(session, anna) is None
    service.update_annotator(session, ids["anna"], acting=ids["lead"], active=True)
    assert service.session_account(session, anna) is None  # re-activation opens no old session


def test_sessions_expire(session, ids):
    now = datetime.now(timezone.utc)
    token = service.start_session(session, ids["anna"], now=now)
    assert service.session_account(session, token, now=now + timedelta(hours=11)) is not None
    assert service.session_account(session, token,
                                   now=now + service.SESSION_LIFETIME + timedelta(1)) is None


@pytest.mark.postgres
def test_lockout_and_sessions_on_sqlite_and_postgresql(app_any_db):
    with Session(get_engine(app_any_db)) as session:
        people = {a.username: a.id for a in service.list_annotators(session,
                                                                    acting=service.OPERATOR)}
        for _ in range(service.MAX_FAILURES):
            _failure(session, "bas", "guess")
        assert _failure(session, "bas", PASSWORD) == service.SIGN_IN_FAILED
        gate = service.SignInGate(burst=100)
        for _ in range(service.MAX_FAILURES):  # per (name, client) on both backends
            _failure(session, "anna", "guess", client="ip:203.0.113.9", gate=gate)
        assert _failure(session, "anna", PASSWORD, client="ip:203.0.113.9", gate=gate) \
            == service.SIGN_IN_FAILED
        assert service.authenticate(session, "anna", PASSWORD, client="ip:198.51.100.4",
                                    gate=gate).username == "anna"
        session.commit()
        token = service.start_session(session, people["anna"])
        session.commit()
        assert service.session_account(session, token).username == "anna"
        service.update_annotator(session, people["anna"], acting=people["lead"], active=False)
        session.commit()
        assert service.session_account(session, token) is None


# ------------------------------------------------------------------ issue 26.4: per-client guards

class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_twenty_names_in_seven_and_a_half_seconds_from_one_client_are_not_all_checked(session):
    clock = Clock()
    gate = service.SignInGate(clock=clock)
    checked = refused = 0
    for k in range(20):  # a spray: one password over 20 names, 0.375 s apart
        try:
            service.authenticate(session, f"name{k}", "Summer2024!", client="ip:203.0.113.9",
                                 gate=gate)
        except service.TooManyAttempts as error:
            refused += 1
            assert 1 <= error.retry_after <= service.RATE_INTERVAL
        except service.AuthError:
            checked += 1
        clock.now += 7.5 / 20
    assert checked == service.RATE_BURST + 1 and refused == 14  # 5 at once, then 1 per 6 s
    # the limit is per client: another address, and the real user, are not slowed down
    assert service.authenticate(session, "anna", PASSWORD, client="ip:198.51.100.4",
                                gate=gate).username == "anna"
    clock.now += service.RATE_INTERVAL
    with pytest.raises(service.AuthError) as failed:  # refilled: checked again (and wrong)
        service.authenticate(session, "name0", "x", client="ip:203.0.113.9", gate=gate)
    assert not isinstance(failed.value, service.TooManyAttempts)


def test_an_outsider_cannot_lock_a_named_annotator_out(session):
    gate = service.SignInGate(burst=100)
    outsider, anna_at_work = "ip:203.0.113.9", "ip:198.51.100.4"
    for _ in range(service.MAX_FAILURES * 3):
        assert _failure(session, "anna", "guess", client=outsider, gate=gate) \
            == service.SIGN_IN_FAILED
    # the guesser is locked out of that name, even with the right password ...
    assert _failure(session, "anna", PASSWORD, client=outsider, gate=gate) \
        == service.SIGN_IN_FAILED
    # ... while anna signs in from her own client as usual
    assert service.authenticate(session, "anna", PASSWORD, client=anna_at_work,
                                gate=gate).username == "anna"
    session.commit()
    keys = session.exec(select(m.SignInThrottle.username)).scalars().all()
    assert keys == [throttle_key("anna", outsider)]
    assert "203.0.113.9" not in keys[0]  # addresses are not stored


def test_one_attempt_at_a_time_per_client_and_a_cap_on_concurrent_hashes():
    import threading
    import time

    gate = service.SignInGate(slots=2, burst=100)
    running = peak = 0
    lock = threading.Lock()

    def attempt(client):
        nonlocal running, peak
        with gate.attempt(client):
            with lock:
                running += 1
                peak = max(peak, running)
            time.sleep(0.2)
            with lock:
                running -= 1

    threads = [threading.Thread(target=attempt, args=(f"ip:10.0.0.{k}",)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 2  # 6 clients at once: never more than 2 scrypt checks (2 x 128 MiB)
    with gate.attempt("ip:10.0.0.1"):
        with pytest.raises(service.TooManyAttempts):  # the same client, a second tab
            with gate.attempt("ip:10.0.0.1"):
                pass
