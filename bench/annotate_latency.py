"""Page-to-page latency of the labelling app: how long "label + next item" takes on the server.

Two databases: the demo database (db.demo) and a generated one of 12,500 generations (500 files
x 5 languages x 5 models, the study's size), both temporary SQLite files unless --db is given.
Two measurements per database:

- service: the database and rendering work of one step (save the label, read the queue, load
  the next item, render its code view and diff), called directly;
- app: the whole Streamlit script rerun after a click, through streamlit.testing's AppTest
  (the real app script, no browser; AppTest also rebuilds its element tree after every run);
- browser: in headless Chromium against `python -m annotate` on loopback, from the key press
  (2 = partial, then S = save and next) until the page shows the saved state / the next item.

    .venv/bin/python bench/annotate_latency.py [--steps 200] [--app-steps 60] [--browser-steps 40]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlmodel import Session  # noqa: E402

from annotate import service  # noqa: E402
from annotate.render import code_html, diff_html  # noqa: E402
from db import get_engine  # noqa: E402
from nlce.cli import UserError  # noqa: E402

PASSWORD = "bench-pass"
CHROMIUM = "/usr/bin/chromium"  # Debian's, as the browser tests use it


def percentiles(samples_ms: list[float]) -> str:
    ordered = sorted(samples_ms)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    return (f"n={len(ordered):4d}  p50={pct(0.5):7.1f} ms  p90={pct(0.9):7.1f} ms  "
            f"p99={pct(0.99):7.1f} ms  max={ordered[-1]:7.1f} ms  "
            f"mean={statistics.fmean(ordered):7.1f} ms")


def generated_database(url: str) -> str:
    from testing.synthetic import add_synthetic_corpus

    started = time.perf_counter()
    with Session(get_engine(url)) as session:
        n = add_synthetic_corpus(session, targets_per_language=500)
        session.commit()
    print(f"generated {n} generations in {time.perf_counter() - started:.1f} s")
    return url


def demo_database(url: str) -> str:
    from db.demo import ensure_demo_database

    ensure_demo_database(url)
    return url


def bench_user(url: str, username: str) -> int:
    """An annotator who speaks every language and has every generation in their queue (one per
    measurement, so each starts on a queue of unlabelled items)."""
    from taxonomy import LANGUAGES

    with Session(get_engine(url)) as session:
        operator = service.OPERATOR  # the benchmark sets up its database directly
        existing = {a.username: a for a in service.list_annotators(session, acting=operator)}
        user = existing.get(username) or service.create_annotator(
            session, username=username, password=PASSWORD, languages=LANGUAGES,
            acting=operator)
        # per_item high enough that every generation lands in this one queue
        service.assign(session, annotator_ids=[user.id], per_item=99, strategy="stratified",
                       acting=operator)
        session.commit()
        queue = service.queue_for(session, user.id)
    print(f"queue of {username!r}: {len(queue)} items")
    return user.id


def bench_service(url: str, annotator_id: int, steps: int) -> tuple[float, list[float]]:
    """(ms to load the queue once, as at sign-in; ms per step). A step is what the app does
    between two items: save the label, note it in the held queue, find the next open item,
    load it and render its code view and diff."""
    started = time.perf_counter()
    with Session(get_engine(url)) as session:
        queue = service.QueueState.load(session, annotator_id, time.time())
    load_ms = (time.perf_counter() - started) * 1000
    index = service.first_open(queue.entries) or 0
    labels = ("correct", "partial", "incorrect")
    samples = []
    for k in range(min(steps, len(queue) - 1)):
        started = time.perf_counter()
        with Session(get_engine(url)) as session:
            gid = queue.entries[index].generation_id
            own = service.own_label(session, gid, annotator_id)
            saved = service.save_label(session, generation_id=gid, annotator_id=annotator_id,
                                       accuracy=labels[k % 3], codes=["LG-GR1"] if k % 2 else [],
                                       note="", seconds_spent=1.0, status="done",
                                       expected_revision=own.revision or 0)
            session.commit()
            queue.record(gid, saved.status, labels[k % 3])
            index = service.next_open(queue.entries, index) or 0
            view = service.load_item(session, queue.entries[index].generation_id, annotator_id)
            queue.progress()
            code_html(view.content, view.span_start, view.span_end,
                      programming_language=view.programming_language, path=view.path)
            diff_html(view.original_comment, view.predicted_comment)
        samples.append((time.perf_counter() - started) * 1000)
    return load_ms, samples


def bench_app(url: str, username: str, steps: int) -> tuple[list[float], list[float]]:
    """(label click reruns, save-and-next click reruns) in milliseconds."""
    from streamlit.testing.v1 import AppTest

    os.environ["NLCE_DATABASE_URL"] = url
    at = AppTest.from_file(str(ROOT / "annotate" / "app.py"), default_timeout=120).run()
    at.text_input(key="sign_in_user").input(username)
    at.text_input(key="sign_in_password").input(PASSWORD)
    at.button[0].click().run()
    if at.exception:
        raise RuntimeError(at.exception)
    label_ms, next_ms = [], []
    for k in range(steps):
        label = ("correct", "partial", "incorrect")[k % 3]
        started = time.perf_counter()
        at.button(key=f"lbl_acc_{label}").click().run()
        label_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        at.button(key="lbl_save").click().run()
        next_ms.append((time.perf_counter() - started) * 1000)
        if at.exception or at.error:
            raise RuntimeError(f"app error: {at.exception or at.error[0].value}")
    return label_ms, next_ms


def bench_browser(url: str, username: str, steps: int) -> tuple[list[float], list[float]]:
    """(label key -> saved state shown, save key -> next item shown) in ms, in real Chromium."""
    import signal
    import socket
    import subprocess
    import urllib.request

    from playwright.sync_api import sync_playwright

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "annotate", "--db", url, "--port", str(port)],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    app = f"http://127.0.0.1:{port}"
    label_ms, next_ms = [], []
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{app}/_stcore/health", timeout=2).close()
                break
            except OSError as error:
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError("the app did not start") from error
                time.sleep(0.3)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=flags)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(app)
            page.get_by_role("textbox", name="Username").fill(username)
            page.get_by_role("textbox", name="Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.locator(".nlce-head").wait_for(timeout=60000)
            page.get_by_role("button", name="Save").wait_for(timeout=60000)
            time.sleep(1.5)  # let the first page finish rendering (not measured)
            page.mouse.click(720, 890)  # focus the page, not a field
            head = "document.querySelector('.nlce-head')"
            try:
                _browser_steps(page, head, steps, label_ms, next_ms)
            except Exception:
                page.screenshot(path=str(Path(tempfile.gettempdir()) / "annotate-bench-fail.png"))
                raise
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    return label_ms, next_ms


def _browser_steps(page, head: str, steps: int, label_ms: list, next_ms: list) -> None:
    for _ in range(steps):
        before = page.locator(".nlce-head b").first.inner_text()
        started = time.perf_counter()
        page.keyboard.press("2")
        page.wait_for_function(f"() => {head} && {head}.innerText.includes('· done')",
                               timeout=30000)
        label_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        page.keyboard.press("S")
        page.wait_for_function(
            f"b => {head} && !{head}.innerText.startsWith(b) && "
            f"{head}.innerText.includes('· new')", arg=before, timeout=30000)
        next_ms.append((time.perf_counter() - started) * 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="service steps per database")
    parser.add_argument("--app-steps", type=int, default=60, help="AppTest steps per database")
    parser.add_argument("--browser-steps", type=int, default=40,
                        help="Chromium steps per database (0: skip)")
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args(argv)
    if args.browser_steps:  # checked before minutes of measuring
        from testing.bench import require

        require("playwright")
        if not Path(CHROMIUM).exists():
            raise UserError(f"the browser steps need Chromium at {CHROMIUM}: install Debian's "
                            f"chromium (bash scripts/setup.sh --test does), or --browser-steps 0")
    workdir = Path(tempfile.mkdtemp(prefix="annotate-bench-"))
    setups = [] if args.skip_demo else [("demo", demo_database)]
    setups.append(("generated 12,500", generated_database))
    for name, build in setups:
        url = build(f"sqlite:///{workdir / (name.split()[0] + '.db')}")
        annotator_id = bench_user(url, "bench-service")
        print(f"\n== {name} database ({url})")
        load_ms, samples = bench_service(url, annotator_id, args.steps)
        print(f"service  queue load : {load_ms:7.1f} ms (once per sign-in, then every 5 min)")
        print(f"service  label+next : {percentiles(samples)}")
        bench_user(url, "bench-app")
        label_ms, next_ms = bench_app(url, "bench-app", args.app_steps)
        print(f"app      label click: {percentiles(label_ms)}")
        print(f"app      save & next: {percentiles(next_ms)}")
        if args.browser_steps:
            bench_user(url, "bench-browser")
            label_ms, next_ms = bench_browser(url, "bench-browser", args.browser_steps)
            print(f"browser  label key  : {percentiles(label_ms)}")
            print(f"browser  save & next: {percentiles(next_ms)}")
        get_engine(url).dispose()
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from testing.bench import run

    sys.exit(run(main, "bench/annotate_latency.py"))
