"""A file read the way an import of a config would read it, storing nothing.

Nothing is stored, so the texts are made in the active language (pricefeed.texts)."""

from __future__ import annotations

import dataclasses
import functools
import logging

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext

from core.budget import CpuBudgetExceeded
from core.capped import ChildFailed, run_capped
from core.storedtext import Text, gettext_noop
from pricefeed import parsing
from pricefeed.columns import ExtraTable
from pricefeed.limits import file_size_problem, parse_limits
from pricefeed.models import PriceListConfig, PriceType
from pricefeed.parsing import sample
from pricefeed.texts import text_of, translated, translated_all

from . import lifecycle
from .source import ARCHIVES

logger = logging.getLogger(__name__)

# What the child reading the file (core.capped) may send back: its results, and the
# parse errors (a module of exception classes only).
SAMPLE_CLASSES = (
    "pricefeed.parsing.sample:Sampled",
    "pricefeed.parsing.types:ParsedFile",
    "pricefeed.parsing.errors",
)
# Seconds the child may take past its CPU budget, on a busy machine, before it is killed.
WALL_MARGIN = 5
OUT_OF_MEMORY = gettext_noop(
    "reading the file needs more than the %(limit)s bytes of memory a preview may use "
    "(PRICEFEED_PREVIEW_MEMORY_LIMIT): not read; an import reads it under the workers' limit"
)
OVER_CPU_TIME = gettext_noop(
    "reading the file took more than %(seconds)s s of CPU time "
    "(PRICEFEED_PREVIEW_CPU_SECONDS): stopped"
)
READER_DIED = gettext_noop(
    "the process reading the file ended without a result (status %(status)s: the "
    "spreadsheet reader crashed or ran out of memory): the file was refused"
)


@dataclasses.dataclass
class PreviewResult:
    name: str
    parsed: parsing.ParsedFile | None = None
    error: str = ""
    verdict: str = ""
    # The first rows of the file: the only ones kept (parsed.rows stays empty).
    rows: list[parsing.Row] = dataclasses.field(default_factory=list)
    limit: int = 20
    # The values beyond FIELDS of those rows, by row number.
    extras: dict[int, dict] = dataclasses.field(default_factory=dict)

    @property
    def sample(self) -> list[tuple]:
        return self.rows[: self.limit]

    @functools.cached_property
    def table(self) -> tuple[list[str], list[list]]:
        """The sample as the page shows it: the extra columns' headers, and each row's
        cells (its own, then its extra values)."""
        names = dict(PriceType.objects.values_list("code", "name"))
        extra = ExtraTable([self.extras.get(row[0], {}) for row in self.sample], names)
        return extra.headers, [
            [*row, *extra.cells(self.extras.get(row[0], {}))] for row in self.sample
        ]

    @property
    def row_warnings(self) -> list[tuple[int, str]]:
        """The first rows stored with a warning (an invalid barcode), in the active
        language."""
        warnings = self.parsed.row_warnings[: self.limit] if self.parsed else []
        return [(row, translated(text)) for row, text in warnings]

    @property
    def errors(self) -> list[tuple[int, str]]:
        """The first row errors, in the active language."""
        errors = self.parsed.errors[: self.limit] if self.parsed else []
        return [(row, translated(text)) for row, text in errors]


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
    ``rows`` rows (and its row errors, counts and verdict); stores nothing. The file is
    read in a child process under PRICEFEED_PREVIEW_MEMORY_LIMIT and
    PRICEFEED_PREVIEW_CPU_SECONDS (core.capped): a reader that runs out of memory, time
    or aborts ends that child, and the preview says why."""
    limits = parse_limits()
    problem = file_size_problem(len(data))
    if problem:
        return [PreviewResult(filename, error=translated(problem), limit=rows)]
    archive = parsing.detect_format(data) in ARCHIVES
    try:
        sampled = _sample_capped(
            data, filename, archive, lifecycle.options_for(config), limits, rows
        )
    except PreviewFailed as exc:
        return [PreviewResult(filename, error=translated(text_of(exc)), limit=rows)]
    results = []
    for item in sampled:
        if item.parsed is None:
            results.append(PreviewResult(item.name, error=translated(item.error), limit=rows))
            continue
        status, reason = lifecycle.verdict(config, item.parsed)
        item.parsed.warnings = translated_all(item.parsed.warnings)
        results.append(
            PreviewResult(
                item.name,
                parsed=item.parsed,
                verdict=_verdict(status, reason),
                rows=item.rows,
                limit=rows,
                extras=item.extras,
            )
        )
    return results


class PreviewFailed(Exception):
    """The file could not be read within the preview's limits."""


def _sample_capped(data, filename, archive, options, limits, rows) -> list[sample.Sampled]:
    """parsing.sample.sample() in a capped child process; PreviewFailed says why not."""
    memory = settings.PRICEFEED_PREVIEW_MEMORY_LIMIT
    seconds = settings.PRICEFEED_PREVIEW_CPU_SECONDS
    try:
        return run_capped(
            "pricefeed.parsing.sample:sample",
            data,
            filename,
            archive,
            options,
            limits,
            rows,
            memory=memory,
            cpu_seconds=seconds,
            timeout=seconds + WALL_MARGIN,
            allowed=SAMPLE_CLASSES,
        )
    except MemoryError:
        raise PreviewFailed(Text(OUT_OF_MEMORY, limit=memory)) from None
    except CpuBudgetExceeded:
        raise PreviewFailed(Text(OVER_CPU_TIME, seconds=seconds)) from None
    except ChildFailed as exc:
        logger.warning(
            "preview reader process ended how=%s status=%s file=%r",
            exc.how,
            exc.code,
            filename[:200],
            extra={"action": "preview_failed"},
        )
        if exc.how == "timeout":
            raise PreviewFailed(Text(OVER_CPU_TIME, seconds=seconds)) from None
        raise PreviewFailed(Text(READER_DIED, status=exc.code or 0)) from None
