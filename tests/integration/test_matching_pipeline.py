"""Issue 31's acceptance path through real components: our catalogue loaded by
``manage.py products_load`` (a process of its own), six supplier lists e-mailed into
Dovecot, ``listen_mail`` and ``qcluster`` importing them, ``dispatch_outbox`` running the
matching of each accepted import (the outbox event ``import.accepted``), and
``manage.py links_export``'s file read back against the truth.

The data set is devkit.catalogue_set's, on a seed of its own (the unit test of the
cascade uses another): 5,000 products of ours and six lists written the ways suppliers
write, with decoys that differ in one decisive attribute, barcode conflicts and products
we do not carry. The figures are printed."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from devkit import catalogue_set
from outbox.models import OutboxEvent
from pricefeed.catalogue import ACCEPTED_EVENT
from pricefeed.models import PriceImport
from products.models import Product

from .support import ROOT, database_url, price_email, wait_until

SEED = 47
LISTS = [f"supplier{n}" for n in range(1, 7)]


def manage_once(*args: str) -> subprocess.CompletedProcess:
    """A one-shot manage.py command against the test database."""
    env = {**os.environ, "DATABASE_URL": database_url()}
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # a liveness bound, not a measurement
    )
    assert done.returncode == 0, done.stderr
    return done


def read_truth(path: Path) -> dict[tuple[str, str], tuple[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return {
            (row["list"], row["sku"]): (row["own_code"], row["kind"])
            for row in csv.DictReader(f, delimiter=";")
        }


def test_six_lists_mailed_in_are_linked_to_our_catalogue(
    dovecot, make_mailbox, make_config, manage, tmp_path, capsys
):
    data = tmp_path / "set"
    catalogue_set.write_set(data, 5000, seed=SEED)
    loaded = manage_once("products_load", str(data / "catalogue.csv"))
    assert Product.objects.count() == 5000, loaded.stdout
    mailbox = make_mailbox(dovecot)
    configs = {
        name: make_config(
            mailbox,
            name=name,
            sender_pattern=f"*@{name}.test",
            filename_pattern=f"{name}.xlsx",
        )
        for name in LISTS
    }
    by_id = {str(config.pk): name for name, config in configs.items()}
    manage("listen_mail")
    manage("qcluster")
    manage("dispatch_outbox")

    for name in LISTS:
        dovecot.append(
            price_email(
                sender=f"Отдел продаж <sales@{name}.test>",
                subject=f"Прайс-лист {name}",
                attachments=[(f"{name}.xlsx", (data / f"{name}.xlsx").read_bytes())],
            )
        )

    def matched() -> bool:
        accepted = PriceImport.objects.filter(accepted_at__isnull=False).count()
        events = OutboxEvent.objects.filter(kind=ACCEPTED_EVENT)
        return accepted == len(LISTS) and events.filter(
            status=OutboxEvent.Status.SENT
        ).count() == len(LISTS)

    wait_until(matched, 300, "six lists imported, accepted and matched")
    assert set(PriceImport.objects.values_list("status", flat=True)) <= {
        PriceImport.Status.SUCCEEDED,
        PriceImport.Status.PARTIAL,
    }
    exported = tmp_path / "links.csv"
    manage_once("links_export", str(exported))

    truth = read_truth(data / "truth.csv")
    auto = auto_right = decoys_auto = found = 0
    with exported.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f, delimiter=";"))
    seen = set()
    for row in rows:
        key = (by_id[row["config"]], row["supplier_sku"])
        own_code, kind = truth[key]
        seen.add(key)
        if row["state"] == "auto":
            auto += 1
            auto_right += row["own_code"] == own_code
            decoys_auto += kind == catalogue_set.DECOY
        if own_code and row["state"] in ("auto", "proposed") and row["own_code"] == own_code:
            found += 1
    true_matches = sum(1 for own_code, _kind in truth.values() if own_code)
    precision = auto_right / auto
    recall = found / true_matches
    with capsys.disabled():
        print(
            f"\nmatching through the mail: {len(truth)} lines, {auto} automatic links, "
            f"precision {precision:.2%}; {found} of {true_matches} true matches linked or "
            f"proposed ({recall:.2%}); decoys linked automatically: {decoys_auto}"
        )
    # Every line of every list is in the file: linked, proposed, or with an empty code.
    assert seen == set(truth)
    assert precision >= 0.995
    assert decoys_auto == 0
    assert recall >= 0.90
