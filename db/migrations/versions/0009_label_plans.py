"""Active labelling plans (annotate.plan, agreement.plans): `label_plan`, one row per plan, and
`label_plan_item`, its generations with the judge's value, their probability and whether they
were drawn.

Revision ID: 0009_label_plans
Revises: 0008_judges_batch
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0009_label_plans"
down_revision = "0008_judges_batch"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "label_plan",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("judge_run_id", sa.Integer(), nullable=False),
        sa.Column("predictor", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("estimand", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("language", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("budget", sa.Float(), nullable=False),
        sa.Column("min_probability", sa.Float(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("method", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("target_width", sa.Float(), nullable=True),
        sa.Column("compare", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.CheckConstraint("estimand IN ('mean_score', 'share_correct', 'share_partial', "
                           "'share_incorrect')", name="ck_plan_estimand"),
        sa.ForeignKeyConstraint(["dataset_id"], ["dataset.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["judge_run_id"], ["judge_run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_label_plan_name"), "label_plan", ["name"], unique=True)
    op.create_index(op.f("ix_label_plan_dataset_id"), "label_plan", ["dataset_id"], unique=False)
    op.create_index(op.f("ix_label_plan_judge_run_id"), "label_plan", ["judge_run_id"],
                    unique=False)
    op.create_table(
        "label_plan_item",
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("generation_id", sa.Integer(), nullable=False),
        sa.Column("pilot", sa.Boolean(), nullable=False),
        sa.Column("predictor_value", sa.Float(), nullable=False),
        sa.Column("probability", sa.Float(), nullable=False),
        sa.Column("drawn", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["generation_id"], ["generation.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["plan_id"], ["label_plan.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("plan_id", "generation_id"),
    )
    op.create_index(op.f("ix_label_plan_item_generation_id"), "label_plan_item",
                    ["generation_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_label_plan_item_generation_id"), table_name="label_plan_item")
    op.drop_table("label_plan_item")
    op.drop_index(op.f("ix_label_plan_judge_run_id"), table_name="label_plan")
    op.drop_index(op.f("ix_label_plan_dataset_id"), table_name="label_plan")
    op.drop_index(op.f("ix_label_plan_name"), table_name="label_plan")
    op.drop_table("label_plan")
