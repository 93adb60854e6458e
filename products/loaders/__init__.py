"""Our catalogue's files: each format declared once (``FORMATS``: its guard on the
file's first bytes and its reader), recognised by content, never by the file's name.

    rows = read_catalogue(path, limits=load_limits(), own_code="id")

Every reader streams (the XML formats through xmlstream, bounded), checks each product
(rows.Rows.add) and hands them on in batches to ``rows.sink`` when one is set
(products.loading COPYs them into the database as they come).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from pricefeed.parsing.table import gc_paused

from .commerceml import OWN_CODES, read_commerceml
from .limits import CatalogueRefused, LoadLimits, load_limits
from .rows import Problem, Rows
from .template import read_csv, read_xlsx
from .yml import read_yml

__all__ = [
    "FORMATS",
    "OWN_CODES",
    "CatalogueRefused",
    "LoadLimits",
    "Problem",
    "Rows",
    "detect",
    "load_limits",
    "read_catalogue",
]

HEAD_BYTES = 1 << 16
BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def _xml_root(head: bytes) -> str:
    """The text of the file's head, for finding its root element whatever its encoding
    (UTF-8 or Windows-1251, both usual for these files)."""
    for bom in BOMS:
        if head.startswith(bom):
            head = head[len(bom) :]
    if not head.lstrip().startswith(b"<"):
        return ""
    return head.decode("utf-8", "ignore") + head.decode("cp1251", "ignore")


@dataclass(frozen=True)
class Format:
    name: str
    label: object  # shown to operators
    recognises: Callable[[bytes], bool]
    read: Callable[[BinaryIO, LoadLimits, Rows, str], Rows]


FORMATS = (
    Format(
        "xlsx",
        gettext_lazy("our template (xlsx)"),
        lambda head: head.startswith(b"PK\x03\x04"),
        lambda source, limits, rows, own_code: read_xlsx(source, limits, rows),
    ),
    Format(
        "commerceml",
        gettext_lazy("CommerceML 2 (import.xml, offers.xml)"),
        lambda head: "<КоммерческаяИнформация" in _xml_root(head),
        lambda source, limits, rows, own_code: read_commerceml(
            source, limits, rows, own_code=own_code
        ),
    ),
    Format(
        "yml",
        gettext_lazy("Yandex YML"),
        lambda head: "<yml_catalog" in _xml_root(head),
        lambda source, limits, rows, own_code: read_yml(source, limits, rows),
    ),
    Format(
        "csv",
        gettext_lazy("our template (CSV)"),
        lambda head: not _xml_root(head) and not head.startswith(b"\xd0\xcf\x11\xe0"),
        lambda source, limits, rows, own_code: read_csv(source, limits, rows),
    ),
)


def detect(head: bytes) -> Format:
    """The format of a file that starts with ``head``; CatalogueRefused if none."""
    if not head.strip():
        raise CatalogueRefused(_("the file is empty"))
    for candidate in FORMATS:
        if candidate.recognises(head):
            return candidate
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        raise CatalogueRefused(_("an old Excel workbook (xls): save it as xlsx or CSV"))
    raise CatalogueRefused(_("an XML file that is neither CommerceML (import.xml) nor Yandex YML"))


def read_catalogue(
    path: str | os.PathLike,
    *,
    limits: LoadLimits | None = None,
    own_code: str = "id",
    sink: Callable[[list[tuple]], None] | None = None,
) -> Rows:
    """The products of the catalogue file at ``path``, checked (the rest of what is
    sent to ``sink`` is still in ``rows.products`` until ``rows.flush()``)."""
    limits = limits or load_limits()
    try:
        size = Path(path).stat().st_size
    except OSError as exc:
        raise CatalogueRefused(
            _("cannot read the file: %(error)s") % {"error": exc.strerror}
        ) from None
    if size > limits.max_file_bytes:
        raise CatalogueRefused(
            _("the file is %(size)s bytes, over the %(limit)s-byte limit")
            % {"size": size, "limit": limits.max_file_bytes}
        )
    rows = Rows(sink=sink)
    # The cyclic collector paused while a file is read: reading makes tuples by the
    # million, none in a cycle, and the collector kept walking those held until the next
    # batch is sent (~15% of a million-product read).
    with open(path, "rb") as source, gc_paused():
        fmt = detect(source.read(HEAD_BYTES))
        source.seek(0)
        rows.format = fmt.name
        return fmt.read(source, limits, rows, own_code)
