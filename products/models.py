"""The distributor's own catalogue and the links of supplier lines to it.

A ``Product`` is ours: our code, name, brand, article, barcodes, unit and category path.
A ``SupplierLink`` says which of our products a supplier's SKU (within one price-list
config) is: one product per (config, supplier SKU), made by hand, by barcode, by article
and brand, by name similarity or imported from a file, with a confidence and a state.
Every change of a link is kept as a ``LinkEvent``.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, HashIndex
from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from pricefeed.models import PriceListConfig

# A barcode as stored: the digits of an EAN-8, UPC-A (12), EAN-13 or GTIN-14.
BARCODE_MAX_LENGTH = 14


class ProductQuerySet(models.QuerySet):
    def active(self) -> ProductQuerySet:
        return self.filter(retired_at__isnull=True)


class Product(models.Model):
    """One product of ours. A reload of the catalogue adds, changes and retires products;
    a product is never deleted while a link points at it (retired instead)."""

    own_code = models.CharField(_("own code"), max_length=100, unique=True)
    name = models.TextField(pgettext_lazy("product", "name"))
    brand = models.CharField(_("brand"), max_length=255, blank=True)
    article = models.CharField(_("manufacturer's article"), max_length=255, blank=True)
    barcodes = ArrayField(
        models.CharField(max_length=BARCODE_MAX_LENGTH),
        verbose_name=_("barcodes"),
        default=list,
        blank=True,
    )
    unit = models.CharField(_("unit"), max_length=32, blank=True)
    # The category path, its levels joined by " / " ("Крепёж / Болты").
    category = models.TextField(_("category"), blank=True)
    retired_at = models.DateTimeField(_("retired at"), null=True, blank=True)
    created_at = models.DateTimeField(pgettext_lazy("product", "added at"), db_default=Now())
    updated_at = models.DateTimeField(pgettext_lazy("product", "changed at"), db_default=Now())

    objects = ProductQuerySet.as_manager()

    class Meta:
        verbose_name = _("product")
        verbose_name_plural = _("products")
        ordering = ["own_code"]
        # No index on barcodes: matching finds a product by barcode through its tokens,
        # and the admin's search ORs the barcode with a name substring (a scan either
        # way); a GIN index was used by no plan and cost a million-product load ~8 s.

    def __str__(self) -> str:
        return f"{self.own_code} {self.name}"

    @property
    def active(self) -> bool:
        return self.retired_at is None


class SupplierLink(models.Model):
    """Which of our products a supplier's SKU is, within one config."""

    class Kind(models.TextChoices):
        MANUAL = "manual", pgettext_lazy("link kind", "by hand")
        BARCODE = "barcode", pgettext_lazy("link kind", "by barcode")
        ARTICLE = "article", pgettext_lazy("link kind", "by article and brand")
        NAME = "name", pgettext_lazy("link kind", "by name similarity")
        IMPORTED = "imported", pgettext_lazy("link kind", "imported")

    class State(models.TextChoices):
        AUTO = "auto", pgettext_lazy("link state", "linked automatically")
        PROPOSED = "proposed", pgettext_lazy("link state", "proposed")
        CONFIRMED = "confirmed", pgettext_lazy("link state", "confirmed")
        REJECTED = "rejected", pgettext_lazy("link state", "rejected")

    # No index of its own on config, product or confirmed_by: the unique (config,
    # supplier_sku) and link_product serve the first two, and the partial index below
    # the few confirmed by hand. Each index more was one more entry per link the
    # matching writes (tens of thousands per import).
    # The config and the product a link names are held by statement triggers, not by
    # foreign keys (LINK_TARGETS_GUARD in migration 0008): a foreign key checked and
    # locked each product row one by one at commit, and the row locks logged whole
    # pages; the triggers check a statement's links in one join, and a delete of a
    # product or config waits for the link writes under way (an advisory lock).
    config = models.ForeignKey(
        PriceListConfig,
        on_delete=models.CASCADE,
        related_name="product_links",
        verbose_name=_("config"),
        db_index=False,
        db_constraint=False,
    )
    supplier_sku = models.CharField(_("supplier's SKU"), max_length=255)
    product = models.ForeignKey(
        Product,
        on_delete=models.PROTECT,
        related_name="links",
        verbose_name=_("product"),
        db_index=False,
        db_constraint=False,
    )
    kind = models.CharField(_("how it was made"), max_length=10, choices=Kind)
    # 0..1: how sure the matching was (1 for a link made or confirmed by a person).
    confidence = models.DecimalField(_("confidence"), max_digits=4, decimal_places=3)
    state = models.CharField(pgettext_lazy("link", "state"), max_length=10, choices=State)
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("confirmed by"),
        db_index=False,
    )
    confirmed_at = models.DateTimeField(_("confirmed at"), null=True, blank=True)
    created_at = models.DateTimeField(pgettext_lazy("link", "made at"), db_default=Now())
    updated_at = models.DateTimeField(pgettext_lazy("link", "changed at"), db_default=Now())

    class Meta:
        verbose_name = _("supplier link")
        verbose_name_plural = _("supplier links")
        constraints = [
            models.UniqueConstraint(
                fields=["config", "supplier_sku"], name="one_link_per_supplier_sku"
            ),
        ]
        indexes = [
            models.Index(fields=["product"], name="link_product"),
            # A user's links (deleting a user nulls them): the few confirmed by hand.
            models.Index(
                fields=["confirmed_by"],
                name="link_confirmed_by",
                condition=models.Q(confirmed_by__isnull=False),
            ),
        ]
        # The review queue's decisions (products.review): confirm, reject, choose.
        permissions = [("review_supplierlink", _("Can confirm, reject and choose supplier links"))]

    def __str__(self) -> str:
        return f"{self.supplier_sku} → {self.product_id}"


# LinkEvent and LinkCandidate are written set-based by the matching, tens of thousands
# of rows per import, and have no foreign key in the database to what they refer to:
# checking each row at commit took the cascade as long as writing them. Deleting goes
# through Django, which cascades or nulls them as ``on_delete`` says.


class LinkEvent(models.Model):
    """One change of a link: what it pointed at before and after, by whom, how."""

    link = models.ForeignKey(
        SupplierLink,
        on_delete=models.CASCADE,
        related_name="events",
        verbose_name=_("link"),
        db_constraint=False,
    )
    at = models.DateTimeField(pgettext_lazy("link event", "at"), db_default=Now())
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("user"),
        db_index=False,  # the partial index below: the matching's events have no user
    )
    product_before = models.ForeignKey(
        Product,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("product before"),
        db_constraint=False,
        db_index=False,  # the partial index below: a link's first event has none
    )
    product_after = models.ForeignKey(
        Product,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("product after"),
        db_constraint=False,
    )
    state = models.CharField(
        pgettext_lazy("link", "state"), max_length=10, choices=SupplierLink.State
    )
    kind = models.CharField(_("how it was made"), max_length=10, choices=SupplierLink.Kind)
    confidence = models.DecimalField(_("confidence"), max_digits=4, decimal_places=3)
    note = models.TextField(_("note"), blank=True)

    class Meta:
        verbose_name = _("link change")
        verbose_name_plural = _("link changes")
        ordering = ["link", "at", "pk"]
        indexes = [
            models.Index(
                fields=["user"], name="linkevent_user", condition=models.Q(user__isnull=False)
            ),
            models.Index(
                fields=["product_before"],
                name="linkevent_product_before",
                condition=models.Q(product_before__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.link_id} {self.state} {self.at:%Y-%m-%d %H:%M}"


class LinkCandidate(models.Model):
    """A product the matching found for a supplier line it did not link automatically
    (its link proposed, or the line left unlinked), for the review queue: what matched,
    what differed, how similar. Rewritten for a line each time it is matched."""

    config = models.ForeignKey(
        PriceListConfig,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("config"),
        db_constraint=False,
        db_index=False,  # the unique (config, supplier_sku, product) serves
    )
    supplier_sku = models.CharField(_("supplier's SKU"), max_length=255)
    product = models.ForeignKey(
        Product,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("product"),
        db_constraint=False,
    )
    kind = models.CharField(_("how it was found"), max_length=10, choices=SupplierLink.Kind)
    score = models.DecimalField(_("similarity"), max_digits=4, decimal_places=3)
    rank = models.PositiveSmallIntegerField(_("rank"))
    # What agreed and what differed, as the review queue shows them side by side:
    # [{"attribute": "size", "line": "M8x40", "product": "M8x50"}, ...].
    matched = models.JSONField(_("what matched"), default=list, blank=True)
    differed = models.JSONField(_("what differed"), default=list, blank=True)
    found_at = models.DateTimeField(_("found at"), db_default=Now())

    class Meta:
        verbose_name = _("link candidate")
        verbose_name_plural = _("link candidates")
        ordering = ["config", "supplier_sku", "rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["config", "supplier_sku", "product"], name="one_candidate_per_product"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.supplier_sku} ~ {self.product_id} ({self.score})"


class ProductKey(models.Model):
    """What matching compares a product by (products.normalize), kept beside it and
    refreshed before matching for the products changed since (products.keys):
    its article and brand as compared, its name's canonical words sorted (``name_key``,
    with a trigram index) and its decisive attributes. A retired product has none."""

    product = models.OneToOneField(
        Product, on_delete=models.CASCADE, primary_key=True, related_name="key"
    )
    article_key = models.CharField(max_length=255, blank=True)
    brand_key = models.CharField(max_length=255, blank=True)
    name_key = models.TextField(blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    # The product's updated_at the key was made from: a newer one makes it stale.
    made_from = models.DateTimeField()

    class Meta:
        # Machinery, derived from the products: no one views or edits it in the admin.
        default_permissions = ()
        indexes = [
            GinIndex(fields=["name_key"], opclasses=["gin_trgm_ops"], name="productkey_name_trgm"),
            # The products named with exactly a line's words.
            HashIndex(fields=["name_key"], name="productkey_name_exact"),
        ]

    def __str__(self) -> str:
        return f"{self.product_id}: {self.name_key}"


class MatchToken(models.Model):
    """One token of an active product's key, the inverted index the matching finds
    candidates through: ``b:<barcode>``, ``a:<article key>`` and ``w:<name word>``."""

    pk = models.CompositePrimaryKey("token", "product")
    token = models.TextField()
    # No foreign key in the database: its check per row made writing the tokens of a
    # million products several times slower; they are written only by keys_refresh, and
    # deleted with their product (Django's cascade) or by it.
    product = models.ForeignKey(
        Product, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )

    class Meta:
        default_permissions = ()  # machinery, as ProductKey
        indexes = [models.Index(fields=["product"], name="matchtoken_product")]

    def __str__(self) -> str:
        return f"{self.token} {self.product_id}"


class TokenCount(models.Model):
    """How many active products have a token (MatchToken), kept by keys_refresh as it
    rewrites tokens: the matching weighs a line's words by their rarity and finds
    candidates through the rarest, without counting postings for every line."""

    token = models.TextField(primary_key=True)
    products = models.IntegerField()

    class Meta:
        default_permissions = ()  # machinery, as ProductKey

    def __str__(self) -> str:
        return f"{self.token} {self.products}"


class KnownBrand(models.Model):
    """A brand some active product has, as written: kept by keys_refresh with the keys
    (read by the matching to find the brand in the name of a line that has none,
    without reading a million products for a hundred brands)."""

    brand = models.TextField(primary_key=True)

    class Meta:
        default_permissions = ()  # machinery, as ProductKey

    def __str__(self) -> str:
        return self.brand


class MatchVersion(models.Model):
    """Two versions: ``catalogue``, a new value (from a sequence: never the same twice)
    set by a trigger on every statement that writes products (migration 0006), and
    ``keys``, the catalogue's value the keys were last refreshed at. When they are
    equal no product changed since: keys_refresh does not look for stale keys among a
    million products. And ``keyed``, how many products had keys at that refresh (the
    matching weighs words by it)."""

    CATALOGUE = "catalogue"
    KEYS = "keys"
    KEYED = "keyed"

    name = models.CharField(max_length=16, primary_key=True)
    value = models.BigIntegerField()

    class Meta:
        default_permissions = ()  # machinery, as ProductKey

    def __str__(self) -> str:
        return f"{self.name} {self.value}"
