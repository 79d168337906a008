"""Schema creation and upgrades through Alembic migrations (db/migrations/versions).

A new database is built by running every migration; a running team database moves to a new
version with `python -m db upgrade`, keeping its rows. `schema_differences` proves the migrations and
the SQLModel tables describe the same schema.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

MIGRATIONS = Path(__file__).parent / "migrations"
FIRST_REVISION = "0001"


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


@lru_cache(maxsize=1)
def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _migrate(engine: Engine, run) -> None:
    """Run migrations in one transaction. SQLite alters a table by copying it and dropping the
    original; with foreign keys on, that drop would cascade into the rows that point at it (an
    annotation's codes), so foreign keys are off while it runs and checked afterwards."""
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        if sqlite:
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        try:
            with connection.begin():
                run(alembic_config(connection))
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise RuntimeError(f"migration left dangling foreign keys: {broken[:5]}")
        finally:
            if sqlite:
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


def upgrade(engine: Engine, revision: str = "head") -> None:
    _migrate(engine, lambda config: command.upgrade(config, revision))


def downgrade(engine: Engine, revision: str) -> None:
    _migrate(engine, lambda config: command.downgrade(config, revision))


def stamp(engine: Engine, revision: str) -> None:
    """Record `revision` as the database's version without running anything."""
    with engine.begin() as connection:
        command.stamp(alembic_config(connection), revision)


def schema_differences(engine: Engine) -> list:
    """What the database lacks or has beyond db.models (empty when they agree)."""
    import db.models  # noqa: F401

    with engine.connect() as connection:
        return compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)


def new_revision(engine: Engine, message: str) -> None:
    """Autogenerate a migration from the difference between the database and db.models."""
    with engine.begin() as connection:
        command.revision(alembic_config(connection), message=message, autogenerate=True)
