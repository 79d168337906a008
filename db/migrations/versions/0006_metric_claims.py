"""Shards of a metric run claimed by concurrent scorers: `metric_claim` (metrics.claims).

Revision ID: 0006_metric_claims
Revises: 0005_ui_flag_reply
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0006_metric_claims"
down_revision = "0005_ui_flag_reply"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('metric_claim',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('shard', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('expires_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['metric_run.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'shard')
    )


def downgrade() -> None:
    op.drop_table('metric_claim')
