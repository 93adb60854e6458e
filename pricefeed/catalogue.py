"""The current catalogue of a config: what its supplier's prices are now, and were.

The catalogue is kept in the items table: an entry is a price item that became current
(PriceItem.valid_from) and, once a later import changed or removed its SKU, stopped
being so (valid_to, ended_by); CatalogueEntry is the view of those items. No row is
stored twice: a config's first list is made current as it is COPYed
(``first_list_start``, ``first_list_done``), and a later import marks what it changed.

An import whose rows are accepted becomes current: in the transaction that finishes it,
with the config's row locked so that two imports of one config take turns, the entries
it changes or removes are ended and its row of each SKU it adds or changes is made
current (``catalogue_apply``). A snapshot removes the SKUs it no longer lists, but never one of
its own unreadable rows: a PARTIAL import keeps the previous value of a row it could not
read. A delta removes nothing.

An import that would remove too much of the catalogue, or whose rows collapse, is held
(``hold_reason``): it is SUCCEEDED or PARTIAL but not current until an operator approves
it; a rejected one never is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from core.texts import Text, gettext_noop
from outbox.services import publish

from . import sql
from .models import CatalogueEntry, PriceImport, PriceListConfig, PriceType, item_key

Review = PriceImport.Review
Status = PriceImport.Status
ACCEPTABLE = (Status.SUCCEEDED, Status.PARTIAL)
# At most this many SKUs of a PARTIAL import's unreadable rows are kept in its
# parse_info (``unreadable_skus``); past it, the import removes nothing from the
# catalogue (it cannot tell an unreadable row from a removed one).
UNREADABLE_SKUS_KEPT = 10_000

# A catalogue this small is never a reason to hold an import.
HOLD_MIN_CURRENT = 20


# Why an import is held, stored in English and translated where shown (pricefeed.texts).
HOLD_REMOVES = gettext_noop(
    "it removes %(removed)s of the %(current)s current items (%(share)s%%), more than "
    "the %(limit)s%% allowed"
)
HOLD_SHRINKS = gettext_noop(
    "it has %(rows)s items against %(current)s current (%(share)s%% fewer), more than "
    "the %(limit)s%% allowed"
)
HOLD_TYPE_GOES = gettext_noop(
    "the price %(type)s goes from %(went)s of the %(current)s current items (%(share)s%%), "
    "more than the %(limit)s%% allowed"
)


# Announced in the transaction that makes an import current (accepted_at set): what
# the import added or changed is then matched to our products (products.handlers).
ACCEPTED_EVENT = "import.accepted"


# -- reading ------------------------------------------------------------------------------


def current_at(moment: datetime | None) -> Q:
    """The entries current at ``moment`` (None: now)."""
    if moment is None:
        return Q(valid_to__isnull=True)
    return Q(valid_from__lte=moment) & (Q(valid_to__isnull=True) | Q(valid_to__gt=moment))


def catalogue_current(config_id: int, *, as_of: datetime | None = None) -> QuerySet[CatalogueEntry]:
    """The config's catalogue now, or as it stood at ``as_of``, by SKU."""
    return CatalogueEntry.objects.filter(current_at(as_of), config_id=config_id).order_by("sku")


def catalogue_before(config_id: int, moment: datetime) -> QuerySet[CatalogueEntry]:
    """The catalogue just before ``moment``: what an import made current at that moment
    was compared with."""
    return (
        CatalogueEntry.objects.filter(config_id=config_id, valid_from__lt=moment)
        .filter(Q(valid_to__isnull=True) | Q(valid_to__gte=moment))
        .order_by("sku")
    )


def sku_history(config_id: int, sku: str) -> QuerySet[CatalogueEntry]:
    """Every value the SKU has had in the config's catalogue, the latest first."""
    return CatalogueEntry.objects.filter(config_id=config_id, sku=sku).order_by(
        "-valid_from", "-id"
    )


@dataclass(frozen=True)
class Changes:
    """What changed in a config's catalogue after a moment: the entries that became
    current since (added or changed SKUs) and the SKUs that left it since."""

    since: datetime
    current: QuerySet[CatalogueEntry]
    removed: QuerySet[CatalogueEntry]


# Past this many imports made current since the moment, the entries that became current
# are looked for by their time instead of by their imports' key ranges.
CHANGES_BY_IMPORT_MAX = 200


def catalogue_changes(config_id: int, *, since: datetime) -> Changes:
    entries = CatalogueEntry.objects.filter(config_id=config_id)
    # An entry became current when its import did (valid_from is its accepted_at): the
    # imports accepted since give key ranges of the items table, so that a million
    # current entries are not read to find the few that are new.
    accepted = list(
        PriceImport.objects.filter(config_id=config_id, accepted_at__gt=since).values_list(
            "pk", flat=True
        )[: CHANGES_BY_IMPORT_MAX + 1]
    )
    became = Q(valid_from__gt=since)
    if len(accepted) <= CHANGES_BY_IMPORT_MAX:
        became &= Q(pk__in=[]) if not accepted else _key_ranges(accepted)
    current = entries.filter(became, valid_to__isnull=True).order_by("sku")
    # Ended since, with nothing current for the SKU now: removed.
    listed_now = CatalogueEntry.objects.filter(
        config_id=config_id, sku=OuterRef("sku"), valid_to__isnull=True
    )
    removed = (
        entries.filter(valid_to__gt=since, valid_from__lte=since)
        .filter(~Exists(listed_now))
        .order_by("sku")
    )
    return Changes(since=since, current=current, removed=removed)


def _key_ranges(import_ids: list[int]) -> Q:
    ranges = Q()
    for import_id in import_ids:
        ranges |= Q(pk__gte=item_key(import_id, 0), pk__lt=item_key(import_id + 1, 0))
    return ranges


def changes_since_import(price_import: PriceImport) -> Changes:
    """What changed in its config's catalogue after the import became current (or, for
    an import never current, after it finished)."""
    moment = price_import.accepted_at or price_import.finished_at or price_import.created_at
    return catalogue_changes(price_import.config_id, since=moment)


# -- judging ------------------------------------------------------------------------------


def current_import(config_id: int) -> PriceImport | None:
    """The import that last made its config's catalogue current."""
    return (
        PriceImport.objects.filter(config_id=config_id, accepted_at__isnull=False)
        .order_by("-accepted_at", "-pk")
        .first()
    )


def current_size(config_id: int) -> int:
    return CatalogueEntry.objects.filter(config_id=config_id, valid_to__isnull=True).count()


def is_empty(config_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(sql.CATALOGUE_ANY, [config_id])
        return not cursor.fetchone()[0]


def hold_reason(
    config: PriceListConfig,
    *,
    rows_ok: int,
    removed: int,
    current: int,
    types_went: dict[str, int] | None = None,
) -> str:
    """Why an import of ``config`` with these counts must wait for an operator ("" when it
    need not): it removes more than ``hold_removed_percent`` of the ``current``
    catalogue, lists more than ``hold_shrink_percent`` fewer items, or takes a price
    type (``types_went``: code -> the items still listed that lost it) from more than
    ``hold_removed_percent`` of the current items (a column the supplier renamed: the
    opt prices of the whole list would go without a word). Deltas, a first list and a
    catalogue of fewer than HOLD_MIN_CURRENT items are never held (in a list of a
    handful of items one item is a large share)."""
    if config.mode != PriceListConfig.Mode.SNAPSHOT or current < HOLD_MIN_CURRENT:
        return ""
    if config.hold_removed_percent < 100 and removed * 100 > config.hold_removed_percent * current:
        return Text(
            HOLD_REMOVES,
            removed=removed,
            current=current,
            share=round(removed * 100 / current),
            limit=config.hold_removed_percent,
        )
    shrink = current - rows_ok
    if config.hold_shrink_percent < 100 and shrink * 100 > config.hold_shrink_percent * current:
        return Text(
            HOLD_SHRINKS,
            rows=rows_ok,
            current=current,
            share=round(shrink * 100 / current),
            limit=config.hold_shrink_percent,
        )
    limit = config.hold_removed_percent
    for code, went in sorted((types_went or {}).items()):
        if limit < 100 and went * 100 > limit * current:
            return Text(
                HOLD_TYPE_GOES,
                type=_price_type_name(code),
                went=went,
                current=current,
                share=round(went * 100 / current),
                limit=limit,
            )
    return ""


def _price_type_name(code: str) -> str:
    """A price type as the operator named it («Опт»), its code when it has no row."""
    name = PriceType.objects.filter(code=code).values_list("name", flat=True).first()
    return f"«{name}»" if name else code


def is_jump(old: Decimal | None, new: Decimal | None, percent: int) -> bool:
    """A price change of more than ``percent`` of the old price (from or to zero: any)."""
    if old is None or new is None or old == new:
        return False
    if old == 0:
        return True
    return abs(new - old) * 100 > abs(old) * percent


# -- writing ------------------------------------------------------------------------------


def config_lock(config_id: int) -> datetime:
    """Locks the config's row until the transaction ends (imports of one config take
    turns at its catalogue) and returns the moment after the lock was granted, the time
    its catalogue changes at (database time)."""
    with connection.cursor() as cursor:
        cursor.execute(sql.CONFIG_LOCK, [config_id])
        cursor.execute(sql.CLOCK)
        return cursor.fetchone()[0]


def new_rows(import_id: int, repeated_skus: bool) -> tuple[str, list[int]]:
    """An import's last row per SKU (all of its rows when no SKU repeats), with the
    columns of an entry, and its parameters."""
    keys = [item_key(import_id, 0), item_key(import_id + 1, 0)]
    if not repeated_skus:
        return sql.ENTRY_ROWS_AS_STORED, keys
    return sql.ENTRY_ROWS_LAST_PER_SKU, keys


@contextlib.contextmanager
def planner(**settings: str) -> Iterator[None]:
    """The planner's ``settings`` for the statements run inside, set for the
    transaction and reset after them. On an error they are not reset:
    the transaction is rolled back, and with it the settings."""
    with connection.cursor() as cursor:
        for name, value in settings.items():
            cursor.execute(f"SET LOCAL {name} = '{value}'")
    yield
    with connection.cursor() as cursor:
        for name in settings:
            cursor.execute(f"RESET {name}")


def kept_skus(skus: Sequence[str]) -> tuple[str, list[Any]]:
    """A query of the SKUs a snapshot keeps though it does not list them (a column
    ``sku``), and its parameters."""
    return "SELECT unnest(%s::text[]) AS sku", [list(skus)]


def compare(
    price_import: PriceImport, *, repeated_skus: bool = True, unreadable: Sequence[str] | None = ()
) -> None:
    """Finds every difference between the import's rows and its config's current
    catalogue, in one hash join, into a temporary table (sql.COMPARE) that the diff
    (imports.diff) and catalogue_apply read; inside the caller's transaction, after the
    rows are stored, with the config locked (config_lock). A snapshot's ``unreadable``
    SKUs keep their value; None: more rows were unreadable than were kept, and the
    import removes nothing."""
    config = price_import.config
    removing = config.mode == PriceListConfig.Mode.SNAPSHOT and unreadable is not None
    new, keys = new_rows(price_import.pk, repeated_skus)
    kept, kept_params = kept_skus(unreadable or ())
    query = sql.COMPARE.format(new=new, old=sql.CATALOGUE_CURRENT, kept=kept)
    with connection.cursor() as cursor:
        cursor.execute(sql.COMPARED_DROP)
        # The rows were COPYed in this transaction and the catalogue may have been empty
        # at the last ANALYZE: without statistics the planner took a nested loop of 100k
        # x 100k rows (minutes), or a merge join that sorts both sides; hashed, a
        # million take about a second. Compiling the join's expressions (JIT) cost more
        # than it saved (~0.3 s). The rest of the transaction plans as usual: the few
        # rows kept are found by key.
        with planner(**sql.JOIN_PLANNER, enable_nestloop="off", jit="off"):
            cursor.execute(query, [*keys, config.pk, *kept_params, removing])
        cursor.execute(f"ANALYZE {sql.COMPARED}")


@dataclass(frozen=True)
class StoredRows:
    """What storing an import's rows found out (imports.storage.ItemWriter):
    ``repeated_skus`` False only when no SKU repeats; ``rows_digest`` and
    ``catalogue_digest`` the digests of the stored rows, None when not known."""

    repeated_skus: bool = True
    rows_digest: str | None = None
    catalogue_digest: str | None = None


@dataclass(frozen=True)
class Acceptance:
    """What taking an import's rows into its config's catalogue means, decided once,
    under the config lock (``acceptance``); the diff (imports.diff), the hold
    (``held``) and the catalogue update (``catalogue_apply``) read it.

    ``at``: when the catalogue changes (config_lock's moment). ``rows``: what storing
    them found out. ``unreadable``: a snapshot's SKUs of unreadable rows, which keep
    their value (None: more rows were unreadable than were kept, and nothing is
    removed). ``previous``: the import that made the catalogue current. ``current``: how
    many entries are current (None: not counted, the same list again). ``same_list``:
    the catalogue is already exactly this list (same_list), which changes nothing.
    ``compared``: compare() filled the table of differences for it in this transaction.
    ``first_list``: its rows were stored current into an empty catalogue
    (first_list_start)."""

    price_import: PriceImport
    at: datetime
    rows: StoredRows
    unreadable: list[str] | None
    previous: PriceImport | None
    current: int | None
    same_list: bool
    compared: bool
    first_list: bool = False

    def held(self, *, rows_ok: int, removed: int, types_went: dict[str, int] | None = None) -> str:
        """Why the import waits for an operator (hold_reason), "" when it need not: a
        first list or the same list again never does."""
        if self.first_list or self.current is None:
            return ""
        return hold_reason(
            self.price_import.config,
            rows_ok=rows_ok,
            removed=removed,
            current=self.current,
            types_went=types_went,
        )


def acceptance(
    price_import: PriceImport,
    *,
    at: datetime,
    rows: StoredRows,
    unreadable: list[str] | None,
    first_list: bool = False,
) -> Acceptance:
    """Decides how the import's rows meet its config's catalogue (Acceptance), with the
    config locked (config_lock returned ``at``) and the rows stored: reads the current
    import and the catalogue's size once, and finds every difference (compare) when
    there is a catalogue to compare with and the list is not the same again."""
    config_id = price_import.config_id
    previous = current_import(config_id)
    if first_list:
        return Acceptance(
            price_import,
            at,
            rows,
            unreadable=[],
            previous=previous,
            current=0,
            same_list=False,
            compared=False,
            first_list=True,
        )
    same = same_list(price_import.config, rows.catalogue_digest, unreadable, previous)
    current = None if same else current_size(config_id)
    compared = bool(current)
    if compared:
        compare(price_import, repeated_skus=rows.repeated_skus, unreadable=unreadable)
    return Acceptance(
        price_import,
        at,
        rows,
        unreadable=unreadable,
        previous=previous,
        current=current,
        same_list=same,
        compared=compared,
    )


def catalogue_apply(decision: Acceptance) -> None:
    """Makes the import's rows current in its config's catalogue at ``decision.at``,
    inside the caller's transaction, after its rows are stored: the entries it changes
    or removes are ended and its rows that add or change a SKU become current. The
    same list again writes nothing; into an empty catalogue everything is added."""
    assert not decision.first_list, "a first list is made current by first_list_done"
    price_import, at = decision.price_import, decision.at
    if decision.same_list:
        _accepted(price_import, at)
        return
    # As the ORM stores a time, so that the ORM's comparisons with it hold.
    moment = connection.ops.adapt_datetimefield_value(at)
    with connection.cursor() as cursor:
        if decision.current == 0:  # nothing to end or compare with
            new, keys = new_rows(price_import.pk, decision.rows.repeated_skus)
            cursor.execute(sql.CATALOGUE_ADD_ALL.format(new=new), [moment, *keys, *keys])
        else:
            assert decision.compared, "acceptance() compares a catalogue that is not empty"
            # A few rows, found by key: with statistics from before the COPY the planner
            # hashed them and read the whole items table (every import's).
            with planner(enable_hashjoin="off", enable_mergejoin="off"):
                # Ended first: the rows replacing them may then be current (one per SKU).
                cursor.execute(sql.CATALOGUE_END, [moment, price_import.pk])
                cursor.execute(sql.CATALOGUE_ADD, [moment])
    _accepted(price_import, at)


def _accepted(price_import: PriceImport, at: datetime) -> None:
    """The import is current from ``at``: recorded, and announced (ACCEPTED_EVENT) in
    the same transaction."""
    PriceImport.objects.filter(pk=price_import.pk).update(accepted_at=at)
    publish(
        ACCEPTED_EVENT,
        price_import,
        {"import_id": price_import.pk, "config_id": price_import.config_id},
    )


def first_list_start(config_id: int) -> datetime | None:
    """For an import about to store its rows: when its config's catalogue
    is empty, locks the config as config_lock does and returns its moment; the rows are
    then made current as they are stored, and first_list_done finishes the job. None
    when the catalogue is not empty: the rows are compared with it after they are
    stored (catalogue_apply). A first list is never held (hold_reason), so the rows of
    one that is not FAILED are current; a FAILED one's are rolled back."""
    if not is_empty(config_id):
        return None
    at = config_lock(config_id)
    return at if is_empty(config_id) else None


def first_list_done(price_import: PriceImport, *, at: datetime, again: Sequence[str]) -> None:
    """A first list stored current from ``at`` (first_list_start): ``again``, the SKUs
    it listed more than once (imports.storage.ItemWriter), are made current in their
    last row, as catalogue_apply would; the import is current from ``at``."""
    if again:
        keys = [item_key(price_import.pk, 0), item_key(price_import.pk + 1, 0)]
        skus = sorted(again)
        with connection.cursor() as cursor:
            cursor.execute(sql.FIRST_LIST_REPEATS, [*keys, skus])
            cursor.execute(sql.FIRST_LIST_LAST_ROWS, [at, *keys, skus])
    _accepted(price_import, at)


def same_list(
    config: PriceListConfig,
    digest: str | None,
    unreadable: Sequence[str] | None,
    previous: PriceImport | None,
) -> bool:
    """Whether the catalogue is already exactly a snapshot with this catalogue digest
    (imports.storage.ItemWriter; it names the mode) and no unreadable row: the import
    that made it current is a SUCCEEDED one with the same digest, every field of every
    row the same, in the same order. Such a list changes nothing, removes nothing and is
    never held."""
    if config.mode != PriceListConfig.Mode.SNAPSHOT or digest is None or unreadable != []:
        return False
    return (
        previous is not None
        and previous.status == Status.SUCCEEDED
        and (previous.parse_info or {}).get("catalogue_digest") == digest
    )


# -- review -------------------------------------------------------------------------------


class ReviewRefused(Exception):
    """An approval or rejection that cannot be made (the message says why)."""


NOT_HELD = gettext_noop("import %(id)s is not held for review")
LATER_IS_CURRENT = gettext_noop(
    "a later list of %(config)s is already current (import %(later)s): reject this one"
)


def import_approve(*, import_id: int, user: str) -> None:
    """A held import becomes current, unless a later import of its config already is."""
    with transaction.atomic():
        price_import = PriceImport.objects.select_related("config").get(pk=import_id)
        at = config_lock(price_import.config_id)
        price_import.refresh_from_db()
        if price_import.review != Review.HELD:
            raise ReviewRefused(Text(NOT_HELD, id=str(import_id)))
        later = (
            PriceImport.objects.filter(
                config_id=price_import.config_id,
                accepted_at__isnull=False,
                created_at__gt=price_import.created_at,
            )
            .order_by("-accepted_at")
            .first()
        )
        if later is not None:
            raise ReviewRefused(
                Text(LATER_IS_CURRENT, config=price_import.config.name, later=later.pk)
            )
        info = price_import.parse_info or {}
        rows = StoredRows(repeated_skus=info.get("repeated_skus") is not False)
        unreadable = info.get("unreadable_skus", [])
        catalogue_apply(acceptance(price_import, at=at, rows=rows, unreadable=unreadable))
        PriceImport.objects.filter(pk=import_id).update(
            review=Review.APPROVED, reviewed_by=user, reviewed_at=at
        )


def import_reject(*, import_id: int, user: str) -> None:
    """A held import never becomes current."""
    with transaction.atomic():
        updated = PriceImport.objects.filter(pk=import_id, review=Review.HELD).update(
            review=Review.REJECTED, reviewed_by=user, reviewed_at=timezone.now()
        )
        if not updated:
            raise ReviewRefused(Text(NOT_HELD, id=str(import_id)))
