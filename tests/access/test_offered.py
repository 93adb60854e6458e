"""What each role sees in every changelist of the apps, and which actions it is offered
there (delete_selected included: it asks for the delete permission)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from access.roles import ADMINISTRATOR, OPERATOR, VIEWER

from .support import logged_in, offered

pytestmark = pytest.mark.django_db

DELETE = "delete_selected"
# changelist: {role: the actions it offers}; a viewer is offered none anywhere.
OFFERED: dict[str, dict[str, set[str]]] = {
    "mailboxes_mailbox": {
        OPERATOR: {"test_connection"},
        ADMINISTRATOR: {"test_connection", DELETE},
    },
    # Audit records: deleted by superusers only (core.adminutils.AuditAdminMixin).
    "mailboxes_inboundmessage": {
        OPERATOR: {"reprocess", "mark_failed"},
        ADMINISTRATOR: {"reprocess", "mark_failed"},
    },
    "mailboxes_mailboxlease": {
        OPERATOR: {"force_release"},
        ADMINISTRATOR: {"force_release", "disable_mailbox", DELETE},
    },
    "mailboxes_instanceheartbeat": {OPERATOR: set(), ADMINISTRATOR: set()},
    "fleet_processheartbeat": {OPERATOR: set(), ADMINISTRATOR: set()},
    "pricefeed_pricelistconfig": {OPERATOR: {DELETE}, ADMINISTRATOR: {DELETE}},
    "pricefeed_priceimport": {
        OPERATOR: {"rerun_failed", "approve_held", "reject_held"},
        ADMINISTRATOR: {"rerun_failed", "approve_held", "reject_held"},
    },
    "pricefeed_priceitem": {OPERATOR: set(), ADMINISTRATOR: set()},
    "outbox_outboxevent": {
        OPERATOR: {"retry_now", "requeue", "mark_failed"},
        ADMINISTRATOR: {"retry_now", "requeue", "mark_failed"},
    },
    "notifications_subscription": {OPERATOR: {DELETE}, ADMINISTRATOR: {DELETE}},
    # Links: decided in the review queue or by these actions; deleted by superusers only.
    "products_supplierlink": {
        OPERATOR: {"confirm_selected", "reject_selected"},
        ADMINISTRATOR: {"confirm_selected", "reject_selected"},
    },
    "notifications_notification": {
        OPERATOR: {"retry_now", "requeue", "give_up"},
        ADMINISTRATOR: {"retry_now", "requeue", "give_up"},
    },
}


@pytest.mark.parametrize("changelist", OFFERED)
@pytest.mark.parametrize("role", [VIEWER, OPERATOR, ADMINISTRATOR])
def test_each_role_sees_every_changelist_and_is_offered_its_actions(client, role, changelist):
    client = logged_in(client, role)
    url = reverse(f"admin:{changelist}_changelist")

    assert client.get(url).status_code == 200
    assert offered(client, url) == OFFERED[changelist].get(role, set())


@pytest.mark.parametrize("changelist", OFFERED)
def test_staff_in_no_group_sees_no_changelist(client, changelist):
    client = logged_in(client, None)

    assert client.get(reverse(f"admin:{changelist}_changelist")).status_code == 403
