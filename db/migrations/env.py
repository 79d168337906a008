"""Alembic environment: the target schema is db.models; the URL comes from db.migrate."""
from alembic import context
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers every table on SQLModel.metadata)

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `python -m db upgrade` (db.migrate.upgrade)")

context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
