"""What a notification mail says about an import: the file's own name, the reason in
that name's terms, a link to the import in the admin and a short summary of its diff.

Pure reading: nothing here changes state or sends anything. Strings people read are
rendered by the templates, in the language active when they are (services renders each
mail under ``translation.override``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.urls import reverse
from django.utils.translation import gettext

from core.texts import Text, as_json, foreign, shown, translated
from pricefeed.models import PriceImport, PriceListConfig
from pricefeed.parsing import messages as parsing_messages

# How much of a diff a mail shows: SKUs added and removed, and price changes.
SKUS_SHOWN = 5
CHANGES_SHOWN = 5


def file_name(price_import: PriceImport) -> str:
    """The name of the file an import read: the attachment's, or the archive member's
    (its path inside the archive); the attachment key only when the file had none."""
    if price_import.filename:
        return price_import.filename
    key = price_import.attachment_key
    return key.split("/", 1)[1] if "/" in key else key


def _named(stored: Any, name: str) -> Any:
    """A stored text (core.storedtext) whose "attachment" names the file instead, as
    errors made while unpacking say where the file itself is meant: "archive
    'attachment': …", "unsupported archive: rar (attachment)", "attachment is 31,457,280
    bytes, more than 30 MiB"."""
    if not isinstance(stored, dict):
        return stored
    if stored.get("text") == parsing_messages.ATTACHMENT:
        return as_json(foreign(name))
    if stored.get("text") == parsing_messages.ATTACHMENT_ARCHIVE:
        return Text(parsing_messages.ARCHIVE, path=name).as_json()
    params = stored.get("params")
    if not isinstance(params, dict):
        return stored
    return {**stored, "params": {key: _named(value, name) for key, value in params.items()}}


def reason(price_import: PriceImport) -> str:
    """Why an import failed, naming its file where the error says "attachment", or why
    it is held for review, in the active language (the mail's)."""
    if price_import.review == PriceImport.Review.HELD:
        return gettext(
            "held for review, not current yet: %(why)s. Until an operator approves it, "
            "the previous prices stay current."
        ) % {"why": shown(price_import, "review_reason")}
    if not price_import.last_error:
        return ""
    named = _named(price_import.last_error_text, file_name(price_import))
    return translated(named) or price_import.last_error


def row_errors(errors: list[dict]) -> list[dict]:
    """An import's stored row errors with each error in the active language."""
    return [{**error, "error": translated(error.get("error", ""))} for error in errors]


def admin_url(price_import: PriceImport) -> str:
    """The import's page in the admin under PRICEFEED_PUBLIC_URL; "" when that is not set
    (a mail then names the import by its number only)."""
    base = settings.PRICEFEED_PUBLIC_URL.strip().rstrip("/")
    if not base:
        return ""
    return base + reverse("admin:pricefeed_priceimport_change", args=[price_import.pk])


def config_admin_url(config: PriceListConfig) -> str:
    """The config's page in the admin under PRICEFEED_PUBLIC_URL; "" when that is not set."""
    base = settings.PRICEFEED_PUBLIC_URL.strip().rstrip("/")
    if not base:
        return ""
    return base + reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk])


def public_url_problem(value: str) -> str:
    """What is wrong with a PRICEFEED_PUBLIC_URL value ("" when nothing: empty is fine)."""
    value = value.strip()
    if not value:
        return ""
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        return f"PRICEFEED_PUBLIC_URL {value!r} is not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return (
            f"PRICEFEED_PUBLIC_URL {value!r} is not an absolute http(s) URL "
            "(scheme and host, e.g. https://pricefeed.example.com)"
        )
    if parts.query or parts.fragment:
        return f"PRICEFEED_PUBLIC_URL {value!r} has a query or fragment; give scheme and host"
    return ""


@dataclass(frozen=True)
class PriceChange:
    """One SKU's price before and after; ``percent`` is None when there is no old price
    to compare with (none, or zero)."""

    sku: str
    old: Decimal | None
    new: Decimal | None
    percent: Decimal | None

    @property
    def rise(self) -> bool:
        return self.percent is not None and self.percent > 0


@dataclass(frozen=True)
class DiffSummary:
    """An import against the previous one of its config, as a mail tells it.

    ``previous_import`` is None for a config's first price list (then ``added`` is the
    count of its rows). ``changes`` are the largest price changes first, among the
    ``changes_seen`` the diff keeps: all of them, or a sample (pricefeed's DIFF_SAMPLE)."""

    previous_import: int | None
    added: int
    removed: int
    changed: int
    added_skus: list[str] = field(default_factory=list)
    removed_skus: list[str] = field(default_factory=list)
    changes: list[PriceChange] = field(default_factory=list)
    changes_seen: int = 0
    # Price changes beyond the config's price_jump_percent, and the unreadable rows of a
    # PARTIAL import that kept their previous value (pricefeed.catalogue).
    jumps: int = 0
    jump_percent: int | None = None
    unreadable: int = 0

    @property
    def all_changes_seen(self) -> bool:
        return self.changes_seen >= self.changed

    @property
    def more_added(self) -> int:
        return max(self.added - len(self.added_skus), 0)

    @property
    def more_removed(self) -> int:
        return max(self.removed - len(self.removed_skus), 0)

    @property
    def nothing_changed(self) -> bool:
        return self.previous_import is not None and not (self.added or self.removed or self.changed)


def diff_summary(diff: dict | None, *, changes: int = CHANGES_SHOWN) -> DiffSummary | None:
    """The summary of an import's ``diff`` (pricefeed.imports.diff); None when there is
    none (a FAILED import stores none)."""
    if not diff or "added" not in diff:
        return None
    sample = [_change(item) for item in diff.get("changed_sample") or []]
    changed = int(diff.get("changed") or 0)
    return DiffSummary(
        previous_import=diff.get("previous_import"),
        added=int(diff.get("added") or 0),
        removed=int(diff.get("removed") or 0),
        changed=changed,
        added_skus=[str(s) for s in (diff.get("added_sample") or [])[:SKUS_SHOWN]],
        removed_skus=[str(s) for s in (diff.get("removed_sample") or [])[:SKUS_SHOWN]],
        changes=sorted(sample, key=_size, reverse=True)[:changes],
        changes_seen=len(sample),
        jumps=int(diff.get("jumps") or 0),
        jump_percent=diff.get("jump_percent"),
        unreadable=int(diff.get("unreadable") or 0),
    )


def _price(value) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _change(item: dict) -> PriceChange:
    old, new = _price(item.get("old")), _price(item.get("new"))
    percent = None
    if old is not None and new is not None and old != 0:
        percent = ((new - old) * 100 / abs(old)).quantize(Decimal("0.1"))
    return PriceChange(sku=str(item.get("sku", "")), old=old, new=new, percent=percent)


def _size(change: PriceChange) -> tuple[int, Decimal]:
    """Largest first: by the size of the change in percent; a price that appeared or
    went (nothing to compare with) after every one that has a percent."""
    if change.percent is None:
        return (0, Decimal(0))
    return (1, abs(change.percent))
