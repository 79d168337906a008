"""Reading a report page (report.html of `judges.report` and `align`) back in tests: its
sections by id, their tables as rows of cell texts, and their images (stdlib `html.parser`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Table:
    section: str | None  # id of the <section> it is in
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def records(self) -> list[dict[str, str]]:
        return [dict(zip(self.header, row)) for row in self.rows]


class ReportPage(HTMLParser):
    """`ReportPage(text)`: `.sections` (ids), `.tables` (Table), `.images` ((section, src))."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.sections: list[str] = []
        self.tables: list[Table] = []
        self.images: list[tuple[str | None, str]] = []
        self._open: list[str | None] = []  # the section stack
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._header_row = False
        self.feed(text)
        self.close()

    @property
    def section(self) -> str | None:
        return next((s for s in reversed(self._open) if s), None)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self._open.append(attrs.get("id"))
            if attrs.get("id"):
                self.sections.append(attrs["id"])
        elif tag == "table":
            self.tables.append(Table(self.section))
        elif tag == "tr":
            self._row, self._header_row = [], False
        elif tag in ("td", "th"):
            self._cell = []
            self._header_row = self._header_row or (tag == "th" and not self.tables[-1].header
                                                    and not self.tables[-1].rows)
        elif tag == "img":
            self.images.append((self.section, attrs.get("src", "")))

    def handle_endtag(self, tag):
        if tag == "section" and self._open:
            self._open.pop()
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            table = self.tables[-1]
            if self._header_row and not table.header:
                table.header = self._row
            else:
                table.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def tables_in(self, section: str) -> list[Table]:
        return [t for t in self.tables if t.section == section]

    def images_in(self, section: str) -> list[str]:
        return [src for s, src in self.images if s == section]
