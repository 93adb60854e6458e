"""``manage.py catalogue_set DIR [--products N] [--seed S]``: writes a matching data set
(devkit.catalogue_set): our catalogue as our CSV template, six supplier lists as xlsx and
the ground truth, for trying the matching by hand (products_load, then mail the lists)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from devkit.catalogue_set import write_set


class Command(BaseCommand):
    help = "Writes our catalogue, six supplier lists and their truth into DIR."

    def add_arguments(self, parser) -> None:
        parser.add_argument("directory", type=Path)
        parser.add_argument("--products", type=int, default=5000)
        parser.add_argument("--seed", type=int, default=31)

    def handle(self, *args, directory: Path, products: int, seed: int, **options) -> None:
        write_set(directory, products, seed=seed)
        self.stdout.write(f"catalogue.csv, supplier1..6.xlsx and truth.csv written to {directory}")
