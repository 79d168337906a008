"""Output folders are written whole or not at all (`nlce.outputs.output_set`): `align --out`,
`judges.report --out` and `db export` (JSONL, parquet) killed with SIGKILL mid-write, or stopped
by a full disk, leave the previous folder exactly as it was and no half file; the next run
cleans up what the killed one left. The disk is made full two ways: RLIMIT_FSIZE on the command
(EFBIG, any user) and, where this test runs as root, a real 16 KiB tmpfs (ENOSPC). Those runs
are processes on purpose (`e2e`); what they check of the message and of the folder, the quick
loop checks in this process (`output_set` under a real RLIMIT_FSIZE, a killed run's part)."""
from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from outputs_kit import ROOT, hostile_records, run_module, write_jsonl

from nlce.outputs import OutputError, _exchange, output_set
from testing.cli import run_in_process

PAUSE = Path(__file__).with_name("pause_child.py")


@pytest.fixture(scope="module")
def filled_db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sets")
    url = f"sqlite:///{folder / 'sets.db'}"
    path = write_jsonl(folder / "records.jsonl", hostile_records())
    result = run_in_process("db", "import", "--accounts", str(path), "--db", url)
    assert result.returncode == 0, result.stderr
    return url


TO_CSV = "pandas.core.generic:NDFrame.to_csv"  # what DataFrame.to_csv runs
# each command: its arguments (the output folder last), the function to pause after its n-th
# call, and the arguments of a first run that writes a different, smaller set
COMMANDS = {
    "align": (["align", "--no-figures", "--bootstrap", "0", "--out"], TO_CSV, 2,
              ["--slice", "all"]),
    "judges.report": (["judges.report", "--bootstrap", "0", "--out"], TO_CSV, 3,
                      ["--labels", "expert"]),
    "export jsonl": (["db", "export", "--format", "jsonl", "--out"],
                     "db.exporter:export_records", 40, None),
    "export parquet": (["db", "export", "--format", "parquet", "--out"],
                       "pyarrow.parquet:write_table", 3, None),
}


def _command(name: str, url: str, out: Path, first: bool = False) -> list[str]:
    args, _, _, first_args = COMMANDS[name]
    extra = (first_args or []) if first else []
    return [*args, str(out), "--db", url, *extra]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def _kill_at(ready: Path, target: str, count: int, command: list[str]) -> None:
    """Run `command` under pause_child.py, which stops it at the `count`-th call of `target`,
    and kill -9 it there: no handler, no cleanup, as a killed process meets it."""
    child = subprocess.Popen([sys.executable, str(PAUSE), str(ready), target, str(count),
                              *command],
                             cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not ready.exists():
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, f"the command never reached {target}"
            time.sleep(0.1)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()


@pytest.mark.e2e
@pytest.mark.parametrize("name", list(COMMANDS))
def test_killed_mid_write_leaves_the_old_set_and_the_next_run_cleans_up(name, filled_db,
                                                                         tmp_path):
    out = tmp_path / "out"
    first = run_module(*_command(name, filled_db, out, first=True))
    assert first.returncode == 0, first.stderr
    if name.startswith("export"):  # an old set that tells itself apart from the new one
        (out / "old.parquet").write_text("an earlier export's table\n")
    before = _snapshot(out)
    _, target, count, _ = COMMANDS[name]
    _kill_at(tmp_path / "ready", target, count, _command(name, filled_db, out))
    assert _snapshot(out) == before  # the old set, every byte, nothing added
    left = _leftovers(out)  # the killed run's half-written set, beside the folder
    assert len(left) == 1 and ".part-" in left[0]
    assert any(p.is_file() for p in (out.parent / left[0]).rglob("*"))
    again = run_module(*_command(name, filled_db, out))
    assert again.returncode == 0, again.stderr
    assert _leftovers(out) == []  # the killed run's part is gone
    after = _snapshot(out)
    assert after != before and after


def test_an_old_versions_part_file_goes_with_the_next_export(filled_db, tmp_path):
    """Before output sets, a killed export left `.export.jsonl.RANDOM.part` inside the folder."""
    out = tmp_path / "out"
    out.mkdir()
    (out / ".export.jsonl.k2x9.part").write_text('{"type": "dataset", "na')
    result = run_in_process("db", "export", "--out", str(out), "--db", filled_db)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["export.jsonl"]


def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def _assert_full_disk_refused(result, out: Path, before: dict, reason: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"could not write {out}{os.sep}" in lines[0] and reason in lines[0], lines[0]
    assert (_snapshot(out) if out.exists() else None) == before
    assert _leftovers(out) == []


@pytest.mark.e2e
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_file_size_limit_is_one_line_naming_the_file(name, filled_db, tmp_path):
    """RLIMIT_FSIZE (8 KiB) on the command: a write past it fails with EFBIG, like a quota.
    (The database is held open here meanwhile, so SQLite's shared-memory file, 32 KiB, exists
    already and the command only reads.)"""
    out = tmp_path / "out"
    assert run_module(*_command(name, filled_db, out, first=True)).returncode == 0
    before = _snapshot(out)
    holder = sqlite3.connect(filled_db.removeprefix("sqlite:///"))
    try:
        holder.execute("SELECT count(*) FROM generation").fetchall()
        result = run_module(*_command(name, filled_db, out), preexec_fn=_limit_file_size(8192))
    finally:
        holder.close()
    _assert_full_disk_refused(result, out, before, "file too large")


@pytest.fixture
def small_disk(tmp_path):
    """A 16 KiB tmpfs (root only: mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the RLIMIT_FSIZE test covers the rest")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


@pytest.mark.e2e
@pytest.mark.parametrize("name", ["align", "export parquet"])
def test_a_full_disk_is_one_line_naming_the_file(name, filled_db, small_disk):
    out = small_disk / "out"
    result = run_module(*_command(name, filled_db, out))
    _assert_full_disk_refused(result, out, None, "no space left on the device")
    assert list(small_disk.iterdir()) == []


# ------------------------------------------------------------------------------ the helper


def test_a_set_replaces_the_old_one_whole(tmp_path):
    out = tmp_path / "set"
    with output_set(out) as folder:
        (folder / "a.csv").write_text("1")
        (folder / "b.csv").write_text("2")
    with output_set(out) as folder:
        (folder / "a.csv").write_text("3")
    assert _snapshot(out) == {"a.csv": b"3"}  # b.csv of the old set is gone with it


def test_an_error_inside_leaves_the_old_set(tmp_path):
    out = tmp_path / "set"
    with output_set(out) as folder:
        (folder / "a.csv").write_text("old")
    with pytest.raises(KeyError), output_set(out) as folder:
        (folder / "a.csv").write_text("new")
        raise KeyError("a bug halfway")
    assert _snapshot(out) == {"a.csv": b"old"} and _leftovers(out) == []


@pytest.mark.parametrize("setup, message", [
    (lambda out: out.write_text("a file"), "is a file, not a folder"),
    (lambda out: (out.mkdir(), (out / "thesis.tex").write_text("mine")),
     "holds files this command does not write (thesis.tex)"),
])
def test_a_folder_it_may_not_replace_is_refused_untouched(tmp_path, setup, message):
    out = tmp_path / "set"
    setup(out)
    before = out.read_bytes() if out.is_file() else _snapshot(out)
    with pytest.raises(OutputError, match=re.escape(message)), output_set(out, ("*.csv",)):
        pytest.fail("never entered")
    assert (out.read_bytes() if out.is_file() else _snapshot(out)) == before


def test_the_working_folder_is_never_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputError, match="working folder"), output_set("."):
        pytest.fail("never entered")


def test_a_previous_set_moved_aside_by_a_killed_run_is_put_back(tmp_path):
    """Killed between its two renames: the folder is missing and the old set waits beside it."""
    out = tmp_path / "set"
    aside = tmp_path / ".set.old-999999999-dead" / "set"
    aside.mkdir(parents=True)
    (aside / "a.csv").write_text("old")
    with pytest.raises(RuntimeError), output_set(out):
        assert _snapshot(out) == {"a.csv": b"old"}  # back in place before anything is written
        raise RuntimeError
    assert _snapshot(out) == {"a.csv": b"old"} and _leftovers(out) == []


def test_a_set_left_between_two_renames_is_back_when_the_next_command_starts(tmp_path,
                                                                            db_url):
    """Issue 41.6: a run killed between the two renames (an older version, or a file system
    that cannot swap folders in one step) leaves `--out` missing and the previous report beside
    it; it was put back only once the next run came to write, and not at all by a run that
    stopped before that. Now any command that writes there puts it back when it starts: here
    `judges.report`, which finds no judge responses and writes nothing."""
    out = tmp_path / "report"
    aside = tmp_path / ".report.old-999999999-dead" / "report"
    aside.mkdir(parents=True)
    (aside / "report.html").write_text("the previous report")
    assert run_in_process("db", "upgrade", "--db", db_url).returncode == 0
    result = run_in_process("judges.report", "--out", str(out), "--db", db_url)
    assert result.returncode == 0, result.stderr
    assert "no judge responses" in result.stdout
    assert _snapshot(out) == {"report.html": b"the previous report"} and _leftovers(out) == []


def test_a_set_takes_the_place_of_the_old_one_in_one_step(tmp_path):
    """Where the system swaps two folders at once (Linux renameat2 RENAME_EXCHANGE, on the file
    systems the tests run on), `out` is never missing: the new set and the old one trade places,
    then the old one, now hidden, is deleted. The kill right after the swap: the e2e test
    below."""
    new, out = tmp_path / ".set.part-1-x", tmp_path / "set"
    new.mkdir()
    out.mkdir()
    (new / "a.csv").write_text("new")
    (out / "a.csv").write_text("old")
    assert _exchange(new, out)
    assert _snapshot(out) == {"a.csv": b"new"} and _snapshot(new) == {"a.csv": b"old"}
    shutil.rmtree(new)
    with output_set(out) as folder:
        (folder / "a.csv").write_text("newer")
    assert _snapshot(out) == {"a.csv": b"newer"} and _leftovers(out) == []


@pytest.mark.e2e
def test_killed_right_after_the_swap_leaves_the_new_report_whole(filled_db, tmp_path):
    """kill -9 at the one moment a report changes hands: `--out` is the new report, whole; the
    previous one waits under the hidden name and goes with the next run. (With two renames the
    same kill left `--out` missing.)"""
    out = tmp_path / "out"
    assert run_module(*_command("align", filled_db, out, first=True)).returncode == 0
    before = _snapshot(out)
    _kill_at(tmp_path / "ready", "nlce.outputs:_exchange", 1,
             _command("align", filled_db, out))
    swapped = _snapshot(out)
    assert swapped != before and "report.html" in swapped  # the new report, whole
    left = _leftovers(out)
    assert len(left) == 1 and ".part-" in left[0] and _snapshot(out.parent / left[0]) == before
    assert run_module(*_command("align", filled_db, out)).returncode == 0
    assert _leftovers(out) == [] and "report.html" in _snapshot(out)


def test_a_killed_runs_part_goes_with_the_next_set(tmp_path):
    """What `kill -9` leaves (the e2e test above kills real commands): a part folder beside the
    set whose process is gone; the next set removes it and the old set until it is replaced."""
    out = tmp_path / "set"
    with output_set(out) as folder:
        (folder / "a.csv").write_text("old")
    dead = tmp_path / ".set.part-999999999-dead"
    dead.mkdir()
    (dead / "a.csv").write_text("half a fi")
    with output_set(out) as folder:
        assert _snapshot(out) == {"a.csv": b"old"}  # untouched while the new set is written
        (folder / "a.csv").write_text("new")
    assert _snapshot(out) == {"a.csv": b"new"} and _leftovers(out) == []


def test_a_write_past_a_file_size_limit_names_the_file_and_keeps_the_old_set(tmp_path):
    """The RLIMIT_FSIZE of the e2e test, on this process for one write (Python ignores SIGXFSZ,
    so the write fails with EFBIG as it does in the command)."""
    out = tmp_path / "set"
    with output_set(out) as folder:
        (folder / "a.csv").write_text("old")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, hard))
    try:
        with pytest.raises(OutputError) as refused, output_set(out) as folder:
            (folder / "a.csv").write_text("new")
            (folder / "big.csv").write_bytes(b"x" * 16384)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    message = str(refused.value)
    assert message.startswith(f"could not write {out / 'big.csv'}: file too large"), message
    assert len(message.splitlines()) == 1
    assert _snapshot(out) == {"a.csv": b"old"} and _leftovers(out) == []


def test_private_sets_are_readable_by_their_owner_only(tmp_path):
    with output_set(tmp_path / "set", private=True) as folder:
        (folder / "export.jsonl").write_text("{}\n")
    assert oct((tmp_path / "set").stat().st_mode & 0o777) == "0o700"
    assert oct((tmp_path / "set" / "export.jsonl").stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("name", ["align", "judges.report", "export jsonl"])
def test_out_at_a_file_is_one_line_before_any_work(name, filled_db, tmp_path):
    out = tmp_path / "notes.txt"
    out.write_text("mine\n")
    result = run_in_process(*_command(name, filled_db, out))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{out} is a file, not a folder" in lines[0], result.stderr
    assert out.read_text() == "mine\n" and _leftovers(out) == []


@pytest.mark.parametrize("name", ["align", "export jsonl", "export parquet"])
@pytest.mark.parametrize("loop", ["itself", "below"])
def test_out_at_a_symlink_loop_is_one_line_naming_it(name, loop, filled_db, tmp_path):
    """`--out` at a link that points to itself (or a folder under one): no internal error."""
    (tmp_path / "loop").symlink_to("loop")
    out = tmp_path / "loop" if loop == "itself" else tmp_path / "loop" / "sub"
    result = run_in_process(*_command(name, filled_db, out))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0], result.stderr
    assert str(tmp_path / "loop") in lines[0] and "symbolic link" in lines[0], result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loop"]  # nothing written beside it
