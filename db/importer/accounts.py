"""What an import may do to accounts (`annotator` records): a mixin of `RecordWriter`.

`ACCOUNTS_NONE` only refers to existing accounts; `ACCOUNTS_CREATE` (`db import --accounts`)
creates new ones (annotators and experts, never leads) and updates their languages and names;
`ACCOUNTS_TRUSTED` (`--trust-accounts`) also takes the password hashes of new accounts (none
weaker than `db.passwords.minimum_cost`; an existing account keeps its password, or its lack of
one). No import creates a name that differs only in case from an account's ('ANNA' beside
'anna'): sign-in does not tell them apart. Privileges need their own flag (`--account-privileges`,
`RecordWriter(privileges=True)`): creating a lead account, and changing whether an existing
account is active (re-activating an account a lead deactivated would let its old password sign
in again). No import changes the role of an existing account: that is done on the Team page.
"""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import select

from db import models as m
from db.importer.errors import Reject
from db.passwords import PasswordHashError, check_importable
from db.usernames import case_twin, twin_message
from taxonomy.languages import LanguageCodeError, check_app_languages

ACCOUNTS_NONE, ACCOUNTS_CREATE, ACCOUNTS_TRUSTED = "none", "create", "trusted"
ACCOUNT_POLICIES = (ACCOUNTS_NONE, ACCOUNTS_CREATE, ACCOUNTS_TRUSTED)


def record_time(value, field_name: str) -> datetime | None:
    """An exported ISO 8601 time (UTC when it names no zone), or None."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise Reject(f"expected an ISO 8601 time, got {value!r:.60}", field_name) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class AccountWriter:
    """`_write_annotator`; needs RecordWriter's session, caches, `_upsert`, `accounts` and
    `privileges`."""

    def _write_annotator(self, rec, policy: str | None = None):
        policy = policy or self.accounts
        username = rec["username"]
        role = rec.get("role", "annotator")
        if role not in m.ANNOTATOR_ROLES:
            raise Reject(f"unknown role {role!r}; expected one of {', '.join(m.ANNOTATOR_ROLES)}",
                          "role")
        existing = self.session.execute(select(m.Annotator).where(
            m.Annotator.username == username)).scalars().first()
        if rec.get("password_hash") and policy != ACCOUNTS_TRUSTED:
            raise Reject("password hashes are imported only with --trust-accounts (a trusted "
                         "migration)", "password_hash")
        if rec.get("password_hash"):
            try:
                check_importable(rec["password_hash"])
            except PasswordHashError as error:
                raise Reject(str(error), "password_hash") from None
        if existing is None:
            self._refuse_case_twin(username)
        if existing is None and policy == ACCOUNTS_NONE:
            raise Reject(f"account {username!r} does not exist; an import creates accounts only "
                         f"with --accounts", "username")
        if existing is not None and "role" in rec and existing.role != role:
            raise Reject(f"account {username!r} has role {existing.role!r}; an import never "
                         f"changes a role (a lead changes it on the Team page)", "role")
        if existing is not None and policy == ACCOUNTS_NONE:
            self._annotators[username] = existing.id  # referred to, left as it is
            return "unchanged"
        if existing is None and role == "lead" and not self.privileges:
            raise Reject(f"account {username!r} would be a new lead account; an import creates "
                         f"leads only with --account-privileges", "role")
        if existing is not None and "active" in rec and bool(rec["active"]) != bool(
                existing.active) and not self.privileges:
            raise Reject(f"account {username!r} is {'active' if existing.active else 'deactivated'}"
                         f" here and the record would {'de' if existing.active else 're-'}activate"
                         f" it; an import does that only with --account-privileges (or leave "
                         f"'active' out of the record)", "active")
        values = {} if existing is not None else {"role": role}
        for name in ("languages", "display_name", "interface_language", "active"):
            if name in rec:
                values[name] = rec[name]
        if "languages" in values:
            try:
                values["languages"] = check_app_languages(values["languages"])
            except LanguageCodeError as error:
                raise Reject(str(error), "languages") from None
        if rec.get("password_hash") and existing is None:
            # only a new account takes a hash: an existing one keeps its password, or its lack
            # of one (a single sign-on account must not gain a password sign-in)
            values["password_hash"] = rec["password_hash"]
        if existing is None and "display_name" not in values:
            values["display_name"] = username
        row, outcome = self._upsert(m.Annotator, {"username": username}, values,
                                    rec.get("created_at"))
        self._annotators[username] = row.id
        return outcome

    def _refuse_case_twin(self, username: str) -> None:
        """Sign-in does not tell 'ANNA' from 'anna', nor 'ŁUKASZ' from 'Łukasz' (nor does the
        Team page let both exist): a name that differs only in case from an account's is
        refused."""
        twin = case_twin(self.session, username)
        if twin is not None:
            raise Reject(twin_message(username, twin), "username")
