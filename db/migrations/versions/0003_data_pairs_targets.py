"""Pairs targets: a target may belong to a dataset directly, without a source file (reference /
prediction / label pairs imported with `--format pairs`), with its own item id, language and
optional context text.

Revision ID: 0003_data
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0003_data"
down_revision = "0003_annotate"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("target") as batch_op:
        batch_op.alter_column("source_file_id", existing_type=sa.Integer(), nullable=True)
        batch_op.add_column(sa.Column("dataset_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("external_id", sa.String(), nullable=True))
        batch_op.add_column(sa.Column("natural_language", sa.String(), nullable=True))
        batch_op.add_column(sa.Column("context", sa.Text(), nullable=True))
        batch_op.create_foreign_key("fk_target_dataset_id", "dataset", ["dataset_id"], ["id"],
                                    ondelete="CASCADE")
        batch_op.create_index("ix_target_dataset_id", ["dataset_id"], unique=False)
        batch_op.create_unique_constraint("uq_target_item", ["dataset_id", "external_id"])
        batch_op.create_check_constraint("ck_target_owner",
                                         "(source_file_id IS NULL) <> (dataset_id IS NULL)")
        batch_op.create_check_constraint(
            "ck_target_lang",
            "source_file_id IS NOT NULL OR length(natural_language) BETWEEN 2 AND 8")


def downgrade() -> None:
    op.execute("DELETE FROM target WHERE source_file_id IS NULL")
    with op.batch_alter_table("target") as batch_op:
        batch_op.drop_constraint("ck_target_lang", type_="check")
        batch_op.drop_constraint("ck_target_owner", type_="check")
        batch_op.drop_constraint("uq_target_item", type_="unique")
        batch_op.drop_index("ix_target_dataset_id")
        batch_op.drop_constraint("fk_target_dataset_id", type_="foreignkey")
        batch_op.drop_column("context")
        batch_op.drop_column("natural_language")
        batch_op.drop_column("external_id")
        batch_op.drop_column("dataset_id")
        batch_op.alter_column("source_file_id", existing_type=sa.Integer(), nullable=False)
