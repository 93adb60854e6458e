from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Now
from django.utils import formats
from django.utils.dates import WEEKDAYS_ABBR
from django.utils.translation import gettext, ngettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from .schedule import Schedule


def default_sender_auth() -> str:
    """A new config's sender authentication: ``require`` once PRICEFEED_AUTHSERV_IDS
    names a receiving server, so that a forged From imports nothing by default;
    ``record`` before (``require`` would then match no mail at all). Read when a config
    is made: existing configs keep theirs."""
    if settings.PRICEFEED_AUTHSERV_IDS:
        return PriceListConfig.SenderAuth.REQUIRE
    return PriceListConfig.SenderAuth.RECORD


class PriceType(models.Model):
    """A kind of price suppliers send side by side (опт, розница, РРЦ, закупка): the
    operator keeps the list, and a config maps its price columns to these."""

    code = models.SlugField(pgettext_lazy("price type", "code"), max_length=32, unique=True)
    name = models.CharField(pgettext_lazy("price type", "name"), max_length=100)
    position = models.PositiveSmallIntegerField(_("order"), default=0)

    class Meta:
        verbose_name = _("price type")
        verbose_name_plural = _("price types")
        ordering = ["position", "code"]

    def __str__(self) -> str:
        return self.name


class PriceListConfig(models.Model):
    """How to recognise one supplier's price list in a mailbox, and how to read it.

    Patterns are case-insensitive globs (``*@supplier.ru``, ``price*.xlsx``); a pattern
    that starts with ``re:`` is a regular expression searched in the value. Empty
    matches anything.
    """

    class Mode(models.TextChoices):
        SNAPSHOT = "snapshot", _("Snapshot (the file is the whole price list)")
        DELTA = "delta", _("Delta (the file holds changes only)")

    class SenderAuth(models.TextChoices):
        IGNORE = "ignore", _("Ignore (match on the From address alone)")
        RECORD = "record", _("Record the receiving server's verdict")
        REQUIRE = "require", _("Require DMARC pass or an aligned DKIM pass")

    class NumberFormat(models.TextChoices):
        AUTO = "auto", _("Detect (1 234,50 / 1,234.50 / 1234.5)")
        COMMA_DECIMAL = "comma", _("Comma decimal (1 234,50)")
        DOT_DECIMAL = "dot", _("Dot decimal (1,234.50)")

    name = models.CharField(_("name"), max_length=100)
    mailbox = models.ForeignKey(
        "mailboxes.Mailbox",
        on_delete=models.CASCADE,
        related_name="configs",
        verbose_name=_("mailbox"),
    )
    enabled = models.BooleanField(pgettext_lazy("price-list config", "enabled"), default=True)
    sender_pattern = models.CharField(
        _("sender pattern"),
        max_length=500,
        blank=True,
        help_text=_(
            "A case-insensitive glob such as *@supplier.ru, or re: and a regular "
            "expression; empty matches anything."
        ),
    )
    subject_pattern = models.CharField(_("subject pattern"), max_length=500, blank=True)
    filename_pattern = models.CharField(_("file name pattern"), max_length=500, blank=True)
    sender_auth = models.CharField(
        _("sender authentication"),
        max_length=10,
        choices=SenderAuth,
        default=default_sender_auth,
        help_text=_(
            "What the receiving server's Authentication-Results (from "
            "PRICEFEED_AUTHSERV_IDS) must say of the sender. “Record” only notes the "
            "verdict: mail with a forged From address is still imported, and answered "
            "when the config replies to the sender. Choose “Require” once "
            "PRICEFEED_AUTHSERV_IDS names your receiving servers (new configs then "
            "default to it)."
        ),
    )
    columns = models.JSONField(
        _("columns"),
        default=dict,
        blank=True,
        help_text=_(
            'Column mapping, e.g. {"sku": "Артикул", "price": "C"}; empty = by header synonyms.'
        ),
    )
    sheet = models.CharField(
        _("sheet"),
        max_length=100,
        blank=True,
        help_text=_("Sheet name or 1-based number; empty = first."),
    )
    number_format = models.CharField(
        _("number format"), max_length=10, choices=NumberFormat, default=NumberFormat.AUTO
    )
    mode = models.CharField(_("mode"), max_length=10, choices=Mode, default=Mode.SNAPSHOT)
    default_currency = models.CharField(
        _("default currency"),
        max_length=10,
        blank=True,
        help_text=_("Currency when the file names none, e.g. RUB."),
    )
    max_bad_rows_percent = models.PositiveSmallIntegerField(
        _("failed rows limit, %"),
        default=10,
        help_text=_("More failed rows than this share of data rows fails the whole import."),
    )
    # Price sense (pricefeed.catalogue): what is flagged, refused or held for an operator.
    allow_nonpositive_prices = models.BooleanField(
        _("allow zero and negative prices"),
        default=False,
        help_text=_("Off: a row whose price is zero or below is a row error."),
    )
    price_jump_percent = models.PositiveIntegerField(
        _("price jump, %"),
        default=50,
        validators=[MinValueValidator(1), MaxValueValidator(100_000)],
        help_text=_("A price that changes by more than this share is flagged in the diff."),
    )
    hold_removed_percent = models.PositiveSmallIntegerField(
        _("hold when it removes more than, %"),
        default=30,
        validators=[MaxValueValidator(100)],
        help_text=_(
            "A list that removes more than this share of the current catalogue waits for "
            "an operator to approve it. 100 = never held for this."
        ),
    )
    hold_shrink_percent = models.PositiveSmallIntegerField(
        _("hold when its rows drop by more than, %"),
        default=50,
        validators=[MaxValueValidator(100)],
        help_text=_(
            "A list with this much fewer rows than the current catalogue waits for an "
            "operator to approve it. 100 = never held for this."
        ),
    )
    # When the list is expected (pricefeed.schedule): every N hours, or on weekdays by a
    # time of day; nothing set = not expected, never overdue.
    expected_every_hours = models.PositiveSmallIntegerField(
        _("expected every, hours"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("A list is due this many hours after the last one; empty = no such rule."),
    )
    expected_weekdays = models.JSONField(
        _("expected on weekdays"),
        default=list,
        blank=True,
        help_text=_("The days of the week a list is due on (stored as ISO numbers, Monday = 1)."),
    )
    expected_by = models.TimeField(
        _("expected by"),
        null=True,
        blank=True,
        help_text=_("The time of day a list is due on each of those weekdays."),
    )
    expected_timezone = models.CharField(
        _("time zone"),
        max_length=64,
        blank=True,
        help_text=_("An IANA name such as Europe/Moscow; empty = the server's TIME_ZONE."),
    )
    expected_grace_minutes = models.PositiveIntegerField(
        _("grace, minutes"),
        default=0,
        validators=[MaxValueValidator(24 * 60)],
        help_text=_("How long after the due time a list still counts as on time."),
    )
    created_at = models.DateTimeField(
        pgettext_lazy("price-list config", "created at"), db_default=Now()
    )
    updated_at = models.DateTimeField(
        pgettext_lazy("price-list config", "updated at"), auto_now=True
    )

    class Meta:
        ordering = ["mailbox__name", "name"]
        verbose_name = _("price-list config")
        verbose_name_plural = _("price-list configs")
        constraints = [
            models.UniqueConstraint(fields=["mailbox", "name"], name="config_name_per_mailbox"),
        ]

    def __str__(self) -> str:
        return self.name

    @admin.display(description=_("expected"))
    def expected_display(self) -> str:
        """When its lists are expected, in the active language ("" when they are not)."""
        hours = self.expected_every_hours
        if hours:
            return ngettext("every %(n)d hour", "every %(n)d hours", hours) % {"n": hours}
        if not (self.expected_weekdays and self.expected_by is not None):
            return ""
        days = ", ".join(str(WEEKDAYS_ABBR[d - 1]) for d in sorted(self.expected_weekdays))
        return gettext("%(days)s by %(time)s") % {
            "days": days,
            "time": self.expected_by.strftime("%H:%M"),
        }

    def schedule(self) -> Schedule | None:
        """When its lists are expected; None when they are not."""
        return Schedule.build(
            every_hours=self.expected_every_hours,
            weekdays=self.expected_weekdays or (),
            by=self.expected_by,
            zone=self.expected_timezone or settings.TIME_ZONE,
            grace_minutes=self.expected_grace_minutes,
        )


class PriceImport(models.Model):
    """One price-list file from one message for one config: "the document"."""

    class Status(models.TextChoices):
        PENDING = "PENDING", _("Pending")
        RUNNING = "RUNNING", _("Running")
        SUCCEEDED = "SUCCEEDED", _("Succeeded")
        PARTIAL = "PARTIAL", _("Partial (some rows failed)")
        FAILED = "FAILED", _("Failed")

    class Review(models.TextChoices):
        HELD = "HELD", pgettext_lazy("price import", "Held for review")
        APPROVED = "APPROVED", pgettext_lazy("price import", "Approved")
        REJECTED = "REJECTED", pgettext_lazy("price import", "Rejected")

    message = models.ForeignKey(
        "mailboxes.InboundMessage",
        on_delete=models.CASCADE,
        related_name="imports",
        verbose_name=_("message"),
    )
    config = models.ForeignKey(
        PriceListConfig,
        on_delete=models.PROTECT,
        related_name="imports",
        verbose_name=_("config"),
    )
    # Identifies the file inside the message: "part<N>" in MIME walk order, then
    # "/<path>" for a file inside an archive attachment.
    attachment_key = models.CharField(_("attachment key"), max_length=255)
    filename = models.CharField(_("file name"), max_length=500, blank=True)
    content_type = models.CharField(_("content type"), max_length=255, blank=True)
    size = models.BigIntegerField(_("size, bytes"), default=0)
    sha256 = models.CharField("SHA-256", max_length=64, blank=True)
    status = models.CharField(
        _("status"), max_length=10, choices=Status, default=Status.PENDING, db_index=True
    )
    format = models.CharField(_("format"), max_length=10, blank=True)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    # Runs that ended with their worker process (killed, crashed, out of memory):
    # core.claims.ClaimedWork.crashed; FAILED at PRICEFEED_CRASH_MAX_ATTEMPTS.
    crashes = models.PositiveSmallIntegerField(_("crashes"), default=0, db_default=0)
    claimed_by = models.CharField(
        pgettext_lazy("price import", "claimed by"), max_length=255, blank=True
    )
    claimed_at = models.DateTimeField(
        pgettext_lazy("price import", "claimed at"), null=True, blank=True
    )
    next_attempt_at = models.DateTimeField(_("next attempt at"), null=True, blank=True)
    # Last time the import was handed to the task queue (creation or sweep).
    queued_at = models.DateTimeField(_("queued at"), db_default=Now())
    rows_total = models.PositiveIntegerField(_("rows in total"), default=0)
    rows_ok = models.PositiveIntegerField(_("rows imported"), default=0)
    rows_failed = models.PositiveIntegerField(_("rows failed"), default=0)
    rows_skipped = models.PositiveIntegerField(_("rows skipped"), default=0)
    # Rows read so far while RUNNING, written every PRICEFEED_IMPORT_PROGRESS_INTERVAL
    # seconds from a connection of its own (pricefeed.imports.progress); at the end
    # every data row read (rows_total), or those read before a FAILED parse stopped.
    rows_read = models.PositiveIntegerField(
        _("rows read"),
        default=0,
        db_default=0,
        help_text=_("Rows read so far while the import runs; every data row read once it ends."),
    )
    # The cells its workbook spans (as its guard measured them before the reader opened
    # it), charged to its message's PRICEFEED_MESSAGE_PARSE_CELLS by its last run
    # (pricefeed.imports.lifecycle.charge_cells): a run replaces its own charge, so a
    # retried or requeued import is never charged twice; 0 for a text table, a file
    # refused unread, or an import not run yet.
    cells_charged = models.BigIntegerField(
        _("cells charged"),
        default=0,
        db_default=0,
        help_text=_(
            "Cells the file's workbook spans, charged to what its message may read "
            "(PRICEFEED_MESSAGE_PARSE_CELLS)."
        ),
    )
    # How the file was read: sheet, encoding, delimiter, header row, column mapping.
    parse_info = models.JSONField(_("how the file was read"), default=dict, blank=True)
    errors = models.JSONField(_("row errors"), default=list, blank=True)
    diff = models.JSONField(_("diff"), default=dict, blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    # The same as a msgid and its values (core.storedtext.Text), shown in the reader's
    # language; last_error holds its English, for logs, the API and search.
    last_error_text = models.JSONField(default=dict, db_default={}, blank=True, editable=False)
    # Whether its rows became the config's current catalogue (pricefeed.catalogue): at
    # once (accepted_at set, review empty), or held for an operator and then approved
    # or rejected. FAILED imports have neither.
    review = models.CharField(
        _("review"), max_length=10, choices=Review, blank=True, default="", db_index=True
    )
    review_reason = models.TextField(_("why it is held"), blank=True)
    # The same as a msgid and its values (core.storedtext.Text), shown in the reader's
    # language; review_reason holds its English, for logs, the API and search.
    review_reason_text = models.JSONField(default=dict, db_default={}, blank=True, editable=False)
    reviewed_by = models.CharField(_("reviewed by"), max_length=150, blank=True)
    reviewed_at = models.DateTimeField(_("reviewed at"), null=True, blank=True)
    accepted_at = models.DateTimeField(
        _("current since"),
        null=True,
        blank=True,
        help_text=_("When its rows became the config's current catalogue."),
    )
    created_at = models.DateTimeField(
        pgettext_lazy("price import", "created at"), db_default=Now(), db_index=True
    )
    started_at = models.DateTimeField(
        pgettext_lazy("price import", "started at"), null=True, blank=True
    )
    finished_at = models.DateTimeField(
        pgettext_lazy("price import", "finished at"), null=True, blank=True
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("price import")
        verbose_name_plural = _("price imports")
        permissions = [
            ("rerun_priceimport", "Can run failed imports again"),
            ("review_priceimport", "Can approve or reject held imports"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["message", "config", "attachment_key"], name="one_import_per_attachment"
            ),
        ]
        indexes = [
            # The import that made a config's catalogue current (catalogue.current_import,
            # read by every import), and those accepted since a moment: one index entry,
            # not a sort of all the config's imports.
            models.Index(
                "config",
                models.F("accepted_at").desc(),
                models.F("id").desc(),
                condition=models.Q(accepted_at__isnull=False),
                name="import_accepted",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.config} / {self.filename} ({self.get_status_display()})"

    @admin.display(description=_("progress"), ordering="rows_read")
    def progress_display(self) -> str:
        """How far the import got: rows read so far while it runs, every row read once
        it ended; empty before it starts."""
        if self.status == self.Status.PENDING and not self.rows_read:
            return ""
        rows = formats.number_format(self.rows_read, force_grouping=True)
        if self.status == self.Status.RUNNING:
            return ngettext(
                "%(rows)s row read so far", "%(rows)s rows read so far", self.rows_read
            ) % {"rows": rows}
        return ngettext("%(rows)s row read", "%(rows)s rows read", self.rows_read) % {"rows": rows}


ITEM_KEY_BITS = 32  # row numbers below 2**32; import ids below 2**31


def item_key(import_id: int, row_number: int) -> int:
    """A price item's primary key: its import and its row in one bigint, so that the
    primary key's index also finds an import's items (see PriceItem)."""
    if not 0 <= row_number < 1 << ITEM_KEY_BITS:
        raise ValueError(f"row number {row_number} out of range")
    return (import_id << ITEM_KEY_BITS) + row_number


class StockKind(models.TextChoices):
    """What a stock cell said besides a plain figure (pricefeed.parsing.values)."""

    EXACT = "", _("a figure")
    AT_LEAST = "at_least", _("at least")
    YES = "yes", _("in stock")
    NO = "no", _("out of stock")


class PriceItemQuerySet(models.QuerySet):
    def of_import(self, import_id: int) -> PriceItemQuerySet:
        """The items of one import, found through the primary key's index."""
        return self.filter(
            pk__gte=item_key(import_id, 0),
            pk__lt=item_key(import_id + 1, 0),
            price_import_id=import_id,
        )


class PriceItem(models.Model):
    """One price row of an import.

    The primary key is (import id << 32) + row number (item_key): the one index the
    table has serves both the primary key and "the items of import N" (a key range,
    PriceItemQuerySet.of_import). A second index on price_import made a 1M-row COPY
    ~20% slower (bench/parse.py). Nor is there a database-level foreign key: its
    per-row referential check made such a COPY take ~6 s longer. Items are only ever
    written by the import that owns them, in its transaction, and deleted with it
    (signals.price_items_delete).
    """

    id = models.BigIntegerField(primary_key=True, editable=False)
    price_import = models.ForeignKey(
        PriceImport,
        on_delete=models.DO_NOTHING,
        related_name="items",
        db_constraint=False,
        db_index=False,
        verbose_name=_("import"),
    )
    sku = models.CharField(_("sku"), max_length=255)
    name = models.TextField(_("name"), blank=True)
    price = models.DecimalField(_("price"), max_digits=18, decimal_places=4, null=True, blank=True)
    currency = models.CharField(_("currency"), max_length=10, blank=True)
    quantity = models.DecimalField(
        _("quantity"), max_digits=18, decimal_places=4, null=True, blank=True
    )
    row_number = models.PositiveIntegerField(_("row"))
    # What matching links the line to our products by (products.SupplierLink): the
    # maker's brand and article, and the line's valid barcodes (digits).
    brand = models.CharField(_("brand"), max_length=255, blank=True, db_default="")
    article = models.CharField(
        _("manufacturer's article"), max_length=255, blank=True, db_default=""
    )
    barcodes = ArrayField(
        models.CharField(max_length=14),
        verbose_name=_("barcodes"),
        blank=True,
        default=list,
        db_default=[],
    )
    # The rest of what the line says beyond its SKU, name, price, currency and stock
    # (pricefeed.parsing.ExtraColumns). Every one has a database default: a list
    # without such columns is COPYed without them (pricefeed.sql.COPY_ITEMS).
    barcodes_invalid = ArrayField(
        models.CharField(max_length=32),
        verbose_name=_("invalid barcodes"),
        blank=True,
        default=list,
        db_default=[],
    )
    unit = models.CharField(_("unit"), max_length=50, blank=True, db_default="")
    pack = models.DecimalField(
        _("pack size"), max_digits=18, decimal_places=4, null=True, blank=True
    )
    min_order = models.DecimalField(
        _("minimum order"), max_digits=18, decimal_places=4, null=True, blank=True
    )
    category = models.TextField(_("category"), blank=True, db_default="")
    stock_text = models.CharField(_("stock as written"), max_length=255, blank=True, db_default="")
    stock_kind = models.CharField(
        _("stock kind"), max_length=10, choices=StockKind, blank=True, db_default=""
    )
    # Price type code -> {"price": decimal text, "currency": code}: the prices besides
    # ``price`` (the config's main one).
    prices = models.JSONField(_("other prices"), blank=True, default=dict, db_default={})
    # Warehouse -> {"quantity": decimal text or null, "kind", "text"}.
    stocks = models.JSONField(_("stock per warehouse"), blank=True, default=dict, db_default={})
    # The catalogue (pricefeed.catalogue) is the items that have been current: an item
    # is an entry from ``valid_from`` (its import became current then, and it added or
    # changed its SKU) until ``valid_to`` (a later import changed or removed the SKU;
    # ``ended_by``). The rows are stored once: a config's first list is made current
    # as it is COPYed, and a later one marks what it changed. Read through the
    # CatalogueEntry view.
    config = models.ForeignKey(
        PriceListConfig,
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
        db_index=False,
        verbose_name=_("config"),
    )
    valid_from = models.DateTimeField(_("current from"), null=True, blank=True)
    valid_to = models.DateTimeField(_("current until"), null=True, blank=True)
    ended_by = models.ForeignKey(
        PriceImport,
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
        db_index=False,
        verbose_name=_("ended by import"),
    )

    objects = PriceItemQuerySet.as_manager()

    class Meta:
        verbose_name = _("price item")
        verbose_name_plural = _("price items")
        # One index for the catalogue, partial (an item that never became current costs
        # its COPY nothing here): NULLS NOT DISTINCT makes two current entries of a SKU
        # (valid_to empty) a conflict, while its past values differ in valid_to. It
        # also reads the catalogue, a SKU's history and the catalogue as of a moment in
        # SKU order: a first list's COPY keeps one index, not two (a second one cost a
        # million-row COPY ~0.5-0.9 s more; bench/parse.py). PostgreSQL 15+.
        constraints = [
            models.UniqueConstraint(
                fields=["config", "sku", "valid_to"],
                condition=models.Q(valid_from__isnull=False),
                nulls_distinct=False,
                name="one_current_entry_per_sku",
            ),
        ]
        indexes = [
            # Past values only: written when an entry ends, never by a COPY. What left
            # the catalogue since a moment.
            models.Index(
                fields=["config", "valid_to"],
                condition=models.Q(valid_to__isnull=False),
                name="catalogue_ended",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.sku} {self.price} {self.currency}"


class OverdueAlert(models.Model):
    """A config's expected list did not come in one period: made once per (config,
    period start) by the sweep (pricefeed.overdue), in the transaction that publishes the
    alert, so two instances checking at once announce it once."""

    config = models.ForeignKey(
        PriceListConfig,
        on_delete=models.CASCADE,
        related_name="overdue_alerts",
        verbose_name=_("config"),
    )
    period_start = models.DateTimeField(_("period start"))
    due_at = models.DateTimeField(_("due at"))
    # The latest list of the config before the alert (None: none ever came).
    last_arrival = models.DateTimeField(_("last list arrived"), null=True, blank=True)
    created_at = models.DateTimeField(pgettext_lazy("overdue alert", "raised at"), db_default=Now())

    class Meta:
        ordering = ["-due_at", "-id"]
        verbose_name = _("overdue list alert")
        verbose_name_plural = _("overdue list alerts")
        constraints = [
            models.UniqueConstraint(
                fields=["config", "period_start"], name="one_overdue_alert_per_period"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.config} / {self.due_at:%Y-%m-%d %H:%M}"


class CatalogueEntry(models.Model):
    """One value of one SKU in a config's catalogue, for the time it was current: a
    price item that became current (a database view of PriceItem, read-only here).

    The current catalogue is the entries with no ``valid_to``; the catalogue as of a
    moment is those with ``valid_from <= moment < valid_to``; a SKU's history is its
    entries in order. An accepted import (pricefeed.catalogue) ends the entries it
    changes or removes and makes current its items that add or change a SKU: it marks
    what changed, and stores no row twice.
    """

    id = models.BigIntegerField(primary_key=True, editable=False)
    # Deleted with their import's items (signals.price_items_delete): nothing to do
    # here, the view has no rows of its own.
    config = models.ForeignKey(
        PriceListConfig,
        on_delete=models.DO_NOTHING,
        related_name="catalogue",
        db_constraint=False,
        verbose_name=_("config"),
    )
    sku = models.CharField(_("sku"), max_length=255)
    name = models.TextField(_("name"), blank=True)
    price = models.DecimalField(_("price"), max_digits=18, decimal_places=4, null=True, blank=True)
    currency = models.CharField(_("currency"), max_length=10, blank=True)
    quantity = models.DecimalField(
        _("quantity"), max_digits=18, decimal_places=4, null=True, blank=True
    )
    brand = models.CharField(_("brand"), max_length=255, blank=True)
    article = models.CharField(_("manufacturer's article"), max_length=255, blank=True)
    barcodes = ArrayField(models.CharField(max_length=14), verbose_name=_("barcodes"))
    barcodes_invalid = ArrayField(
        models.CharField(max_length=32), verbose_name=_("invalid barcodes")
    )
    unit = models.CharField(_("unit"), max_length=50, blank=True)
    pack = models.DecimalField(
        _("pack size"), max_digits=18, decimal_places=4, null=True, blank=True
    )
    min_order = models.DecimalField(
        _("minimum order"), max_digits=18, decimal_places=4, null=True, blank=True
    )
    category = models.TextField(_("category"), blank=True)
    stock_text = models.CharField(_("stock as written"), max_length=255, blank=True)
    stock_kind = models.CharField(_("stock kind"), max_length=10, choices=StockKind, blank=True)
    prices = models.JSONField(_("other prices"), default=dict)
    stocks = models.JSONField(_("stock per warehouse"), default=dict)
    price_import = models.ForeignKey(
        PriceImport,
        on_delete=models.DO_NOTHING,
        related_name="catalogue_entries",
        db_constraint=False,
        verbose_name=_("set by import"),
    )
    row_number = models.PositiveIntegerField(_("row"))
    valid_from = models.DateTimeField(_("current from"))
    valid_to = models.DateTimeField(_("current until"), null=True, blank=True)
    ended_by = models.ForeignKey(
        PriceImport,
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
        verbose_name=_("ended by import"),
    )

    class Meta:
        managed = False
        db_table = "pricefeed_catalogueentry"
        ordering = ["config", "sku", "-valid_from"]
        verbose_name = _("catalogue entry")
        verbose_name_plural = _("catalogue")

    def __str__(self) -> str:
        return f"{self.config} / {self.sku}"
