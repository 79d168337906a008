"""Judge runs through an OpenAI-style Batch API (judges.batch): the `judge_batch` table, one row
per submission, and two verdict statuses of their own: `batch_error` (a batch's line failed) and
`expired` (the batch expired or was cancelled before the request was answered).

Revision ID: 0008_judges_batch
Revises: 0007_judges_tokens
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0008_judges_batch"
down_revision = "0007_judges_tokens"
branch_labels = None
depends_on = None

BEFORE = ("ok", "parse_error", "empty", "refused", "truncated", "api_error")
AFTER = BEFORE + ("batch_error", "expired")
CHECKS = {"judge_response": "ck_judge_response_status", "judge_verdict": "ck_judge_verdict_status"}


def _status_checks(statuses: tuple[str, ...]) -> None:
    quoted = ", ".join(f"'{s}'" for s in statuses)
    for table, name in CHECKS.items():
        with op.batch_alter_table(table) as batch_op:
            batch_op.drop_constraint(name, type_="check")
            batch_op.create_check_constraint(name, f"status IN ({quoted})")


def upgrade() -> None:
    op.create_table('judge_batch',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('submission', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('batch_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('input_file_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('output_file_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('error_file_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('requests', sa.JSON(), nullable=False),
    sa.Column('counts', sa.JSON(), nullable=False),
    sa.Column('error', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('finished_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['run_id'], ['judge_run.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('submission')
    )
    op.create_index(op.f('ix_judge_batch_run_id'), 'judge_batch', ['run_id'], unique=False)
    op.create_index(op.f('ix_judge_batch_batch_id'), 'judge_batch', ['batch_id'], unique=False)
    _status_checks(AFTER)


def downgrade() -> None:
    failed = ", ".join(f"'{s}'" for s in AFTER[len(BEFORE):])
    for table in CHECKS:  # no answer either way: api_error, asked again on the next run
        op.execute(f"UPDATE {table} SET status = 'api_error' WHERE status IN ({failed})")
    _status_checks(BEFORE)
    op.drop_index(op.f('ix_judge_batch_batch_id'), table_name='judge_batch')
    op.drop_index(op.f('ix_judge_batch_run_id'), table_name='judge_batch')
    op.drop_table('judge_batch')
