"""A file read for a preview: every price list of an upload (an archive's members, or
the file itself) through parse(), keeping only the first rows of each.

Pure, like the rest of the library, so that the web process can run it in a capped
child process (core.capped) rather than in itself."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.storedtext import text_of

from .archives import expand
from .errors import ParseError
from .reader import parse
from .types import ExtraColumns, Limits, ParsedFile, ParseOptions, Row


@dataclass
class Sampled:
    """One file of an upload: its ``parsed`` result and first ``rows``, or its
    ``error`` (the ParseError's message: a stored text)."""

    name: str
    parsed: ParsedFile | None = None
    error: str = ""
    rows: list[Row] = field(default_factory=list)
    # The values beyond FIELDS of those rows: row number -> ExtraColumns.row().
    extras: dict[int, dict] = field(default_factory=dict)


class FirstRows:
    """A parse() sink that keeps the first ``count`` rows and counts nothing else: a
    preview of a million-row file holds twenty."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.rows: list[Row] = []
        self.chunks: list[ExtraColumns] = []

    def __call__(self, rows: list[Row]) -> None:
        if len(self.rows) < self.count:
            self.rows.extend(rows[: self.count - len(self.rows)])  # a copy: parse reuses it

    def take_extras(self, extras: ExtraColumns) -> None:
        if len(self.rows) < self.count:
            self.chunks.append(extras)

    def extras(self) -> dict[int, dict]:
        """The extra values of the rows kept (the last read of a row wins)."""
        out: dict[int, dict] = {}
        for row in self.rows:
            for chunk in reversed(self.chunks):
                if chunk.first_row <= row[0] < chunk.first_row + chunk.count:
                    out[row[0]] = chunk.row(row[0])
                    break
        return out


def sample(
    data: bytes, filename: str, archive: bool, options: ParseOptions, limits: Limits, rows: int
) -> list[Sampled]:
    """Each file of ``data`` (its members when ``archive``) read by parse() with
    ``options`` and ``limits``, keeping its first ``rows`` rows."""
    members = [(filename, data)]
    if archive:
        try:
            members = [(f"{filename}/{m.path}", m.data) for m in expand(data, filename, limits)]
        except ParseError as exc:
            return [Sampled(filename, error=text_of(exc))]
    results = []
    for name, member in members:
        first = FirstRows(rows)
        try:
            parsed = parse(member, options, limits, sink=first)
        except ParseError as exc:
            results.append(Sampled(name, error=text_of(exc)))
            continue
        results.append(Sampled(name, parsed=parsed, rows=first.rows, extras=first.extras()))
    return results
