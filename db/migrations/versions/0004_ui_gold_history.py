"""Gold label history: `gold_label_event`, one row per adjudication with the full gold label as
stored then, so a new adjudication never loses the earlier one (like annotation_event).

Revision ID: 0004_ui_gold_history
Revises: 0003_annotate
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0004_ui_gold_history"
down_revision = "0003_corpus"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('gold_label_event',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('gold_label_id', sa.Integer(), nullable=False),
    sa.Column('adjudicator_id', sa.Integer(), nullable=False),
    sa.Column('accuracy', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('codes', sa.JSON(), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['adjudicator_id'], ['annotator.id'], ),
    sa.ForeignKeyConstraint(['gold_label_id'], ['gold_label.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('gold_label_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_gold_label_event_gold_label_id'), ['gold_label_id'], unique=False)
    # the gold labels stored before this revision start their history with what they hold now
    bind = op.get_bind()
    codes: dict[int, list[str]] = {}
    for gold_id, code in bind.execute(sa.text(
            "SELECT gold_label_id, code FROM gold_label_code ORDER BY code")):
        codes.setdefault(gold_id, []).append(code)
    event = sa.table("gold_label_event", sa.column("gold_label_id"), sa.column("adjudicator_id"),
                     sa.column("accuracy"), sa.column("codes", sa.JSON), sa.column("note"),
                     sa.column("created_at"))
    rows = [{"gold_label_id": g, "adjudicator_id": a, "accuracy": acc, "codes": codes.get(g, []),
             "note": note or "", "created_at": created}
            for g, a, acc, note, created in bind.execute(sa.text(
                "SELECT id, adjudicator_id, accuracy, note, created_at FROM gold_label"))]
    if rows:
        op.bulk_insert(event, rows)


def downgrade() -> None:
    with op.batch_alter_table('gold_label_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_gold_label_event_gold_label_id'))
    op.drop_table('gold_label_event')
