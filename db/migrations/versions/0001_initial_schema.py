"""Initial schema: corpus, humans, metrics and judges, as first released.

Revision ID: 0001
Revises: 
Create Date: 2026-11-22 07:45:31.066404
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('annotator',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('username', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('display_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('languages', sa.JSON(), nullable=False),
    sa.Column('interface_language', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('role', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('password_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint("role IN ('annotator', 'lead', 'expert')", name='ck_annotator_role'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('annotator', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_annotator_username'), ['username'], unique=True)

    op.create_table('dataset',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('description', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dataset_name'), ['name'], unique=True)

    op.create_table('error_code',
    sa.Column('code', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('level', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('parent', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('taxonomy_version', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('code')
    )
    op.create_table('judge_run',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('signature', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('backend', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('strategy', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('prompt_language', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('prompt_version', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('prompt_tokens', sa.Integer(), nullable=False),
    sa.Column('completion_tokens', sa.Integer(), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint("strategy IN ('standard', 'cot', 'rubric', 'hierarchical')", name='ck_judge_strategy'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('judge_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_run_model'), ['model'], unique=False)
        batch_op.create_index(batch_op.f('ix_judge_run_signature'), ['signature'], unique=True)

    op.create_table('metric_run',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('signature', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('metric', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('layer', sa.Integer(), nullable=True),
    sa.Column('tokenizer', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('context', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('noise', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=True),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('library_versions', sa.JSON(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint("context IN ('none', 'minimal', 'full')", name='ck_metric_run_context'),
    sa.CheckConstraint("noise IN ('none', 'uniform', 'targeted')", name='ck_metric_run_noise'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('metric_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_metric_run_metric'), ['metric'], unique=False)
        batch_op.create_index(batch_op.f('ix_metric_run_signature'), ['signature'], unique=True)

    op.create_table('source_file',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('external_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('natural_language', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('programming_language', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('repo', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('path', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('licence', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('content_sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.CheckConstraint('length(natural_language) BETWEEN 2 AND 8', name='ck_source_file_lang'),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('dataset_id', 'repo', 'path', name='uq_source_file_location')
    )
    with op.batch_alter_table('source_file', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_source_file_content_sha256'), ['content_sha256'], unique=False)
        batch_op.create_index(batch_op.f('ix_source_file_dataset_id'), ['dataset_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_source_file_external_id'), ['external_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_source_file_natural_language'), ['natural_language'], unique=False)

    op.create_table('target',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('source_file_id', sa.Integer(), nullable=False),
    sa.Column('span_start', sa.Integer(), nullable=False),
    sa.Column('span_end', sa.Integer(), nullable=False),
    sa.Column('original_comment', sa.Text(), nullable=False),
    sa.Column('comment_kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.CheckConstraint('span_start >= 0 AND span_start <= span_end', name='ck_target_span'),
    sa.ForeignKeyConstraint(['source_file_id'], ['source_file.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('source_file_id', 'span_start', 'span_end', name='uq_target_span')
    )
    with op.batch_alter_table('target', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_target_source_file_id'), ['source_file_id'], unique=False)

    op.create_table('generation',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('target_id', sa.Integer(), nullable=False),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('fim_input', sa.Text(), nullable=False),
    sa.Column('raw_output', sa.Text(), nullable=False),
    sa.Column('predicted_comment', sa.Text(), nullable=False),
    sa.Column('backend', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['target_id'], ['target.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('target_id', 'model', name='uq_generation_target_model')
    )
    with op.batch_alter_table('generation', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_generation_model'), ['model'], unique=False)
        batch_op.create_index(batch_op.f('ix_generation_target_id'), ['target_id'], unique=False)

    op.create_table('judge_response',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('target_id', sa.Integer(), nullable=False),
    sa.Column('cluster', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('order', sa.JSON(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('raw_response', sa.Text(), nullable=False),
    sa.Column('repairs', sa.JSON(), nullable=False),
    sa.Column('error', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('prompt_tokens', sa.Integer(), nullable=False),
    sa.Column('completion_tokens', sa.Integer(), nullable=False),
    sa.Column('latency_s', sa.Float(), nullable=False),
    sa.Column('cached', sa.Boolean(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint("status IN ('ok', 'parse_error', 'empty', 'refused', 'truncated', 'api_error')", name='ck_judge_response_status'),
    sa.ForeignKeyConstraint(['run_id'], ['judge_run.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['target_id'], ['target.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'target_id', 'cluster', name='uq_judge_response')
    )
    with op.batch_alter_table('judge_response', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_response_run_id'), ['run_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_judge_response_target_id'), ['target_id'], unique=False)

    op.create_table('noise_sample',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('target_id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('tokenizer', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.CheckConstraint("kind IN ('uniform', 'targeted')", name='ck_noise_kind'),
    sa.ForeignKeyConstraint(['target_id'], ['target.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('target_id', 'kind', 'tokenizer', 'seed', name='uq_noise_sample')
    )
    with op.batch_alter_table('noise_sample', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_noise_sample_target_id'), ['target_id'], unique=False)

    op.create_table('annotation',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('generation_id', sa.Integer(), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('accuracy', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('seconds_spent', sa.Float(), nullable=False),
    sa.Column('taxonomy_version', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint("accuracy IS NULL OR accuracy IN ('incorrect', 'partial', 'correct')", name='ck_annotation_accuracy'),
    sa.CheckConstraint("status IN ('done', 'skipped', 'flagged')", name='ck_annotation_status'),
    sa.CheckConstraint('seconds_spent >= 0', name='ck_annotation_seconds'),
    sa.ForeignKeyConstraint(['annotator_id'], ['annotator.id'], ),
    sa.ForeignKeyConstraint(['generation_id'], ['generation.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('generation_id', 'annotator_id', name='uq_annotation')
    )
    with op.batch_alter_table('annotation', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_annotation_annotator_id'), ['annotator_id'], unique=False)
        batch_op.create_index('ix_annotation_annotator_status', ['annotator_id', 'status'], unique=False)
        batch_op.create_index(batch_op.f('ix_annotation_generation_id'), ['generation_id'], unique=False)

    op.create_table('assignment',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('generation_id', sa.Integer(), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['annotator_id'], ['annotator.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['generation_id'], ['generation.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('generation_id', 'annotator_id', name='uq_assignment')
    )
    with op.batch_alter_table('assignment', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_assignment_annotator_id'), ['annotator_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_assignment_generation_id'), ['generation_id'], unique=False)

    op.create_table('gold_label',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('generation_id', sa.Integer(), nullable=False),
    sa.Column('adjudicator_id', sa.Integer(), nullable=False),
    sa.Column('accuracy', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('taxonomy_version', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint("accuracy IN ('incorrect', 'partial', 'correct')", name='ck_gold_accuracy'),
    sa.ForeignKeyConstraint(['adjudicator_id'], ['annotator.id'], ),
    sa.ForeignKeyConstraint(['generation_id'], ['generation.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('generation_id')
    )
    op.create_table('judge_verdict',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('generation_id', sa.Integer(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('accuracy', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('codes', sa.JSON(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint("accuracy IS NULL OR accuracy IN ('incorrect', 'partial', 'correct')", name='ck_judge_accuracy'),
    sa.CheckConstraint("status IN ('ok', 'parse_error', 'empty', 'refused', 'truncated', 'api_error')", name='ck_judge_verdict_status'),
    sa.ForeignKeyConstraint(['generation_id'], ['generation.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['judge_run.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'generation_id', name='uq_judge_verdict')
    )
    with op.batch_alter_table('judge_verdict', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_verdict_generation_id'), ['generation_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_judge_verdict_run_id'), ['run_id'], unique=False)

    op.create_table('metric_score',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('generation_id', sa.Integer(), nullable=True),
    sa.Column('noise_sample_id', sa.Integer(), nullable=True),
    sa.Column('precision', sa.Float(), nullable=True),
    sa.Column('recall', sa.Float(), nullable=True),
    sa.Column('f', sa.Float(), nullable=True),
    sa.Column('error', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.CheckConstraint('(generation_id IS NULL) <> (noise_sample_id IS NULL)', name='ck_score_subject'),
    sa.ForeignKeyConstraint(['generation_id'], ['generation.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['noise_sample_id'], ['noise_sample.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['metric_run.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'generation_id', name='uq_score_generation'),
    sa.UniqueConstraint('run_id', 'noise_sample_id', name='uq_score_noise')
    )
    with op.batch_alter_table('metric_score', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_metric_score_generation_id'), ['generation_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_metric_score_noise_sample_id'), ['noise_sample_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_metric_score_run_id'), ['run_id'], unique=False)

    op.create_table('annotation_code',
    sa.Column('annotation_id', sa.Integer(), nullable=False),
    sa.Column('code', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.ForeignKeyConstraint(['annotation_id'], ['annotation.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['code'], ['error_code.code'], ),
    sa.PrimaryKeyConstraint('annotation_id', 'code')
    )
    op.create_table('annotation_event',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('annotation_id', sa.Integer(), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('accuracy', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('codes', sa.JSON(), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('seconds_spent', sa.Float(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['annotation_id'], ['annotation.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['annotator_id'], ['annotator.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('annotation_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_annotation_event_annotation_id'), ['annotation_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_annotation_event_annotator_id'), ['annotator_id'], unique=False)

    op.create_table('gold_label_code',
    sa.Column('gold_label_id', sa.Integer(), nullable=False),
    sa.Column('code', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.ForeignKeyConstraint(['code'], ['error_code.code'], ),
    sa.ForeignKeyConstraint(['gold_label_id'], ['gold_label.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('gold_label_id', 'code')
    )


def downgrade() -> None:
    op.drop_table('gold_label_code')
    with op.batch_alter_table('annotation_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_annotation_event_annotator_id'))
        batch_op.drop_index(batch_op.f('ix_annotation_event_annotation_id'))

    op.drop_table('annotation_event')
    op.drop_table('annotation_code')
    with op.batch_alter_table('metric_score', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_metric_score_run_id'))
        batch_op.drop_index(batch_op.f('ix_metric_score_noise_sample_id'))
        batch_op.drop_index(batch_op.f('ix_metric_score_generation_id'))

    op.drop_table('metric_score')
    with op.batch_alter_table('judge_verdict', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_judge_verdict_run_id'))
        batch_op.drop_index(batch_op.f('ix_judge_verdict_generation_id'))

    op.drop_table('judge_verdict')
    op.drop_table('gold_label')
    with op.batch_alter_table('assignment', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_assignment_generation_id'))
        batch_op.drop_index(batch_op.f('ix_assignment_annotator_id'))

    op.drop_table('assignment')
    with op.batch_alter_table('annotation', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_annotation_generation_id'))
        batch_op.drop_index('ix_annotation_annotator_status')
        batch_op.drop_index(batch_op.f('ix_annotation_annotator_id'))

    op.drop_table('annotation')
    with op.batch_alter_table('noise_sample', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_noise_sample_target_id'))

    op.drop_table('noise_sample')
    with op.batch_alter_table('judge_response', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_judge_response_target_id'))
        batch_op.drop_index(batch_op.f('ix_judge_response_run_id'))

    op.drop_table('judge_response')
    with op.batch_alter_table('generation', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_generation_target_id'))
        batch_op.drop_index(batch_op.f('ix_generation_model'))

    op.drop_table('generation')
    with op.batch_alter_table('target', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_target_source_file_id'))

    op.drop_table('target')
    with op.batch_alter_table('source_file', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_source_file_natural_language'))
        batch_op.drop_index(batch_op.f('ix_source_file_external_id'))
        batch_op.drop_index(batch_op.f('ix_source_file_dataset_id'))
        batch_op.drop_index(batch_op.f('ix_source_file_content_sha256'))

    op.drop_table('source_file')
    with op.batch_alter_table('metric_run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_metric_run_signature'))
        batch_op.drop_index(batch_op.f('ix_metric_run_metric'))

    op.drop_table('metric_run')
    with op.batch_alter_table('judge_run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_judge_run_signature'))
        batch_op.drop_index(batch_op.f('ix_judge_run_model'))

    op.drop_table('judge_run')
    op.drop_table('error_code')
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dataset_name'))

    op.drop_table('dataset')
    with op.batch_alter_table('annotator', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_annotator_username'))

    op.drop_table('annotator')
