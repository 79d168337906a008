"""What an import reports: its counts, and the problems it found (file, row, field, message).

`Problems` is where every refused record goes. An ordinary import stops at the first one
(`ImportFailed`, after which the caller's transaction rolls everything back); a check
(`collect=True`) notes every problem and goes on, so a user can fix a file in one pass.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from nlce.cli import UserError


class ImportFailed(UserError):
    """An import stopped at one record; nothing of the import was written."""

    def __init__(self, source: str, location: str, field: str | None, message: str):
        self.source, self.location, self.field, self.message = source, location, field, message
        where = f"{source}, {location}" + (f", field {field!r}" if field else "")
        super().__init__(f"{where}: {message}")


class Reject(Exception):
    """A record refused while converting or writing; becomes a problem at its location."""

    def __init__(self, message: str, field: str | None = None):
        self.field, self.message = field, message
        super().__init__(message)


@dataclass
class ImportStats:
    """What an import did, per record type: created / updated / unchanged."""
    counts: Counter = field(default_factory=Counter)

    def add(self, kind: str, outcome: str, n: int = 1) -> None:
        if n:
            self.counts[(kind, outcome)] += n

    def as_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (kind, outcome), n in sorted(self.counts.items()):
            out.setdefault(kind, {})[outcome] = n
        return out

    def summary(self) -> str:
        rows = [f"  {kind:<15} " + ", ".join(f"{n} {o}" for o, n in outcomes.items())
                for kind, outcomes in self.as_dict().items()]
        return "\n".join(rows) if rows else "  (no records)"


class Problems:
    """The problems of one import: raised at once, or collected when checking."""

    def __init__(self, collect: bool = False):
        self.collect = collect
        self.found: list[ImportFailed] = []

    def add(self, source: str, location: str, field: str | None, message: str) -> None:
        problem = ImportFailed(source, location, field, message)
        if not self.collect:
            raise problem
        self.found.append(problem)

    def __bool__(self) -> bool:
        return bool(self.found)

    def __len__(self) -> int:
        return len(self.found)

    def lines(self) -> list[str]:
        return [str(problem) for problem in self.found]

    def refuse(self, where: str = "") -> None:
        """After a check that collected problems: each on its own line on stderr, then one
        UserError saying how many (`where`, e.g. ' in 2 source(s)') and that nothing was
        written; nothing where there are none."""
        if not self.found:
            return
        import sys

        for line in self.lines():
            print(line, file=sys.stderr)
        raise UserError(f"check: {len(self)} problem(s){where}; nothing was written")
