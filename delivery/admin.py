from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import OuterRef, Subquery
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.adminutils import (
    EMPTY,
    AuditAdminMixin,
    ListAdminMixin,
    RetriedFilter,
    SinceFilter,
    annotated,
    due,
    truncated,
    when,
)
from core.texts import shown
from outbox.models import OutboxEvent

from . import selectors, services
from .forms import AmqpTargetForm, WebhookForm
from .kinds import EventKind
from .models import AmqpTarget, Delivery, Webhook


def _kinds_shown(kinds: list[str]) -> str:
    labels = dict(EventKind.choices)
    return ", ".join(str(labels.get(kind, kind)) for kind in kinds) or EMPTY


@admin.register(Webhook)
class WebhookAdmin(ListAdminMixin, admin.ModelAdmin):
    form = WebhookForm
    list_display = ["name", "short_url", "kinds_shown", "enabled"]
    list_filter = ["enabled"]
    search_fields = ["name", "url"]

    @admin.display(description=_("URL"), ordering="url")
    def short_url(self, obj: Webhook) -> str:
        return truncated(obj.url, width="m")

    @admin.display(description=_("events"))
    def kinds_shown(self, obj: Webhook) -> str:
        return _kinds_shown(obj.kinds)

    def get_fields(self, request, obj=None):
        fields = list(super().get_fields(request, obj))
        if obj is not None and not self.has_change_permission(request, obj):
            # A view-only page shows stored values: never the secret.
            fields.remove("secret")
        return fields


@admin.register(AmqpTarget)
class AmqpTargetAdmin(ListAdminMixin, admin.ModelAdmin):
    form = AmqpTargetForm
    list_display = ["name", "url", "exchange", "routing_key_shown", "kinds_shown", "enabled"]
    list_filter = ["enabled"]
    search_fields = ["name", "url", "exchange"]

    @admin.display(description=_("routing key"), ordering="routing_key")
    def routing_key_shown(self, obj: AmqpTarget) -> str:
        return obj.routing_key or gettext("the event's kind")

    @admin.display(description=_("events"))
    def kinds_shown(self, obj: AmqpTarget) -> str:
        return _kinds_shown(obj.kinds)

    def get_fields(self, request, obj=None):
        fields = list(super().get_fields(request, obj))
        if obj is not None and not self.has_change_permission(request, obj):
            fields.remove("password")
        return fields


class FailingFilter(admin.SimpleListFilter):
    """The deliveries the front page counts as failing: given up, or waiting for another
    try after a failed one (delivery.selectors.failing_count)."""

    title = _("failing")
    parameter_name = "failing"

    def lookups(self, request, model_admin):
        return [("1", _("failed or being retried"))]

    def queryset(self, request, queryset):
        if self.value() == "1":
            return queryset.filter(selectors.FAILING)
        return queryset


class ChannelFilter(admin.SimpleListFilter):
    title = _("channel")
    parameter_name = "channel"

    def lookups(self, request, model_admin):
        return [("webhook", _("webhook")), ("amqp", _("RabbitMQ"))]

    def queryset(self, request, queryset):
        if self.value() == "webhook":
            return queryset.filter(webhook__isnull=False)
        if self.value() == "amqp":
            return queryset.filter(amqp_target__isnull=False)
        return queryset


@admin.register(Delivery)
class DeliveryAdmin(AuditAdminMixin, admin.ModelAdmin):
    list_display = [
        "created",
        "event_kind",
        "endpoint_shown",
        "status",
        "attempts",
        "next_attempt",
        "short_error",
        "sent",
    ]
    list_filter = [
        "status",
        "event_kind",
        FailingFilter,
        ChannelFilter,
        RetriedFilter,
        SinceFilter.on("created_at"),
        "webhook",
        "amqp_target",
    ]
    search_fields = ["=event_id", "webhook__name", "amqp_target__name"]
    actions = ["retry_now"]
    FIELDS = (
        "event_id",
        "event_kind",
        "endpoint_shown",
        "status",
        "attempts",
        "next_attempt",
        "error_text",
        "created_at",
        "sent_at",
        "send_event_link",
    )
    fields = readonly_fields = FIELDS

    def get_queryset(self, request):
        # The send event's status and next attempt, in the same query (by primary key).
        event = OutboxEvent.objects.filter(pk=OuterRef("send_event"))
        return (
            super()
            .get_queryset(request)
            .select_related("webhook", "amqp_target")
            .annotate(
                send_status=Subquery(event.values("status")[:1]),
                send_next_attempt_at=Subquery(event.values("next_attempt_at")[:1]),
            )
        )

    def has_change_permission(self, request, obj=None):
        return False

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("delivery.retry_delivery")

    @admin.display(description=pgettext_lazy("delivery", "created at"), ordering="created_at")
    def created(self, obj: Delivery) -> str:
        return when(obj.created_at)

    @admin.display(description=pgettext_lazy("delivery", "sent at"), ordering="sent_at")
    def sent(self, obj: Delivery) -> str:
        return when(obj.sent_at) if obj.sent_at else EMPTY

    @admin.display(description=_("endpoint"))
    def endpoint_shown(self, obj: Delivery) -> str:
        if obj.webhook_id:
            url = reverse("admin:delivery_webhook_change", args=[obj.webhook_id])
            kind = gettext("webhook")
        else:
            url = reverse("admin:delivery_amqptarget_change", args=[obj.amqp_target_id])
            kind = gettext("RabbitMQ")
        return format_html('<a href="{}">{}</a> ({})', url, str(obj.endpoint), kind)

    @admin.display(description=_("next attempt"))
    def next_attempt(self, obj: Delivery) -> str:
        if obj.status != Delivery.Status.PENDING:
            return EMPTY
        status = annotated(obj, "send_status")
        if status == OutboxEvent.Status.PROCESSING:
            return gettext("being sent")
        if status == OutboxEvent.Status.NEW:
            return due(annotated(obj, "send_next_attempt_at"))
        return EMPTY

    @admin.display(description=_("last error"))
    def short_error(self, obj: Delivery) -> str:
        return truncated(shown(obj, "last_error"), width="m", error=True) or EMPTY

    @admin.display(description=_("last error"))
    def error_text(self, obj: Delivery) -> str:
        return shown(obj, "last_error") or EMPTY

    @admin.display(description=_("send event"))
    def send_event_link(self, obj: Delivery) -> str:
        if obj.send_event is None:
            return EMPTY
        url = reverse("admin:outbox_outboxevent_change", args=[obj.send_event])
        return format_html('<a href="{}">{}</a>', url, obj.send_event)

    @admin.action(description=_("Retry now"), permissions=["retry"])
    def retry_now(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        moved = services.deliveries_retry_now(delivery_ids=ids)
        self.message_user(
            request,
            ngettext("%(count)d delivery due now.", "%(count)d deliveries due now.", moved)
            % {"count": moved},
            messages.SUCCESS,
        )
        if len(ids) > moved:
            self.message_user(
                request,
                ngettext(
                    "%(count)d skipped: sent, or being sent now.",
                    "%(count)d skipped: sent, or being sent now.",
                    len(ids) - moved,
                )
                % {"count": len(ids) - moved},
                messages.WARNING,
            )
