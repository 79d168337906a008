"""Account names told apart in Python: `annotator.username_key` (db.models.username_key: NFKC and
str.casefold), unique. Before, sign-in compared lower(username), which SQLite folds for ASCII
only: 'Łukasz' could not sign in there, and 'Ελένη' beside 'ελένη' was let in.

Every existing account gets its key, in id order; an account that an older release let in
beside its case twin keeps no key (a warning names both) and signs in by its exact name only.

Revision ID: 0011_username_key
Revises: 0010_plan_label_policy
"""
import logging

import sqlalchemy as sa
from alembic import op

from db.models import username_key

revision = "0011_username_key"
down_revision = "0010_plan_label_policy"
branch_labels = None
depends_on = None

log = logging.getLogger(__name__)


def upgrade() -> None:
    with op.batch_alter_table("annotator") as batch_op:
        batch_op.add_column(sa.Column("username_key", sa.String(), nullable=True))
    annotator = sa.table("annotator", sa.column("id", sa.Integer),
                         sa.column("username", sa.String), sa.column("username_key", sa.String))
    connection = op.get_bind()
    keyed: dict[str, str] = {}
    for account_id, username in connection.execute(
            sa.select(annotator.c.id, annotator.c.username).order_by(annotator.c.id)):
        key = username_key(username)
        if key in keyed:
            log.warning("account %r differs only in case from the account %r: it signs in by "
                        "its exact name only", username, keyed[key])
            continue
        keyed[key] = username
        connection.execute(annotator.update().where(annotator.c.id == account_id)
                           .values(username_key=key))
    with op.batch_alter_table("annotator") as batch_op:
        batch_op.create_unique_constraint("uq_annotator_username_key", ["username_key"])


def downgrade() -> None:
    with op.batch_alter_table("annotator") as batch_op:
        batch_op.drop_constraint("uq_annotator_username_key", type_="unique")
        batch_op.drop_column("username_key")
