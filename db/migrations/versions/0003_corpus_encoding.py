"""source_file.source_encoding: the encoding a corpus file was read in (content stays Unicode).

Revision ID: 0003_corpus
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0003_corpus"
down_revision = "0003_judges"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("source_file") as batch_op:
        batch_op.add_column(sa.Column("source_encoding", sa.String(), nullable=False,
                                      server_default="utf-8"))


def downgrade() -> None:
    with op.batch_alter_table("source_file") as batch_op:
        batch_op.drop_column("source_encoding")
