"""Accounts: creating and changing them (with the password policy), the interface language, and
the role check every lead action makes (`require_role`). Signing in is `signin`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from sqlalchemy import select, update
from sqlmodel import Session

from annotate.service.errors import AnnotateError, AuthError, NotAllowedError
from db import models as m
from db.passwords import hash_password
from db.usernames import account_named, case_twin, twin_message
from taxonomy import LANGUAGES

ROLES = m.ANNOTATOR_ROLES
LEAD_ROLES = ("lead",)
MIN_PASSWORD_LENGTH = 10  # the demo accounts' "demo" is written by db.demo, as demo data only


class Operator:
    """The acting party of a command run with direct access to the database (`python -m
    annotate --add-user`, test and benchmark set-up): it could write the tables itself, so it may
    do what a lead does. The app never acts as the operator; it passes the signed-in account."""

    def __repr__(self) -> str:
        return "OPERATOR"


OPERATOR = Operator()


@dataclass(frozen=True)
class AnnotatorInfo:
    id: int
    username: str
    display_name: str
    languages: tuple[str, ...]
    interface_language: str
    role: str
    active: bool = True
    has_password: bool = True  # False: signs in by single sign-on only

    @property
    def is_lead(self) -> bool:
        return self.role in LEAD_ROLES


def _info(row: m.Annotator) -> AnnotatorInfo:
    return AnnotatorInfo(row.id, row.username, row.display_name or row.username,
                         tuple(row.languages or ()), row.interface_language or "en", row.role,
                         bool(row.active), row.password_hash is not None)


# Who may do what: every lead action names its row here (what a refusal says, the roles that
# may). The app's pages and the commands go through the service, so this is the whole policy.
POLICY: dict[str, tuple[str, tuple[str, ...]]] = {
    "create_account": ("create accounts", LEAD_ROLES),
    "change_account": ("change accounts", LEAD_ROLES),
    "list_accounts": ("list accounts", LEAD_ROLES),
    "assign": ("assign items", LEAD_ROLES),
    "plan": ("make label plans", LEAD_ROLES),
    "unassign": ("take back assignments", LEAD_ROLES),
    "team_progress": ("see the team's progress", LEAD_ROLES),
    "read_flags": ("read flagged labels", LEAD_ROLES),
    "answer_flag": ("answer flags", LEAD_ROLES),
    "read_labels": ("read everyone's labels", LEAD_ROLES),
    "read_item": ("read any item", LEAD_ROLES),
    "read_gold": ("read gold labels", LEAD_ROLES),
    "adjudicate": ("adjudicate", ("lead", "expert")),
    "review_label": ("accept or reject labels", LEAD_ROLES),
    "export": ("export the labels", LEAD_ROLES),
}


def require_role(session: Session, acting: int | Operator, action: str
                 ) -> AnnotatorInfo | None:
    """Refuse (NotAllowedError) unless `acting` (an account id, or OPERATOR) is an active account
    with one of the roles POLICY gives `action`. The account is read now, so a role change or
    deactivation applies at once. Returns the acting account (None for the operator)."""
    action, roles = POLICY[action]
    if isinstance(acting, Operator):
        return None
    row = session.get(m.Annotator, account_id(acting, f"Not allowed to {action}: the acting "
                                                      f"account (or OPERATOR)"))
    if row is None:
        raise NotAllowedError(f"Not allowed to {action}: the acting account #{acting} does not "
                              f"exist.")
    if not row.active:
        raise NotAllowedError(f"Not allowed to {action}: account {row.username!r} is "
                              f"deactivated.")
    if row.role not in roles:
        raise NotAllowedError(f"Not allowed to {action}: only a {' or '.join(roles)} may, and "
                              f"{row.username!r} is {'an' if row.role[0] in 'aeiou' else 'a'} "
                              f"{row.role}.")
    return _info(row)


def account_id(value: object, what: str = "an account") -> int:
    """`value` if it is an account id: an int, and not a bool (`True` is 1 to Python, and would
    act as account #1); NotAllowedError naming `what` otherwise."""
    if type(value) is not int:
        raise NotAllowedError(f"{what} must be an account id (a whole number), not "
                              f"{value!r:.40}")
    return value


def account_row(session: Session, annotator_id: int) -> m.Annotator:
    """The account's row (`annotator_id` checked by `account_id`); AuthError when it no longer
    exists."""
    row = session.get(m.Annotator, account_id(annotator_id))
    if row is None:
        raise AuthError(f"account #{annotator_id} no longer exists")
    return row


def check_password(password: str) -> str:
    """The password if it meets the policy (at least MIN_PASSWORD_LENGTH characters, not only
    spaces), else AnnotateError saying what is missing."""
    if len(password.strip()) < MIN_PASSWORD_LENGTH:
        raise AnnotateError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters "
                            f"(this one has {len(password.strip())})")
    return password


def revoke_sessions(session: Session, annotator_id: int) -> int:
    """End every signed-in session of an account (deactivation, a new password). Returns how
    many were still open."""
    account_id(annotator_id)
    result = session.exec(update(m.AnnotatorSession)
                          .where(m.AnnotatorSession.annotator_id == annotator_id,
                                 m.AnnotatorSession.revoked_at.is_(None))
                          .values(revoked_at=m.utcnow()))
    return int(result.rowcount or 0)


def _check_languages(languages: Iterable[str]) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(str(lang).strip().lower() for lang in languages if str(lang).strip()))
    unknown = [lang for lang in out if lang not in LANGUAGES]
    if unknown:
        raise AnnotateError(f"unknown language {unknown[0]!r}; expected some of "
                            f"{', '.join(LANGUAGES)}")
    return out


def create_annotator(session: Session, *, acting: int | Operator, username: str,
                     password: str | None, languages: Iterable[str], role: str = "annotator",
                     display_name: str = "", interface_language: str = "en") -> AnnotatorInfo:
    """A new account (a lead action); the password is stored as a scrypt hash only (None:
    sign-in by OIDC only)."""
    require_role(session, acting, "create_account")
    username = (username or "").strip()
    if not username:
        raise AnnotateError("a username is required")
    if role not in ROLES:
        raise AnnotateError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    if account_named(session, username) is not None:
        twin = case_twin(session, username)
        raise AnnotateError(twin_message(username, twin) if twin is not None
                            else f"an account named {username!r} already exists")
    langs = _check_languages(languages)
    if not langs and role == "annotator":
        raise AnnotateError(f"annotator {username!r} needs at least one language")
    if interface_language not in LANGUAGES:
        raise AnnotateError(f"unknown interface language {interface_language!r}")
    if password is not None:
        check_password(password)
    row = m.Annotator(username=username, display_name=display_name or username,
                      languages=list(langs), role=role, interface_language=interface_language,
                      password_hash=hash_password(password) if password else None)
    session.add(row)
    session.flush()
    return _info(row)


def get_annotator(session: Session, annotator_id: int, *, active_only: bool = False
                  ) -> AnnotatorInfo:
    row = account_row(session, annotator_id)
    if active_only and not row.active:
        raise AuthError(f"Account {row.username!r} is deactivated.")
    return _info(row)


def update_annotator(session: Session, annotator_id: int, *, acting: int | Operator,
                     languages: Iterable[str] | None = None, role: str | None = None,
                     active: bool | None = None, password: str | None = None) -> AnnotatorInfo:
    """Change an account's languages, role, active flag or password (None: leave as is; a lead
    action). Labels are never touched; items in a dropped language just leave the queue. A new
    password or a deactivation ends the account's signed-in sessions."""
    require_role(session, acting, "change_account")
    row = account_row(session, annotator_id)
    if password:
        check_password(password)
    stops_leading = row.role in LEAD_ROLES and row.active and (
        (role is not None and role not in LEAD_ROLES) or active is False)
    if stops_leading and not session.exec(select(m.Annotator.id).where(
            m.Annotator.role.in_(LEAD_ROLES), m.Annotator.active.is_(True),
            m.Annotator.id != row.id)).first():
        raise AnnotateError(f"{row.username!r} is the only active lead; make another account "
                            f"lead first, or nobody could manage the team")
    if languages is not None:
        langs = _check_languages(languages)
        if not langs and (role or row.role) == "annotator":
            raise AnnotateError(f"annotator {row.username!r} needs at least one language")
        row.languages = list(langs)
    if role is not None:
        if role not in ROLES:
            raise AnnotateError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        row.role = role
    if password:
        row.password_hash = hash_password(check_password(password))
        revoke_sessions(session, row.id)  # a copied cookie must not outlive a password change
    if active is not None:
        row.active = bool(active)
        if not row.active:
            revoke_sessions(session, row.id)
    session.add(row)
    session.flush()
    return _info(row)


def list_annotators(session: Session, *, acting: int | Operator) -> list[AnnotatorInfo]:
    """Every account with its role and languages (a lead action)."""
    require_role(session, acting, "list_accounts")
    return all_annotators(session)


def all_annotators(session: Session) -> list[AnnotatorInfo]:
    """Every account, for callers that have checked the role already."""
    rows = session.exec(select(m.Annotator).order_by(m.Annotator.username)).scalars().all()
    return [_info(r) for r in rows]


def set_interface_language(session: Session, annotator_id: int, lang: str) -> None:
    if lang not in LANGUAGES:
        raise AnnotateError(f"unknown interface language {lang!r}")
    row = account_row(session, annotator_id)
    row.interface_language = lang
    session.add(row)
