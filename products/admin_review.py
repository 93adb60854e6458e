"""Supplier links in the admin: their list (with each link's history on its page) and the
review queue, where a person decides what the matching left open (products.review).

The queue is a page of the SupplierLink admin (``review/``): viewers see it, operators
(``products.review_supplierlink``) decide; making a product of ours from a line also
asks ``products.add_product``. Every decision is a plain form posted to the page, so
the queue works without JavaScript; with it, keys move between lines and decide
(products/static/products/review.js, hints on the page).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext, ngettext, pgettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.adminutils import EMPTY, ListAdminMixin, absolute, label, truncated, when
from pricefeed.admin_catalogue import amount
from pricefeed.models import PriceItem, PriceListConfig
from pricefeed.parsing.values import barcode_valid

from . import review, review_queue
from .models import LinkCandidate, LinkEvent, Product, SupplierLink

State = SupplierLink.State
PAGE_SIZE = 20
# The most proposals one bulk confirm takes: a page's, with room to spare.
BULK_LIMIT = 5 * PAGE_SIZE
# How many products the "any product" field suggests as one types.
SUGGESTIONS = 15
REVIEW_PERMISSION = "products.review_supplierlink"
ADD_PRODUCT_PERMISSION = "products.add_product"

# The attributes the matching reports as matched or differed, in the reader's
# language; an attribute not named here is shown as the matching named it.
ATTRIBUTES = {
    "name": pgettext_lazy("attribute", "name"),
    "brand": pgettext_lazy("attribute", "brand"),
    "article": pgettext_lazy("attribute", "article"),
    "barcode": pgettext_lazy("attribute", "barcode"),
    "barcodes": pgettext_lazy("attribute", "barcode"),
    "unit": pgettext_lazy("attribute", "unit"),
    "size": pgettext_lazy("attribute", "size"),
    "volume": pgettext_lazy("attribute", "volume"),
    "weight": pgettext_lazy("attribute", "weight"),
    "pack": pgettext_lazy("attribute", "pack count"),
    "colour": pgettext_lazy("attribute", "colour"),
    "color": pgettext_lazy("attribute", "colour"),
}
# The columns of the side-by-side table that an attribute of that name lights up.
COLUMN_OF = {"name": "name", "brand": "brand", "article": "article", "barcode": "barcodes"}
COLUMN_OF["barcodes"] = "barcodes"
COLUMNS = ("code", "name", "brand", "article", "barcodes", "unit")


def _plain(value: str) -> str:
    """A brand or an article as compared when the matching said nothing of it: case,
    spaces and separators left out."""
    return re.sub(r"[\W_]+", "", value).casefold()


def attribute_name(attribute: object) -> str:
    return str(ATTRIBUTES.get(str(attribute), attribute))


def compared(item: PriceItem, product: Product, matched: list, differed: list) -> dict[str, str]:
    """Each column of a candidate's row marked ``match`` or ``differ``: as the matching
    reported it, or else (brand, article, barcodes) by a plain comparison."""
    marks: dict[str, str] = {}
    for entries, mark in ((matched, "match"), (differed, "differ")):
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict) and (column := COLUMN_OF.get(str(entry.get("attribute")))):
                marks[column] = mark
    pairs = {
        "brand": (_plain(item.brand), _plain(product.brand)),
        "article": (_plain(item.article), _plain(product.article)),
    }
    for column, (ours, theirs) in pairs.items():
        if column not in marks and ours and theirs:
            marks[column] = "match" if ours == theirs else "differ"
    if "barcodes" not in marks and item.barcodes and product.barcodes:
        marks["barcodes"] = "match" if set(item.barcodes) & set(product.barcodes) else "differ"
    return marks


def said_entries(entries: object) -> list[str]:
    """What matched or differed, as the queue says it: "размер: M8x40 ≠ M8x50"."""
    said = []
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        name = attribute_name(entry.get("attribute", ""))
        line, product = entry.get("line"), entry.get("product")
        if line in (None, "") and product in (None, ""):
            said.append(name)
        elif line == product or product in (None, ""):
            said.append(f"{name}: {line}")
        else:
            said.append(f"{name}: {line or EMPTY} ≠ {product or EMPTY}")
    return said


# -- forms ---------------------------------------------------------------------------------


class QueueFilterForm(forms.Form):
    """The queue's filters, from the query string."""

    config = forms.ModelChoiceField(
        PriceListConfig.objects.order_by("name"),
        required=False,
        label=_("config"),
        empty_label=_("all configs"),
    )
    show = forms.ChoiceField(
        required=False,
        label=_("show"),
        choices=[
            ("", _("proposed and unlinked")),
            (review_queue.PROPOSED, _("proposed only")),
            (review_queue.UNLINKED, _("unlinked only")),
        ],
    )
    q = forms.CharField(required=False, label=_("SKU or name"), max_length=255)


class DecisionForm(forms.Form):
    """One decision on one line, as the queue's buttons post it."""

    ACTIONS = ("confirm", "reject", "choose", "code")

    config = forms.IntegerField(min_value=1)
    sku = forms.CharField(max_length=255, strip=False)
    action = forms.ChoiceField(choices=[(a, a) for a in ACTIONS], required=False)
    # The product shown as proposed (confirm, reject) or the candidate chosen.
    product = forms.IntegerField(min_value=1, required=False)
    choose = forms.IntegerField(min_value=1, required=False)
    own_code = forms.CharField(max_length=100, required=False)


class ProductFromLineForm(forms.ModelForm):
    """Our new product, prefilled from the supplier's line; its own code is asked."""

    barcodes = forms.CharField(
        required=False,
        label=_("barcodes"),
        help_text=_("EAN-8, UPC-A, EAN-13 or GTIN-14, separated by spaces or commas."),
    )

    class Meta:
        model = Product
        fields = ["own_code", "name", "brand", "article", "barcodes", "unit", "category"]
        widgets = {"name": forms.TextInput(attrs={"size": 80})}

    def clean_barcodes(self) -> list[str]:
        codes = [c for c in re.split(r"[\s,;|]+", self.cleaned_data["barcodes"]) if c]
        wrong = [c for c in codes if not barcode_valid(c)]
        if wrong:
            raise forms.ValidationError(
                gettext("Not a valid barcode: %(codes)s") % {"codes": ", ".join(wrong)}
            )
        return list(dict.fromkeys(codes))


# -- the list of links -----------------------------------------------------------------


@admin.register(SupplierLink)
class SupplierLinkAdmin(ListAdminMixin, admin.ModelAdmin):
    list_display = [
        "short_sku",
        "short_config",
        "short_product",
        "short_state",
        "short_kind",
        "short_confidence",
        "decided",
    ]
    list_filter = ["config", "state", "kind"]
    list_select_related = ["config", "product", "confirmed_by"]
    search_fields = ["=supplier_sku", "=product__own_code", "product__name"]
    search_help_text = _("A supplier's SKU, our product's code, or a part of its name.")
    ordering = ["config", "supplier_sku"]
    show_full_result_count = False
    fields = (
        "config",
        "supplier_sku",
        "product_link",
        "state",
        "kind",
        "confidence",
        "confirmed_by",
        "confirmed_at",
        "created_at",
        "updated_at",
        "history",
    )
    readonly_fields = fields
    actions = ["confirm_selected", "reject_selected"]
    change_list_template = "products/review/link_list.html"

    # Links are made by the matching, the review queue and links_import; a page of its
    # own changes nothing (its actions decide), and only a superuser deletes one.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        user = request.user
        if not (user.is_active and user.is_superuser):
            return False
        return super().has_delete_permission(request, obj)

    def has_review_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REVIEW_PERMISSION)

    def changelist_view(self, request, extra_context=None):
        context = {"review_url": reverse("admin:products_supplierlink_review")}
        return super().changelist_view(request, {**context, **(extra_context or {})})

    @admin.display(description=_("supplier's SKU"), ordering="supplier_sku")
    def short_sku(self, obj: SupplierLink) -> str:
        return truncated(obj.supplier_sku, width="s")

    @admin.display(description=_("config"), ordering="config__name")
    def short_config(self, obj: SupplierLink) -> str:
        return truncated(obj.config.name, width="s")

    @admin.display(description=_("product"), ordering="product__own_code")
    def short_product(self, obj: SupplierLink) -> str:
        return truncated(f"{obj.product.own_code} · {obj.product.name}", width="l")

    @admin.display(description=pgettext_lazy("link", "state"), ordering="state")
    def short_state(self, obj: SupplierLink) -> str:
        return label(obj, "state")

    @admin.display(description=_("how it was made"), ordering="kind")
    def short_kind(self, obj: SupplierLink) -> str:
        return label(obj, "kind")

    @admin.display(description=_("confidence"), ordering="confidence")
    def short_confidence(self, obj: SupplierLink) -> str:
        return amount(obj.confidence, places=2)

    @admin.display(description=_("decided"), ordering="confirmed_at")
    def decided(self, obj: SupplierLink) -> str:
        if obj.confirmed_at is None:
            return EMPTY
        who = obj.confirmed_by.get_username() if obj.confirmed_by else EMPTY
        return format_html("{}<br>{}", truncated(who, width="s"), when(obj.confirmed_at))

    @admin.display(description=_("product"))
    def product_link(self, obj: SupplierLink) -> str:
        url = product_url(obj.product_id)
        return (
            format_html('<a href="{}">{}</a>', url, str(obj.product)) if url else str(obj.product)
        )

    @admin.display(description=_("history"))
    def history(self, obj: SupplierLink) -> str:
        events = LinkEvent.objects.filter(link=obj).select_related(
            "user", "product_before", "product_after"
        )
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    absolute(event.at),
                    event.user.get_username() if event.user else EMPTY,
                    event.product_before.own_code if event.product_before else EMPTY,
                    event.product_after.own_code if event.product_after else EMPTY,
                    event.get_state_display(),
                    event.get_kind_display(),
                    amount(event.confidence, places=2),
                )
                for event in events
            ),
        )
        if not rows:
            return gettext("no changes recorded")
        heads = (
            pgettext("link event", "at"),
            gettext("user"),
            gettext("product before"),
            gettext("product after"),
            pgettext("link", "state"),
            gettext("how it was made"),
            gettext("confidence"),
        )
        head = format_html_join("", "<th>{}</th>", ((h,) for h in heads))
        return format_html('<table class="pf-link-history"><tr>{}</tr>{}</table>', head, rows)

    @admin.action(description=_("Confirm selected links"), permissions=["review"])
    def confirm_selected(self, request, queryset):
        proposals = queryset.filter(state__in=review.CONFIRMABLE).values_list("pk", "product_id")
        count = review.links_confirm(proposals=list(proposals), user=person(request))
        self.message_user(request, confirmed_message(count), messages.SUCCESS)

    @admin.action(description=_("Reject selected links"), permissions=["review"])
    def reject_selected(self, request, queryset):
        count = 0
        for link in queryset.filter(state__in=review.REJECTABLE):
            line = review.Line(config_id=link.config_id, sku=link.supplier_sku)
            try:
                review.link_reject(line=line, product_id=link.product_id, user=person(request))
            except review.ReviewRefused as refused:
                self.message_user(request, refused.said(), messages.WARNING)
            else:
                count += 1
        self.message_user(
            request,
            ngettext("%(count)d link rejected.", "%(count)d links rejected.", count)
            % {"count": count},
            messages.SUCCESS,
        )

    def get_urls(self):
        return [
            path(
                "review/",
                self.admin_site.admin_view(self.review_view),
                name="products_supplierlink_review",
            ),
            path(
                "review/new/",
                self.admin_site.admin_view(self.new_product_view),
                name="products_supplierlink_review_new",
            ),
            path(
                "review/products/",
                self.admin_site.admin_view(self.products_view),
                name="products_supplierlink_review_products",
            ),
            *super().get_urls(),
        ]

    # -- the review queue ------------------------------------------------------------

    def _context(self, request: HttpRequest, title: str) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.model._meta,
            "review_url": reverse("admin:products_supplierlink_review"),
        }

    def review_view(self, request: HttpRequest) -> HttpResponse:
        """The queue (GET) and a decision on one of its lines or its page (POST)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            return self._decide(request)
        filters = QueueFilterForm(request.GET or None)
        if filters.is_bound and not filters.is_valid():
            raise BadRequest(filters.errors.as_text())  # as the lists answer ?state=bogus
        chosen: dict[str, Any] = filters.cleaned_data if filters.is_bound else {}
        config = chosen.get("config")
        lines = review_queue.queue_lines(
            config_id=config.pk if config else None,
            show=chosen.get("show") or "",
            search=chosen.get("q") or "",
        )
        paginator = Paginator(lines, PAGE_SIZE)
        page = paginator.get_page(request.GET.get("p"))
        queue = review_queue.queue_page(list(page.object_list))
        configs = {
            c.pk: c.name
            for c in PriceListConfig.objects.filter(pk__in={line.item.config_id for line in queue})
        }
        may_decide = self.has_review_permission(request)
        shown = [
            self._shown_line(line, n, configs, request, may_decide) for n, line in enumerate(queue)
        ]
        here = request.get_full_path()
        context = {
            **self._context(request, gettext("Review queue of supplier links")),
            "filters": filters,
            "page": page,
            "paginator": paginator,
            "lines": shown,
            "proposals": [
                (line.link.pk, line.link.product_id)
                for line in queue
                if line.proposed and line.link is not None
            ],
            "may_decide": may_decide,
            "may_create": may_decide and request.user.has_perm(ADD_PRODUCT_PERMISSION),
            "next": here,
            "page_query": _page_query(request),
            "products_url": reverse("admin:products_supplierlink_review_products"),
        }
        return TemplateResponse(request, "products/review/queue.html", context)

    def _shown_line(
        self,
        line: review_queue.QueueLine,
        index: int,
        configs: dict[int, str],
        request: HttpRequest,
        may_decide: bool,
    ) -> dict[str, Any]:
        """What the page shows of a line: the line itself, then each candidate beside it
        (the proposed product first when the candidates lack it)."""
        item = line.item
        rows = []
        link = line.link
        listed = {candidate.product_id for candidate in line.candidates}
        if link is not None and link.state == State.PROPOSED and link.product_id not in listed:
            rows.append(self._candidate_row(item, link.product, None, link, proposed=True))
        for candidate in line.candidates:
            rows.append(
                self._candidate_row(
                    item,
                    candidate.product,
                    candidate,
                    link,
                    proposed=line.proposed
                    and link is not None
                    and link.product_id == candidate.product_id,
                )
            )
        # Keys 1 to 5 choose: the rows one may choose (the proposal is confirmed, with
        # Enter; a retired product is shown, not offered).
        choosable = [row for row in rows if not (row["proposed"] or row["retired"])]
        for key, row in enumerate(choosable[:5], start=1):
            row["key"] = key
        new_url = reverse("admin:products_supplierlink_review_new")
        query = urlencode(
            {"config": item.config_id, "sku": item.sku, "next": f"{request.get_full_path()}"}
        )
        return {
            "index": index,
            "item": item,
            "config_name": configs.get(item.config_id, item.config_id),  # type: ignore[arg-type]
            "link": link,
            "proposed": line.proposed,
            "rejected": link if link is not None and link.state == State.REJECTED else None,
            "unit": getattr(item, "unit", ""),
            "price": amount(item.price, places=2),
            "quantity": amount(item.quantity),
            "rows": rows,
            "new_url": f"{new_url}?{query}",
        }

    def _candidate_row(
        self,
        item: PriceItem,
        product: Product,
        candidate: LinkCandidate | None,
        link: SupplierLink | None,
        *,
        proposed: bool,
    ) -> dict[str, Any]:
        matched = candidate.matched if candidate else []
        differed = candidate.differed if candidate else []
        rejected = (
            link is not None and link.state == State.REJECTED and link.product_id == product.pk
        )
        return {
            "product": product,
            "url": product_url(product.pk),
            "marks": compared(item, product, matched, differed),
            "score": amount(candidate.score, places=2) if candidate else EMPTY,
            "kind": candidate.get_kind_display()
            if candidate
            else link.get_kind_display()
            if link
            else EMPTY,
            "matched": said_entries(matched),
            "differed": said_entries(differed),
            "proposed": proposed,
            "rejected": rejected,
            "retired": not product.active,
            "key": None,
        }

    def _decide(self, request: HttpRequest) -> HttpResponse:
        if not self.has_review_permission(request):
            raise PermissionDenied
        back = _next_url(request)
        if "bulk" in request.POST:
            return self._bulk(request, back)
        form = DecisionForm(request.POST)
        if not form.is_valid():
            self.message_user(request, gettext("The decision was not understood."), messages.ERROR)
            return HttpResponseRedirect(back)
        data = form.cleaned_data
        line = review.Line(config_id=data["config"], sku=data["sku"])
        action = "choose" if data["choose"] else data["action"]
        try:
            if action == "confirm" and data["product"]:
                link = review.link_confirm(
                    line=line, product_id=data["product"], user=person(request)
                )
                said = gettext("Confirmed: %(sku)s is %(product)s.")
            elif action == "reject" and data["product"]:
                link = review.link_reject(
                    line=line, product_id=data["product"], user=person(request)
                )
                said = gettext("Rejected: %(sku)s is not %(product)s; the line stays unlinked.")
            elif action == "choose" and data["choose"]:
                link = review.link_choose(
                    line=line, product_id=data["choose"], user=person(request)
                )
                said = gettext("Linked: %(sku)s is %(product)s.")
            elif action == "code" and data["own_code"]:
                product = Product.objects.active().filter(own_code=data["own_code"].strip()).first()
                if product is None:
                    raise review.ProductUnavailable(product=data["own_code"].strip())
                link = review.link_choose(line=line, product_id=product.pk, user=person(request))
                said = gettext("Linked: %(sku)s is %(product)s.")
            else:
                self.message_user(
                    request, gettext("The decision was not understood."), messages.ERROR
                )
                return HttpResponseRedirect(back)
        except review.ReviewRefused as refused:
            self.message_user(request, refused.said(), messages.WARNING)
            return HttpResponseRedirect(back)
        self.message_user(
            request, said % {"sku": line.sku, "product": link.product}, messages.SUCCESS
        )
        return HttpResponseRedirect(back)

    def _bulk(self, request: HttpRequest, back: str) -> HttpResponse:
        # No more than a page of the queue shows (a crafted form may carry thousands).
        proposals = list(_pairs(request.POST.getlist("proposal")[:BULK_LIMIT]))
        count = review.links_confirm(proposals=proposals, user=person(request))
        self.message_user(request, confirmed_message(count), messages.SUCCESS)
        if skipped := len(proposals) - count:
            self.message_user(
                request,
                ngettext(
                    "%(count)d left as it was: it changed since the page was shown.",
                    "%(count)d left as they were: they changed since the page was shown.",
                    skipped,
                )
                % {"count": skipped},
                messages.WARNING,
            )
        # The confirmed lines left the queue: the same page now shows the next ones.
        return HttpResponseRedirect(back.split("#")[0])

    def new_product_view(self, request: HttpRequest) -> HttpResponse:
        """Our product made from a supplier line (prefilled from it; the own code asked)
        and the line linked to it."""
        if not (
            self.has_review_permission(request) and request.user.has_perm(ADD_PRODUCT_PERMISSION)
        ):
            raise PermissionDenied
        source = request.POST if request.method == "POST" else request.GET
        config_id, sku = source.get("config", ""), source.get("sku", "")
        if not config_id.isdigit() or not sku:
            raise Http404
        item = get_object_or_404(review_queue.current_lines(), config_id=int(config_id), sku=sku)
        back = _next_url(request)
        if request.method == "POST":
            form = ProductFromLineForm(request.POST)
            if form.is_valid():
                line = review.Line(config_id=item.config_id, sku=item.sku)  # type: ignore[arg-type]
                values = {name: form.cleaned_data[name] for name in ProductFromLineForm.Meta.fields}
                try:
                    link = review.product_create_for_line(
                        line=line, values=values, user=person(request)
                    )
                except review.ReviewRefused as refused:
                    self.message_user(request, refused.said(), messages.WARNING)
                    return HttpResponseRedirect(back)
                self.message_user(
                    request,
                    gettext("Added our product %(product)s and linked %(sku)s to it.")
                    % {"product": link.product, "sku": item.sku},
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(back)
        else:
            form = ProductFromLineForm(
                initial={
                    "name": item.name,
                    "brand": item.brand,
                    "article": item.article,
                    "barcodes": " ".join(item.barcodes or ()),
                    "unit": getattr(item, "unit", ""),
                    "category": getattr(item, "category", ""),
                }
            )
        context = {
            **self._context(request, gettext("Add our product from a supplier line")),
            "form": form,
            "item": item,
            "config": PriceListConfig.objects.filter(pk=int(config_id)).first(),
            "next": back,
        }
        return TemplateResponse(request, "products/review/new_product.html", context)

    def products_view(self, request: HttpRequest) -> JsonResponse:
        """Our active products whose code starts with, or whose name holds, ``q``: the
        suggestions of the queue's "any product" field."""
        if not (
            self.has_view_permission(request) and request.user.has_perm("products.view_product")
        ):
            raise PermissionDenied
        q = request.GET.get("q", "").strip()[:100]
        if len(q) < 2:
            return JsonResponse({"results": []})
        found = (
            Product.objects.active()
            .filter(Q(own_code__istartswith=q) | Q(name__icontains=q))
            .order_by("own_code")[:SUGGESTIONS]
        )
        return JsonResponse({"results": [{"own_code": p.own_code, "name": p.name} for p in found]})


def person(request: HttpRequest) -> AbstractBaseUser:
    """Who decides: the admin's pages are for logged-in staff only."""
    user = request.user
    assert isinstance(user, AbstractBaseUser), user
    return user


def product_url(product_id: int) -> str | None:
    """The admin page of our product, or None where the admin shows no products."""
    try:
        return reverse("admin:products_product_change", args=[product_id])
    except NoReverseMatch:
        return None


def confirmed_message(count: int) -> str:
    return ngettext("%(count)d link confirmed.", "%(count)d links confirmed.", count) % {
        "count": count
    }


def _pairs(values: Iterable[str]) -> Iterable[tuple[int, int]]:
    """The bulk form's "<link id>:<product id>" values; what is not one is left out."""
    for value in values:
        link_id, _, product_id = value.partition(":")
        if link_id.isdigit() and product_id.isdigit():
            yield int(link_id), int(product_id)


def _page_query(request: HttpRequest) -> str:
    """The query string of the queue without its page number (for the page links)."""
    params = request.GET.copy()
    params.pop("p", None)
    return params.urlencode()


def _next_url(request: HttpRequest) -> str:
    """Where a decision returns to: the queue's page it was made on (the ``next`` it
    posts), or the queue."""
    queue = reverse("admin:products_supplierlink_review")
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if wanted.startswith(queue) and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return queue


class ProductPageAdmin(ListAdminMixin, admin.ModelAdmin):
    """Our products' list and page, read-only, where no other admin shows them: the
    queue links each product it names to its page. products/admin.py's ProductAdmin,
    registered first (the admin's autodiscovery runs before this app's ready()), takes
    its place."""

    list_display = ["own_code", "short_name", "brand", "article"]
    search_fields = ["=own_code", "name"]
    readonly_fields = ("own_code", "name", "brand", "article", "barcodes", "unit", "category")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=pgettext_lazy("product", "name"), ordering="name")
    def short_name(self, obj: Product) -> str:
        return truncated(obj.name, width="l")


if not admin.site.is_registered(Product):
    admin.site.register(Product, ProductPageAdmin)
