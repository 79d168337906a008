"""A judge run's strategy may be the name of a prompt template file (judges.templates), not only
one of the four built-in strategies: drop the CHECK constraint on judge_run.strategy.

Revision ID: 0003_judges
Revises: 0002
"""
from alembic import op

revision = "0003_judges"
down_revision = "0003_data"
branch_labels = None
depends_on = None

BUILT_IN = ("standard", "cot", "rubric", "hierarchical")


def upgrade() -> None:
    with op.batch_alter_table("judge_run") as batch_op:
        batch_op.drop_constraint("ck_judge_strategy", type_="check")


def downgrade() -> None:
    quoted = ", ".join(f"'{s}'" for s in BUILT_IN)
    # runs of prompt templates cannot be kept under the old constraint
    op.execute(f"DELETE FROM judge_run WHERE strategy NOT IN ({quoted})")
    with op.batch_alter_table("judge_run") as batch_op:
        batch_op.create_check_constraint("ck_judge_strategy", f"strategy IN ({quoted})")
