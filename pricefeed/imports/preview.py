"""A file read the way an import of a config would read it, storing nothing.

Nothing is stored, so the texts are made in the active language (pricefeed.texts)."""

from __future__ import annotations

import dataclasses

from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext

from pricefeed import parsing
from pricefeed.limits import file_size_problem, parse_limits
from pricefeed.models import PriceListConfig
from pricefeed.texts import text_of, translated, translated_all

from . import lifecycle
from .source import ARCHIVES


@dataclasses.dataclass
class PreviewResult:
    name: str
    parsed: parsing.ParsedFile | None = None
    error: str = ""
    verdict: str = ""
    # The first rows of the file: the only ones kept (parsed.rows stays empty).
    rows: list[tuple] = dataclasses.field(default_factory=list)
    limit: int = 20

    @property
    def sample(self) -> list[tuple]:
        return self.rows[: self.limit]

    @property
    def errors(self) -> list[tuple[int, str]]:
        """The first row errors, in the active language."""
        errors = self.parsed.errors[: self.limit] if self.parsed else []
        return [(row, translated(text)) for row, text in errors]


class FirstRows:
    """A parse() sink that keeps the first ``count`` rows and counts nothing else: a
    preview of a million-row file holds twenty."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.rows: list[tuple] = []

    def __call__(self, rows: list[tuple]) -> None:
        if len(self.rows) < self.count:
            self.rows.extend(rows[: self.count - len(self.rows)])  # a copy: parse reuses it


def _verdict(status: str, reason: str) -> str:
    """What an import would end as, in the active language."""
    if reason:
        return gettext("An import would end %(status)s: %(reason)s") % {
            "status": status,
            "reason": translated(reason),
        }
    return gettext("An import would end %(status)s.") % {"status": status}


def preview_upload(
    *, config: PriceListConfig, upload: UploadedFile, rows: int = 20
) -> list[PreviewResult]:
    """preview_file() of an uploaded file, whose size is checked before it is read."""
    name = upload.name or "upload"
    problem = file_size_problem(upload.size or 0)
    if problem:
        return [PreviewResult(name, error=translated(problem), limit=rows)]
    return preview_file(config=config, filename=name, data=upload.read(), rows=rows)


def preview_file(
    *, config: PriceListConfig, filename: str, data: bytes, rows: int = 20
) -> list[PreviewResult]:
    """Reads a file the way an import of ``config`` would, keeping only its first
    ``rows`` rows (and its row errors, counts and verdict); stores nothing."""
    limits = parse_limits()
    problem = file_size_problem(len(data))
    if problem:
        return [PreviewResult(filename, error=translated(problem), limit=rows)]
    try:
        if parsing.detect_format(data) in ARCHIVES:
            members = [
                (f"{filename}/{m.path}", m.data) for m in parsing.expand(data, filename, limits)
            ]
        else:
            members = [(filename, data)]
    except parsing.ParseError as exc:
        return [PreviewResult(filename, error=translated(text_of(exc)), limit=rows)]
    results = []
    for name, member in members:
        first = FirstRows(rows)
        try:
            parsed = parsing.parse(member, lifecycle.options_for(config), limits, sink=first)
        except parsing.ParseError as exc:
            results.append(PreviewResult(name, error=translated(text_of(exc)), limit=rows))
            continue
        status, reason = lifecycle.verdict(config, parsed)
        verdict = _verdict(status, reason)
        parsed.warnings = translated_all(parsed.warnings)
        results.append(
            PreviewResult(name, parsed=parsed, verdict=verdict, rows=first.rows, limit=rows)
        )
    return results
