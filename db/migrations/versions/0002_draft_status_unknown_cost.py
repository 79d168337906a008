"""Annotations may be saved as 'draft' (codes and note autosaved before an accuracy label is
chosen); a judge run's cost may be unknown (NULL) rather than a false 0.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _status_check(batch_op, statuses: tuple[str, ...]) -> None:
    batch_op.drop_constraint("ck_annotation_status", type_="check")
    quoted = ", ".join(f"'{s}'" for s in statuses)
    batch_op.create_check_constraint("ck_annotation_status", f"status IN ({quoted})")


def upgrade() -> None:
    with op.batch_alter_table("annotation") as batch_op:
        _status_check(batch_op, ("done", "skipped", "flagged", "draft"))
    with op.batch_alter_table("judge_run") as batch_op:
        batch_op.alter_column("cost_usd", existing_type=sa.Float(), nullable=True)


def downgrade() -> None:
    op.execute("UPDATE annotation SET status = 'skipped' WHERE status = 'draft'")
    op.execute("UPDATE judge_run SET cost_usd = 0 WHERE cost_usd IS NULL")
    with op.batch_alter_table("annotation") as batch_op:
        _status_check(batch_op, ("done", "skipped", "flagged"))
    with op.batch_alter_table("judge_run") as batch_op:
        batch_op.alter_column("cost_usd", existing_type=sa.Float(), nullable=False)
