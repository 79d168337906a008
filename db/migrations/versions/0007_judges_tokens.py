"""A judge run's and a response's token counts may be unknown (NULL) rather than a false 0: judge
results imported from files that kept no token usage (judges.importer), as for the cost.

Revision ID: 0007_judges_tokens
Revises: 0006_metric_claims
"""
import sqlalchemy as sa
from alembic import op

revision = "0007_judges_tokens"
down_revision = "0006_metric_claims"
branch_labels = None
depends_on = None

TABLES = ("judge_run", "judge_response")
COLUMNS = ("prompt_tokens", "completion_tokens")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch_op:
            for column in COLUMNS:
                batch_op.alter_column(column, existing_type=sa.Integer(), nullable=True)


def downgrade() -> None:
    for table in TABLES:
        for column in COLUMNS:
            op.execute(f"UPDATE {table} SET {column} = 0 WHERE {column} IS NULL")
        with op.batch_alter_table(table) as batch_op:
            for column in COLUMNS:
                batch_op.alter_column(column, existing_type=sa.Integer(), nullable=False)
