"""What password sign-in costs when many people sign in at once: latency, throughput and peak
memory of N concurrent `service.authenticate` calls (N clients, one thread each, like the
sessions of one Streamlit server) on SQLite, for three configurations:

- before: the work sign-in did before issue 26 (scrypt N=2^14, every check at once);
- owasp-ungated: scrypt at OWASP's minimum (N=2^17, r=8, p=1: 128 MiB per check), every check
  at once (what the new cost would do without a cap);
- owasp-gated: the app as it is (the same cost, `SignInGate`: at most min(4, cores) checks at
  once, the others wait for a slot).

    .venv/bin/python bench/signin_cost.py [--clients 1,4,20]

Each (configuration, N) runs in a fresh process; peak memory is that process's peak resident
set (VmHWM, reset after setup) above its resident set before the sign-ins. Ratios are printed
against `before` (latency) and `owasp-ungated` (memory).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("before", "owasp-ungated", "owasp-gated")
PASSWORD = "sign-in-bench-pass"


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def run_one(config: str, clients: int) -> dict:
    """In this (fresh) process: `clients` accounts, then all sign in at once."""
    sys.path.insert(0, str(ROOT))
    os.environ.pop("NLCE_INSECURE_FAST_PASSWORD_HASHES", None)
    from sqlmodel import Session

    import db.passwords as passwords
    from annotate import service
    from db import get_engine
    from db import models as m

    if config == "before":
        passwords.OWASP_COST = passwords.ScryptCost(2 ** 14, 8, 1)  # the old cost, no re-hash
    url = f"sqlite:///{tempfile.mkdtemp(prefix='signin-bench-')}/bench.db"
    stored = passwords.hash_password(PASSWORD)  # one hash for every account: setup only
    with Session(get_engine(url)) as session:
        for k in range(clients):
            session.add(m.Annotator(username=f"user{k}", languages=["nl"], role="annotator",
                                    password_hash=stored))
        session.commit()
    gate = service.SignInGate(slots=clients if config != "owasp-gated" else None)
    barrier = threading.Barrier(clients)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def sign_in(k: int) -> None:
        with Session(get_engine(url)) as session:
            barrier.wait()
            started = time.perf_counter()
            try:
                service.authenticate(session, f"user{k}", PASSWORD, client=f"ip:10.0.0.{k}",
                                     gate=gate)
            except service.AuthError as error:
                errors.append(str(error))
            with lock:
                latencies.append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=sign_in, args=(k,)) for k in range(clients)]
    resident = _status_kib("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak to now
    except OSError:
        pass
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    latencies.sort()
    return {"config": config, "clients": clients, "slots": gate.slots,
            "p50_ms": latencies[len(latencies) // 2], "max_ms": latencies[-1],
            "wall_s": wall, "per_s": clients / wall,
            "peak_mib": max(0, _status_kib("VmHWM") - resident) / 1024, "errors": errors}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="1,4,20")
    parser.add_argument("--one", nargs=2, metavar=("CONFIG", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]))))
        return 0
    print(f"machine: {os.cpu_count()} CPU cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    print(f"{'config':<14} {'N':>3} {'slots':>5} {'p50 ms':>8} {'max ms':>8} {'wall s':>7} "
          f"{'per s':>6} {'peak MiB':>9}  vs before (max)  vs ungated (peak)")
    for n in (int(x) for x in args.clients.split(",")):
        rows = {}
        for config in CONFIGS:
            done = subprocess.run([sys.executable, __file__, "--one", config, str(n)],
                                  capture_output=True, text=True, timeout=900)
            if done.returncode:
                print(f"{config:<14} {n:>3} failed: {done.stderr.strip()[-300:]}")
                continue
            row = rows[config] = json.loads(done.stdout.strip().splitlines()[-1])
            ratios = ""
            if "before" in rows and config != "before":
                ratios += f"  x{row['max_ms'] / rows['before']['max_ms']:.1f}".ljust(17)
            if "owasp-ungated" in rows and config == "owasp-gated":
                ratios += f"  x{row['peak_mib'] / max(rows['owasp-ungated']['peak_mib'], 1):.2f}"
            print(f"{config:<14} {n:>3} {row['slots']:>5} {row['p50_ms']:8.0f} "
                  f"{row['max_ms']:8.0f} {row['wall_s']:7.2f} {row['per_s']:6.1f} "
                  f"{row['peak_mib']:9.0f}{ratios}"
                  + (f"  errors: {row['errors'][:2]}" if row["errors"] else ""), flush=True)
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/signin_cost.py"))
