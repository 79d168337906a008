"""The lead's answer to a flagged label: `flag_reply`, one per annotation, shown to its
annotator on the item.

Revision ID: 0005_ui_flag_reply
Revises: 0004_ui_gold_history
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0005_ui_flag_reply"
down_revision = "0004_ui_gold_history"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('flag_reply',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('annotation_id', sa.Integer(), nullable=False),
    sa.Column('lead_id', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['annotation_id'], ['annotation.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['lead_id'], ['annotator.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('annotation_id')
    )


def downgrade() -> None:
    op.drop_table('flag_reply')
