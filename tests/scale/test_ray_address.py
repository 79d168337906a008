"""An unreachable Ray --address ends `metrics.score` in seconds with one clear line, instead of
ray.init retrying for minutes with only Ray's own warnings. The command's process waits out its
connect timeout (`e2e`); the message itself: tests/metrics/test_parallel.py, in-process."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    with socket.socket() as sock:  # bound then released: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.e2e
def test_unreachable_ray_address_fails_fast_with_a_clear_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NLCE_RAY_CONNECT_TIMEOUT_S="5")
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    subprocess.run([sys.executable, "-m", "db", "demo", "--db", url], env=env, check=True,
                   capture_output=True)
    address = f"127.0.0.1:{closed_port()}"
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "metrics.score", "--metric", "bleu", "--db", url, "--no-progress",
         "--executor", "ray", "--address", address],
        env=env, capture_output=True, text=True, timeout=170)
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert f"no Ray cluster reachable at {address}" in result.stderr
    assert "Traceback" not in result.stderr
    assert elapsed < 30, f"took {elapsed:.0f}s"  # ray.init alone waits over 40 s here
