"""How the admin says our models' names inside its sentences, in every language.

Django builds its sentences from one form of a name, ``verbose_name`` (nominative) or
``verbose_name_plural``: "Добавить %s", "Выберите %s для изменения", "Удалить выбранные
%(verbose_name_plural)s", "N <plural>". Russian needs the accusative after a verb
("Добавить подписку", "Выберите пользователя") and three plural forms after a number
("1 входящее сообщение", "2 входящих сообщения", "27 входящих сообщений"). So each model
the admin shows declares its forms here, in one table, as translatable strings: the
English catalogue needs none of them (the msgid is the English form), the Russian one
says each form once.

Where Django's sentence agrees in gender with the name ("{name} «{obj}» был успешно
добавлен" for a feminine "подписка"), the catalogue words the sentence so that one form
is right for every name ("Добавлено: подписка «…»"): ``REWORDED`` lists those msgids of
Django's, so that makemessages keeps them in the project's catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models.options import Options
from django.utils.functional import Promise
from django.utils.translation import gettext_noop, ngettext_lazy, pgettext_lazy


@dataclass(frozen=True)
class Noun:
    """A model's name in the forms the admin's sentences need."""

    # "%(count)s inbound message(s)": ngettext_lazy with "count" as its number.
    counted: Promise
    # The object of a verb: "Добавить подписку", "Выберите пользователя".
    accusative: Promise
    # The same in the plural: "Удалить выбранные подписки / пользователей".
    accusative_plural: Promise

    def count(self, number: int) -> str:
        """``number`` of these, the name in the form the number asks for."""
        return str(self.counted % {"count": number})


def _noun(counted: Promise, accusative: Promise, accusative_plural: Promise) -> Noun:
    return Noun(counted=counted, accusative=accusative, accusative_plural=accusative_plural)


# Every model the admin shows (its lists, change pages and inlines), by its label. The
# English msgids are the models' English verbose names; tests/core/test_grammar.py checks
# that the table covers every registered model and agrees with them.
NOUNS: dict[str, Noun] = {
    "mailboxes.mailbox": _noun(
        ngettext_lazy("%(count)s mailbox", "%(count)s mailboxes", "count"),
        pgettext_lazy("accusative", "mailbox"),
        pgettext_lazy("accusative plural", "mailboxes"),
    ),
    "mailboxes.mailboxlease": _noun(
        ngettext_lazy("%(count)s mailbox lease", "%(count)s mailbox leases", "count"),
        pgettext_lazy("accusative", "mailbox lease"),
        pgettext_lazy("accusative plural", "mailbox leases"),
    ),
    "mailboxes.mailboxcheckpoint": _noun(
        ngettext_lazy("%(count)s checkpoint", "%(count)s checkpoints", "count"),
        pgettext_lazy("accusative", "checkpoint"),
        pgettext_lazy("accusative plural", "checkpoints"),
    ),
    "mailboxes.instanceheartbeat": _noun(
        ngettext_lazy("%(count)s listener instance", "%(count)s listener instances", "count"),
        pgettext_lazy("accusative", "listener instance"),
        pgettext_lazy("accusative plural", "listener instances"),
    ),
    "mailboxes.inboundmessage": _noun(
        ngettext_lazy("%(count)s inbound message", "%(count)s inbound messages", "count"),
        pgettext_lazy("accusative", "inbound message"),
        pgettext_lazy("accusative plural", "inbound messages"),
    ),
    "fleet.processheartbeat": _noun(
        ngettext_lazy("%(count)s process heartbeat", "%(count)s process heartbeats", "count"),
        pgettext_lazy("accusative", "process heartbeat"),
        pgettext_lazy("accusative plural", "process heartbeats"),
    ),
    "outbox.outboxevent": _noun(
        ngettext_lazy("%(count)s outbox event", "%(count)s outbox events", "count"),
        pgettext_lazy("accusative", "outbox event"),
        pgettext_lazy("accusative plural", "outbox events"),
    ),
    "pricefeed.pricelistconfig": _noun(
        ngettext_lazy("%(count)s price-list config", "%(count)s price-list configs", "count"),
        pgettext_lazy("accusative", "price-list config"),
        pgettext_lazy("accusative plural", "price-list configs"),
    ),
    "pricefeed.priceimport": _noun(
        ngettext_lazy("%(count)s price import", "%(count)s price imports", "count"),
        pgettext_lazy("accusative", "price import"),
        pgettext_lazy("accusative plural", "price imports"),
    ),
    "pricefeed.priceitem": _noun(
        ngettext_lazy("%(count)s price item", "%(count)s price items", "count"),
        pgettext_lazy("accusative", "price item"),
        pgettext_lazy("accusative plural", "price items"),
    ),
    "pricefeed.catalogueentry": _noun(
        ngettext_lazy("%(count)s catalogue entry", "%(count)s catalogue entries", "count"),
        pgettext_lazy("accusative", "catalogue entry"),
        pgettext_lazy("accusative plural", "catalogue entries"),
    ),
    "pricefeed.pricetype": _noun(
        ngettext_lazy("%(count)s price type", "%(count)s price types", "count"),
        pgettext_lazy("accusative", "price type"),
        pgettext_lazy("accusative plural", "price types"),
    ),
    "products.product": _noun(
        ngettext_lazy("%(count)s product", "%(count)s products", "count"),
        pgettext_lazy("accusative", "product"),
        pgettext_lazy("accusative plural", "products"),
    ),
    "pricing.rate": _noun(
        ngettext_lazy("%(count)s rate", "%(count)s rates", "count"),
        pgettext_lazy("accusative", "rate"),
        pgettext_lazy("accusative plural", "rates"),
    ),
    "pricing.ratefetch": _noun(
        ngettext_lazy("%(count)s rate fetch", "%(count)s rate fetches", "count"),
        pgettext_lazy("accusative", "rate fetch"),
        pgettext_lazy("accusative plural", "rate fetches"),
    ),
    "pricing.supplierterms": _noun(
        ngettext_lazy("%(count)s supplier's terms", "%(count)s suppliers' terms", "count"),
        pgettext_lazy("accusative", "supplier's terms"),
        pgettext_lazy("accusative plural", "suppliers' terms"),
    ),
    "pricing.offerrule": _noun(
        ngettext_lazy("%(count)s offer rule", "%(count)s offer rules", "count"),
        pgettext_lazy("accusative", "offer rule"),
        pgettext_lazy("accusative plural", "offer rules"),
    ),
    "pricing.pricerule": _noun(
        ngettext_lazy("%(count)s price rule", "%(count)s price rules", "count"),
        pgettext_lazy("accusative", "price rule"),
        pgettext_lazy("accusative plural", "price rules"),
    ),
    "pricing.offer": _noun(
        ngettext_lazy("%(count)s offer", "%(count)s offers", "count"),
        pgettext_lazy("accusative", "offer"),
        pgettext_lazy("accusative plural", "offers"),
    ),
    "pricing.productprice": _noun(
        ngettext_lazy("%(count)s selling price", "%(count)s selling prices", "count"),
        pgettext_lazy("accusative", "selling price"),
        pgettext_lazy("accusative plural", "selling prices"),
    ),
    "notifications.subscription": _noun(
        ngettext_lazy("%(count)s subscription", "%(count)s subscriptions", "count"),
        pgettext_lazy("accusative", "subscription"),
        pgettext_lazy("accusative plural", "subscriptions"),
    ),
    "notifications.notification": _noun(
        ngettext_lazy("%(count)s notification", "%(count)s notifications", "count"),
        pgettext_lazy("accusative", "notification"),
        pgettext_lazy("accusative plural", "notifications"),
    ),
    "delivery.webhook": _noun(
        ngettext_lazy("%(count)s webhook", "%(count)s webhooks", "count"),
        pgettext_lazy("accusative", "webhook"),
        pgettext_lazy("accusative plural", "webhooks"),
    ),
    "delivery.amqptarget": _noun(
        ngettext_lazy("%(count)s RabbitMQ target", "%(count)s RabbitMQ targets", "count"),
        pgettext_lazy("accusative", "RabbitMQ target"),
        pgettext_lazy("accusative plural", "RabbitMQ targets"),
    ),
    "delivery.delivery": _noun(
        ngettext_lazy("%(count)s delivery", "%(count)s deliveries", "count"),
        pgettext_lazy("accusative", "delivery"),
        pgettext_lazy("accusative plural", "deliveries"),
    ),
    "api.apitoken": _noun(
        ngettext_lazy("%(count)s API token", "%(count)s API tokens", "count"),
        pgettext_lazy("accusative", "API token"),
        pgettext_lazy("accusative plural", "API tokens"),
    ),
    "products.supplierlink": _noun(
        ngettext_lazy("%(count)s supplier link", "%(count)s supplier links", "count"),
        pgettext_lazy("accusative", "supplier link"),
        pgettext_lazy("accusative plural", "supplier links"),
    ),
    "auth.user": _noun(
        ngettext_lazy("%(count)s user", "%(count)s users", "count"),
        pgettext_lazy("accusative", "user"),
        pgettext_lazy("accusative plural", "users"),
    ),
    "auth.group": _noun(
        ngettext_lazy("%(count)s group", "%(count)s groups", "count"),
        pgettext_lazy("accusative", "group"),
        pgettext_lazy("accusative plural", "groups"),
    ),
    "feeds.feed": _noun(
        ngettext_lazy("%(count)s feed", "%(count)s feeds", "count"),
        pgettext_lazy("accusative", "feed"),
        pgettext_lazy("accusative plural", "feeds"),
    ),
    "feeds.customergroup": _noun(
        ngettext_lazy("%(count)s customer group", "%(count)s customer groups", "count"),
        pgettext_lazy("accusative", "customer group"),
        pgettext_lazy("accusative plural", "customer groups"),
    ),
    "feeds.customermailing": _noun(
        ngettext_lazy(
            "%(count)s customer list mailing", "%(count)s customer list mailings", "count"
        ),
        pgettext_lazy("accusative", "customer list mailing"),
        pgettext_lazy("accusative plural", "customer list mailings"),
    ),
    "django_q.schedule": _noun(
        ngettext_lazy("%(count)s scheduled task", "%(count)s scheduled tasks", "count"),
        pgettext_lazy("accusative", "Scheduled task"),
        pgettext_lazy("accusative plural", "Scheduled tasks"),
    ),
    "django_q.success": _noun(
        ngettext_lazy("%(count)s successful task", "%(count)s successful tasks", "count"),
        pgettext_lazy("accusative", "Successful task"),
        pgettext_lazy("accusative plural", "Successful tasks"),
    ),
    "django_q.failure": _noun(
        ngettext_lazy("%(count)s failed task", "%(count)s failed tasks", "count"),
        pgettext_lazy("accusative", "Failed task"),
        pgettext_lazy("accusative plural", "Failed tasks"),
    ),
    "django_q.ormq": _noun(
        ngettext_lazy("%(count)s queued task", "%(count)s queued tasks", "count"),
        pgettext_lazy("accusative", "Queued task"),
        pgettext_lazy("accusative plural", "Queued tasks"),
    ),
}

# Django's sentences that agree in gender with a name, worded in the project's catalogue
# so that they are right for every name (see the module's docstring).
REWORDED = (
    gettext_noop("The {name} “{obj}” was added successfully."),
    gettext_noop("The {name} “{obj}” was added successfully. You may add another {name} below."),
    gettext_noop("The {name} “{obj}” was changed successfully."),
    gettext_noop("The {name} “{obj}” was changed successfully. You may edit it again below."),
    gettext_noop("The {name} “{obj}” was changed successfully. You may add another {name} below."),
    gettext_noop("The %(name)s “%(obj)s” was deleted successfully."),
    gettext_noop("%(name)s with ID “%(key)s” doesn’t exist. Perhaps it was deleted?"),
    gettext_noop("Added {name} “{object}”."),
    gettext_noop("Changed {fields} for {name} “{object}”."),
    gettext_noop("Deleted {name} “{object}”."),
    # The delete pages: "Удаление %(object_name)s" wants the genitive; the catalogue says
    # "Удалить …", with the accusative GrammarAdminMixin gives them.
    gettext_noop(
        "Deleting the %(object_name)s '%(escaped_object)s' would result in deleting related "
        "objects, but your account doesn't have permission to delete the following types "
        "of objects:"
    ),
    gettext_noop(
        "Deleting the %(object_name)s '%(escaped_object)s' would require deleting the "
        "following protected related objects:"
    ),
    gettext_noop(
        "Deleting the selected %(objects_name)s would result in deleting related objects, "
        "but your account doesn't have permission to delete the following types of objects:"
    ),
    gettext_noop(
        "Deleting the selected %(objects_name)s would require deleting the following "
        "protected related objects:"
    ),
)


def noun(opts: Options) -> Noun | None:
    """The declared forms of the model ``opts`` describes, or None when it has none."""
    return NOUNS.get(opts.label_lower)


def counted(number: int, opts: Options) -> str:
    """``number`` of the model's objects: "27 входящих сообщений" (Django's "27
    входящие сообщения" for a model without declared forms)."""
    forms = noun(opts)
    if forms is not None:
        return forms.count(number)
    name = opts.verbose_name if number == 1 else opts.verbose_name_plural
    return f"{number} {name}"


def accusative(opts: Options) -> str:
    """The model's name as the object of a verb: "подписку"."""
    forms = noun(opts)
    return str(forms.accusative if forms is not None else opts.verbose_name)


def accusative_plural(opts: Options) -> str:
    """The model's plural name as the object of a verb: "пользователей"."""
    forms = noun(opts)
    return str(forms.accusative_plural if forms is not None else opts.verbose_name_plural)
