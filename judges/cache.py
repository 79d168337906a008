"""The response cache of `judges.client`: a SQLite file of answers keyed by a hash of the request
(backend, endpoint, model, messages, parameters, response format)."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from nlce.cli import InputError


def cache_key(backend: str, model: str, messages: list[dict], params: dict,
              response_format: dict | None, endpoint: str) -> str:
    """The hash a cached answer is found by; the endpoint is part of it (one model name on two
    servers is two models)."""
    payload = {"backend": backend, "model": model, "messages": messages, "params": params,
               "response_format": response_format, "endpoint": endpoint}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ResponseCache:
    """Answers by request hash in a SQLite file; safe to share between threads."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self._lock = threading.Lock()
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            tables = {row[0] for row in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "response" not in tables:  # e.g. the project database by mistake
                self._conn.close()
                raise sqlite3.DatabaseError(f"a SQLite database of something else (tables: "
                                            f"{', '.join(sorted(tables)[:5])})")
            self._conn.execute("CREATE TABLE IF NOT EXISTS response (key TEXT PRIMARY KEY, "
                               "payload TEXT NOT NULL, created REAL NOT NULL)")
            self._conn.commit()
        except (sqlite3.Error, OSError) as exc:  # a text file, a folder, another database
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise InputError(f"response cache {self.path} cannot be used: {reason} (give --cache "
                             "a new file name, or the cache file of earlier runs)") from None

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._conn.execute("SELECT payload FROM response WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, payload: dict) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO response VALUES (?, ?, ?)",
                               (key, json.dumps(payload, ensure_ascii=False), time.time()))
            self._conn.commit()

    def close(self) -> None:
        with self._lock:
            self._conn.close()
