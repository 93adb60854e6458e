"""What a workbook's cell texts cost once the spreadsheet reader holds them.

python-calamine (0.9.1) gives every cell that refers to a shared string (xlsx ``t="s"``,
xls LABELSST) its own copy of the string: a 1.15 MB xlsx of 150,000 cells referring to
one 32,767-character string asks for 4.9 GB and aborts the process (a Rust allocation
failure, not a MemoryError). The guards add up those copies, and the text stored in the
cells themselves, and refuse a workbook past ``Limits.max_text_bytes`` before calamine
opens it.
"""

from __future__ import annotations

from core.storedtext import Text

from . import messages
from .archives import mib
from .errors import WorkbookRefused
from .types import Limits, limit_name


def check_text_bytes(size: int, limits: Limits) -> None:
    """Raise WorkbookRefused when cell texts of ``size`` bytes exceed the budget."""
    if size > limits.max_text_bytes:
        raise WorkbookRefused(
            Text(
                messages.WORKBOOK_TEXT_BYTES,
                size=size,
                limit=mib(limits.max_text_bytes),
                setting=limit_name("max_text_bytes"),
            )
        )
