"""A file read the way an import of a config would read it, storing nothing."""

from __future__ import annotations

import dataclasses

from pricefeed import parsing
from pricefeed.limits import parse_limits
from pricefeed.models import PriceListConfig

from . import lifecycle
from .source import ARCHIVES


@dataclasses.dataclass
class PreviewResult:
    name: str
    parsed: parsing.ParsedFile | None = None
    error: str = ""
    verdict: str = ""

    @property
    def sample(self) -> list[tuple]:
        return self.parsed.rows[: self.limit] if self.parsed else []

    @property
    def errors(self) -> list[tuple[int, str]]:
        return self.parsed.errors[: self.limit] if self.parsed else []

    limit: int = 20


def preview_file(
    *, config: PriceListConfig, filename: str, data: bytes, rows: int = 20
) -> list[PreviewResult]:
    """Reads a file the way an import of ``config`` would; stores nothing."""
    limits = parse_limits()
    if len(data) > limits.max_file_bytes:
        return [
            PreviewResult(filename, error=f"file is over the {limits.max_file_bytes} byte limit")
        ]
    try:
        if parsing.detect_format(data) in ARCHIVES:
            members = [
                (f"{filename}/{m.path}", m.data) for m in parsing.expand(data, filename, limits)
            ]
        else:
            members = [(filename, data)]
    except parsing.ParseError as exc:
        return [PreviewResult(filename, error=str(exc))]
    results = []
    for name, member in members:
        try:
            parsed = parsing.parse(member, lifecycle.options_for(config), limits)
        except parsing.ParseError as exc:
            results.append(PreviewResult(name, error=str(exc), limit=rows))
            continue
        status, reason = lifecycle.verdict(config, parsed)
        verdict = f"An import would end {status}" + (f": {reason}" if reason else ".")
        results.append(PreviewResult(name, parsed=parsed, verdict=verdict, limit=rows))
    return results
