"""The labelling app's server-side sign-in: `annotator_session` (a browser's session, revoked by
sign-out and deactivation, kept across restarts) and `sign_in_throttle` (failed password
sign-ins per username, for the lockout).

Revision ID: 0003_annotate
Revises: 0002
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0003_annotate"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('annotator_session',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('token_sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('revoked_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['annotator_id'], ['annotator.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('annotator_session', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_annotator_session_annotator_id'), ['annotator_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_annotator_session_token_sha256'), ['token_sha256'], unique=True)

    op.create_table('sign_in_throttle',
    sa.Column('username', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('locked_until', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_failure_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('username')
    )


def downgrade() -> None:
    op.drop_table('sign_in_throttle')
    with op.batch_alter_table('annotator_session', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_annotator_session_token_sha256'))
        batch_op.drop_index(batch_op.f('ix_annotator_session_annotator_id'))
    op.drop_table('annotator_session')
