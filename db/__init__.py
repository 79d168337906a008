"""The project's database: tables (`db.models`), engine/session setup (`db.engine`), and import and
export (`python -m db import|export|demo|info`)."""
from db.engine import (
                       DATABASE_URL_ENV,
                       DEFAULT_DATABASE_URL,
                       add_database_argument,
                       get_engine,
                       init_schema,
                       resolve_url,
                       session_scope,
)

__all__ = ["DATABASE_URL_ENV", "DEFAULT_DATABASE_URL", "add_database_argument", "get_engine",
           "init_schema", "resolve_url", "session_scope"]
