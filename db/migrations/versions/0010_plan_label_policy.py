"""A label plan remembers the label policy its pilot was read with (`annotate.plan --labels`), so
its status (`annotate.plan --status`, the lead's Team page) reads the labels the same way.

Revision ID: 0010_plan_label_policy
Revises: 0009_label_plans
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0010_plan_label_policy"
down_revision = "0009_label_plans"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("label_plan") as batch_op:
        batch_op.add_column(sa.Column("label_policy", sqlmodel.sql.sqltypes.AutoString(),
                                      nullable=False, server_default="auto"))


def downgrade() -> None:
    with op.batch_alter_table("label_plan") as batch_op:
        batch_op.drop_column("label_policy")
