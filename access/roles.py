"""The role groups and the permissions each holds: the one place that says who may do
what in the admin.

Each role holds everything of the one before it:

- **viewer** sees every page of mailboxes, leases, instances, inbound messages (and
  downloads their raw ``.eml``), configs, price types, imports and their items, our
  products (with every supplier's offer) and the supplier links, subscriptions,
  notifications (and their delivery attempts), rates, the bank's rate fetches and
  suppliers' terms, outbox events, webhooks, RabbitMQ targets and deliveries of events
  (never a webhook's secret or a broker's password), and django-q2's task results and
  queue. It changes nothing.
- **operator** also runs every action (test a connection, force a lease's release,
  reprocess or mark failed a message, run failed imports again, approve or reject a
  held import, retry, requeue or give up an outbox event, retry a delivery), adds and changes our
  products, adds, changes and deletes price-list configs, price types and
  subscriptions, enters manual rates and keeps suppliers' terms (and previews files
  against configs: reading an upload costs the server CPU and memory), and makes and
  revokes API tokens of their own.
- **administrator** also adds, changes and deletes mailboxes (their servers and
  passwords; *Disable mailbox* on the lease page is a change of the mailbox) and their
  leases (deleting a mailbox deletes its lease, and the admin asks for that permission
  too; a lease deleted alone is made again, free, and its owner stops listening), and
  webhooks and RabbitMQ targets (their secrets and passwords).

The review queue of supplier links (``products.review``): every role above sees it, our
products, the links with their history and what the matching found (``LINKS_VIEW``);
operators and administrators also decide there (confirm, reject or choose a line's
product, or add a product of ours made from the line: ``REVIEW``).

No role writes the other rows only the machinery owns: checkpoints (deleting one makes
the listener fetch the folder again), heartbeats (``listen_mail`` prunes them; each
process prunes the process heartbeats), price items (they go with their import) and
outbox events (*Mark failed* gives one up and keeps the record). The audit records
(received messages, imports, outbox events, notifications, heartbeats) are deleted by
superusers only, whatever a group holds (``core.adminutils.AuditAdminMixin``).
django-q2's schedules, and whatever runs or re-runs a task, are superusers' alone too
(``access/admin.py``).

Migration ``0001_roles`` makes the groups (``0002_process_heartbeats`` again, with
fleet's model; ``0003_audit_records_kept`` without the delete permissions of the audit
records). A change here reaches existing databases
through a new migration that runs ``roles_apply`` again (``0008_product_links`` for the
review queue's, ``0012_offers_prices`` for offers and prices, ``0013_event_delivery`` for
the delivery app's, ``0014_feeds`` for the feeds app's).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

VIEWER = "viewer"
OPERATOR = "operator"
ADMINISTRATOR = "administrator"

# Permissions as User.has_perm names them: "<app_label>.<codename>".
VIEW = frozenset(
    {
        "mailboxes.view_mailbox",
        "mailboxes.view_mailboxcheckpoint",
        "mailboxes.view_mailboxlease",
        "mailboxes.view_instanceheartbeat",
        "mailboxes.view_inboundmessage",
        "fleet.view_processheartbeat",
        "pricefeed.view_pricelistconfig",
        "pricefeed.view_pricetype",
        "pricefeed.view_priceimport",
        "pricefeed.view_priceitem",
        "pricefeed.view_catalogueentry",
        "outbox.view_outboxevent",
        "notifications.view_subscription",
        "notifications.view_notification",
        "notifications.view_deliveryattempt",
        "pricefeed.view_overduealert",
        # Rates (the bank's and manual), the bank's fetches, suppliers' terms.
        "pricing.view_rate",
        "pricing.view_ratefetch",
        "pricing.view_supplierterms",
        # Offers, the rules that choose the best one and make our price, our prices.
        "pricing.view_offer",
        "pricing.view_offerrule",
        "pricing.view_pricerule",
        "pricing.view_productprice",
        # Event delivery: the webhooks and RabbitMQ targets (never their secrets) and
        # each delivery with its attempts and last error.
        "delivery.view_webhook",
        "delivery.view_amqptarget",
        "delivery.view_delivery",
        # Feeds of our prices (never their tokens: only a hash is kept), customer groups
        # and the mailings of their price lists.
        "feeds.view_feed",
        "feeds.view_customergroup",
        "feeds.view_customermailing",
        # django-q2: successful and failed tasks, and the queue (the ORM broker's).
        "django_q.view_success",
        "django_q.view_failure",
        "django_q.view_ormq",
    }
)
# The admin actions' own permissions (each action's has_<name>_permission).
ACT = frozenset(
    {
        "mailboxes.test_mailbox",
        "mailboxes.release_mailboxlease",
        "mailboxes.reprocess_inboundmessage",
        "mailboxes.fail_inboundmessage",
        "pricefeed.rerun_priceimport",
        "pricefeed.review_priceimport",
        "outbox.retry_outboxevent",
        "outbox.fail_outboxevent",
        "delivery.retry_delivery",
    }
)
# Which supplier mail becomes which import, and who hears of it.
CONFIGURE = frozenset(
    {
        "pricefeed.add_pricelistconfig",
        "pricefeed.change_pricelistconfig",
        "pricefeed.delete_pricelistconfig",
        # Our products by hand (products_load loads the whole catalogue); none is deleted
        # (a load retires it). Adding one is part of REVIEW.
        "products.change_product",
        # The price types configs map their price columns to.
        "pricefeed.add_pricetype",
        "pricefeed.change_pricetype",
        "pricefeed.delete_pricetype",
        # Manual rates (the bank's rows are read-only to all, pricing.admin) and the
        # suppliers' terms (surcharge on the rate, switched on, priority).
        "pricing.add_rate",
        "pricing.change_rate",
        "pricing.delete_rate",
        "pricing.add_supplierterms",
        "pricing.change_supplierterms",
        # The rules of the best offer and of our prices, and a held price's approval.
        "pricing.add_offerrule",
        "pricing.change_offerrule",
        "pricing.delete_offerrule",
        "pricing.add_pricerule",
        "pricing.change_pricerule",
        "pricing.delete_pricerule",
        "pricing.approve_productprice",
        # Feeds (a new one's URL is shown once; a new token by its own permission) and the
        # customer groups who get our price lists by mail.
        "feeds.add_feed",
        "feeds.change_feed",
        "feeds.delete_feed",
        "feeds.renew_token_feed",
        "feeds.add_customergroup",
        "feeds.change_customergroup",
        "feeds.delete_customergroup",
        "notifications.add_subscription",
        "notifications.change_subscription",
        "notifications.delete_subscription",
        # Their own API tokens (api.admin shows a user no one else's): a program reading
        # the API acts as the person who made its token, with their permissions.
        "api.view_apitoken",
        "api.add_apitoken",
        "api.change_apitoken",
        "api.delete_apitoken",
    }
)
# Where mail is read from (host, account, password).
MANAGE = frozenset(
    {
        "mailboxes.add_mailbox",
        "mailboxes.change_mailbox",
        "mailboxes.delete_mailbox",
        "mailboxes.delete_mailboxlease",
        # Where events go, with the secret that signs them or the broker's password.
        "delivery.add_webhook",
        "delivery.change_webhook",
        "delivery.delete_webhook",
        "delivery.add_amqptarget",
        "delivery.change_amqptarget",
        "delivery.delete_amqptarget",
    }
)

# Our catalogue (a product's page shows every supplier's offer; the API reads it too)
# and the review queue (products.review): the supplier links, each link's history and
# the candidates the matching found for a line.
LINKS_VIEW = frozenset(
    {
        "products.view_product",
        "products.view_supplierlink",
        "products.view_linkevent",
        "products.view_linkcandidate",
    }
)
# Its decisions, and a product of ours made from a supplier line there.
REVIEW = frozenset({"products.review_supplierlink", "products.add_product"})

ROLES: dict[str, frozenset[str]] = {
    VIEWER: VIEW | LINKS_VIEW,
    OPERATOR: VIEW | LINKS_VIEW | ACT | CONFIGURE | REVIEW,
    ADMINISTRATOR: VIEW | LINKS_VIEW | ACT | CONFIGURE | REVIEW | MANAGE,
}


def roles_apply(*, apps: Any, using: str) -> None:
    """Makes a group of each role (or takes the one of that name) and gives it exactly
    the role's permissions, with the models of ``apps`` (a migration's).

    A permission whose model a later migration creates does not exist yet: it is left
    out here and given by the migration that runs this again after that one.
    """
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    for name, permissions in ROLES.items():
        wanted = Q()
        for permission in permissions:
            app_label, codename = permission.split(".")
            wanted |= Q(content_type__app_label=app_label, codename=codename)
        group, _ = group_model.objects.using(using).get_or_create(name=name)
        group.permissions.set(permission_model.objects.using(using).filter(wanted))


def roles_remove(*, apps: Any, using: str) -> None:
    """Deletes the roles' groups (their members lose what the groups gave them)."""
    apps.get_model("auth", "Group").objects.using(using).filter(name__in=ROLES).delete()
