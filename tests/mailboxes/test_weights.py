"""mailboxes.weights: what a mailbox weighs for lease balancing, in SQL."""

from __future__ import annotations

import pytest

from mailboxes import leases, weights
from mailboxes.models import Mailbox, MailboxLease
from tests.factories import create_config, create_mailbox

pytestmark = pytest.mark.django_db


def weighed(*mailboxes: Mailbox) -> dict[str, int]:
    names = [m.name for m in mailboxes]
    return dict(
        Mailbox.objects.filter(name__in=names)
        .annotate(w=weights.weight_expression())
        .values_list("name", "w")
    )


def test_a_mailbox_weighs_its_enabled_configs_as_pricefeed_registered():
    busy = create_mailbox(name="busy")
    for n in range(3):
        create_config(busy, name=f"c{n}")
    create_config(busy, name="off", enabled=False)
    idle = create_mailbox(name="idle")

    assert weighed(busy, idle) == {"busy": 3, "idle": 0}


def test_an_explicit_weight_wins_over_the_configs():
    heavy = create_mailbox(name="heavy", weight=7)
    create_config(heavy, name="c")
    zero = create_mailbox(name="zero", weight=0)
    create_config(zero, name="c")

    assert weighed(heavy, zero) == {"heavy": 7, "zero": 0}


def test_the_weight_is_reached_through_a_relation_too():
    mailbox = create_mailbox(name="m")
    create_config(mailbox, name="c1")
    create_config(mailbox, name="c2")
    leases.lease_acquire(mailbox_id=mailbox.pk, owner="a", ttl=30)

    lease = MailboxLease.objects.annotate(w=weights.weight_expression("mailbox")).get()

    assert lease.w == 2


def test_with_no_default_registered_a_mailbox_weighs_one_unless_it_has_a_weight(monkeypatch):
    monkeypatch.setattr(weights, "_default", None)
    plain = create_mailbox(name="plain")
    create_config(plain, name="c1")
    create_config(plain, name="c2")
    heavy = create_mailbox(name="heavy", weight=5)

    assert weighed(plain, heavy) == {"plain": 1, "heavy": 5}


def test_a_mailbox_is_listened_to_once_it_has_an_enabled_config():
    early = create_mailbox(name="early")
    create_config(early, name="off", enabled=False)
    ready = create_mailbox(name="ready")
    create_config(ready)
    create_config(create_mailbox(name="disabled", enabled=False))

    def to_listen() -> set[str]:
        rows = Mailbox.objects.filter(weights.listened_to())
        return set(rows.values_list("name", flat=True))

    assert to_listen() == {"ready"}
    assert set(leases.snapshot(me="i:1", live_within=10).weights) == {ready.pk}
    create_config(early, name="on")
    assert to_listen() == {"ready", "early"}
