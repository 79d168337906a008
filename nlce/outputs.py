"""How commands write files for people: CSV cells a spreadsheet shows as text, never runs
(`csv_cell`, `write_csv`), and a set of output files written whole or not at all (`output_set`).

No project imports but `nlce.cli` (its `UserError`): db's export, align, judges.report and the
app's downloads all use it.
"""
from __future__ import annotations

import csv
import ctypes
import errno
import glob
import io
import os
import secrets
import shutil
from contextlib import contextmanager
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from nlce.cli import UserError

# A spreadsheet treats a cell starting with one of these as a formula (OWASP, "CSV Injection"):
# `=HYPERLINK(...)`, `@SUM(...)`, `+cmd|...`, `-2+3`, and the tab / carriage return variants.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """`value` as a CSV cell a spreadsheet shows as written: a text starting like a formula gets
    a leading single quote (OWASP's advice); numbers and everything else pass unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_safe_frame(frame):
    """A copy of a pandas DataFrame whose column names and text cells went through `csv_cell`
    (numbers stay numbers)."""
    out = frame.copy()
    out.columns = [csv_cell(name) for name in out.columns]
    for position in range(out.shape[1]):
        column = out.iloc[:, position]
        if column.dtype.kind in "OU" or str(column.dtype) in ("str", "string", "category"):
            out.isetitem(position, column.astype(object).map(csv_cell, na_action="ignore"))
    return out


def write_csv(target, table, *, header: Sequence[str] | None = None) -> None:
    """Write `table` as CSV to `target` (a path or an open text stream): a pandas DataFrame, or
    rows (dicts, with `header` or the first row's keys; or sequences, with `header`). Every
    header and text cell goes through `csv_cell`."""
    if hasattr(table, "to_csv"):
        csv_safe_frame(table).to_csv(target, index=False)
        return
    rows = list(table)
    if header is None:
        header = list(rows[0].keys()) if rows and isinstance(rows[0], dict) else []
    if isinstance(target, (str, os.PathLike)):
        with open(target, "w", encoding="utf-8", newline="") as handle:
            _write_rows(handle, header, rows)
    else:
        _write_rows(target, header, rows)


def _write_rows(handle, header: Sequence[str], rows: list) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    if header:
        writer.writerow([csv_cell(name) for name in header])
    for row in rows:
        cells = [row.get(name) for name in header] if isinstance(row, dict) else row
        writer.writerow([csv_cell(cell) for cell in cells])


def csv_text(rows: Iterable[dict]) -> str:
    """Rows of dicts as CSV text (the app's download buttons); "" for no rows."""
    rows = list(rows)
    if not rows:
        return ""
    buffer = io.StringIO()
    write_csv(buffer, rows)
    return buffer.getvalue()


# ------------------------------------------------------------------------------ output sets

class OutputError(UserError):
    """An output folder that cannot be written (a file in its place, foreign files in it, a full
    disk): a `UserError` whose message names the path; nothing of the set was written."""


PART = ".part-"  # hidden sibling folders: .NAME.part-PID-RANDOM while written
OLD = ".old-"  # .NAME.old-PID-RANDOM: the previous set, between the two renames (no exchange)
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2  # <fcntl.h>, <linux/fs.h>
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}


def _exchange(new: Path, out: Path) -> bool:
    """Swap two folders in one step (Linux renameat2 with RENAME_EXCHANGE: `out` is the new set
    at once, never missing, and the old one sits at `new`). False where the C library or the
    file system has no such call (then `output_set` renames twice)."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(out),
                 _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(out))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _sibling(out: Path, kind: str, mode: int) -> Path:
    """A new hidden folder beside `out` named after this process (mkdir: never one that exists,
    link or not)."""
    while True:
        path = out.parent / f".{out.name}{kind}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir(mode=mode)
            return path
        except FileExistsError:
            continue


def _clean_stale_siblings(out: Path) -> None:
    """Remove what a killed earlier run left beside `out` (its process is gone): a half-written
    set, the previous set after a one-step swap, or the previous set moved aside between two
    renames (put back when `out` itself is missing)."""
    for kind in (OLD, PART):
        for path in out.parent.glob(f".{glob.escape(out.name)}{kind}*"):
            pid = path.name[len(out.name) + 1 + len(kind):].split("-")[0]
            if pid.isdigit() and _pid_alive(int(pid)):
                continue  # another run writing now
            if kind == OLD and not out.exists() and (path / out.name).is_dir():
                os.replace(path / out.name, out)
            shutil.rmtree(path, ignore_errors=True)


def _refuse_link_loop(out: Path) -> None:
    """An `OutputError` naming the first part of `out` that is a symbolic link leading back to
    itself (a loop), where the system would only say "too many levels of symbolic links"."""
    for path in (*reversed(out.parents), out):
        try:
            os.stat(path)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise OutputError(f"{path} is a symbolic link that leads back to itself (a "
                                  f"loop): remove the link or give another folder") from None
            return  # missing (or unreadable): nothing further down exists


def check_output_folder(out: str | Path, owns: Sequence[str] = ("*",)) -> None:
    """Raise `OutputError` unless `output_set(out, owns)` may replace `out` (a command checks
    this before its long work, so a wrong `--out` fails at once). A previous set that a run
    killed between two renames left beside a missing `out` is put back first, so that it is
    there again from the start of the next command that writes there, not its end."""
    out = Path(out)
    _refuse_link_loop(Path(os.path.abspath(out)))
    try:
        _clean_stale_siblings(Path(os.path.abspath(out)))
    except OSError:
        pass  # what cannot be cleaned here, output_set names when it writes
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} is a file, not a folder: give a folder (new, empty, or one "
                          f"this command wrote before)")
    cwd = Path.cwd().resolve()
    if out.is_dir() and (out.resolve() == cwd or out.resolve() in cwd.parents):
        raise OutputError(f"{out} is the working folder (or holds it): give a folder of its own")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir()
                         if not any(fnmatch(p.name, pattern) for pattern in owns)
                         and not p.name.endswith(".part"))
        if foreign:
            raise OutputError(
                f"{out} holds files this command does not write ({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}): the folder is replaced whole by the "
                f"new output, so give a new or empty folder")


_REASONS = {errno.ENOSPC: "no space left on the device", errno.EFBIG: "file too large",
            errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
            errno.EACCES: "permission denied"}


def _replace(part: Path, out: Path) -> None:
    """`part` takes the place of `out`: in one step where the system can, else two renames."""
    if out.exists() and _exchange(part, out):
        shutil.rmtree(part, ignore_errors=True)  # the old set
        return
    old = None
    if out.exists():
        old = _sibling(out, OLD, 0o700)
        os.replace(out, old / out.name)
    try:
        os.replace(part, out)
    except OSError:
        if old is not None:
            os.replace(old / out.name, out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _disk_message(error: OSError, part: Path | None, out: Path) -> str:
    """Which file of the set failed and why, under its final name."""
    name = Path(error.filename).name if getattr(error, "filename", None) else None
    if name is None and part is not None and part.is_dir():
        # a failed write() carries no file name: the newest file is the one being written
        # (of two changed within one clock tick, the later created: the higher inode number)
        files = [p for p in part.rglob("*") if p.is_file()]
        newest = max(files, key=lambda p: (p.stat().st_mtime_ns, p.stat().st_ino)) \
            if files else None
        name = newest.relative_to(part).as_posix() if newest else None
    reason = _REASONS.get(error.errno, error.strerror or str(error))
    return (f"could not write {out / name if name else out}: {reason}; nothing of it was kept "
            f"(an earlier {out.name}, if any, is unchanged)")


@contextmanager
def output_set(out: str | Path, owns: Sequence[str] = ("*",), private: bool = False
               ) -> Iterator[Path]:
    """Write a set of output files whole or not at all.

    Yields a new hidden folder beside `out` (`.NAME.part-PID-RANDOM`) to write every file into.
    When the block ends without error, that folder takes the place of `out` in one step where
    the system can swap two folders (Linux: `_exchange`; the old set, now at the hidden name, is
    then deleted), else in two renames (the old set moved aside first; a run killed between them
    leaves it to be put back by the next command that writes there), so `out` holds the old set
    or the new one, never a mix. On any error the new folder is removed and `out` is left as it
    was; a disk error becomes an `OutputError` naming the file. What a killed run left beside
    `out` is cleaned up by the next one. `out` must be new, empty, or hold only names matching
    `owns` (what the command writes; `*.part` files of older versions count as its own). `private`: the folder
    and its files are readable by their owner only (an export of the whole database)."""
    out = Path(out)
    _refuse_link_loop(Path(os.path.abspath(out)))
    if out.is_symlink() and out.resolve().is_dir():
        out = out.resolve()  # replace the folder the link points at, not the link
    out = Path(os.path.abspath(out))
    check_output_folder(out, owns)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale_siblings(out)
        part = _sibling(out, PART, 0o700 if private else 0o777)
    except OSError as error:
        raise OutputError(_disk_message(error, None, out.parent)) from error
    try:
        yield part
        if private:  # the files too, should one be moved out of the folder later
            for path in part.rglob("*"):
                path.chmod(0o600 if path.is_file() else 0o700)
        _replace(part, out)
    except OutputError:
        shutil.rmtree(part, ignore_errors=True)
        raise
    except OSError as error:
        message = _disk_message(error, part, out)
        shutil.rmtree(part, ignore_errors=True)
        raise OutputError(message) from error
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
