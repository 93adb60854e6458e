"""``manage.py offers_refresh [--config ID | --product OWN_CODE ...]``: computes offers
and our prices now (every product by default), announcing what changed as the workers
do, and prints what it did."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from pricing import offers
from products.models import Product


class Command(BaseCommand):
    help = "Computes offers, the best offer and our price now (every product by default)."

    def add_arguments(self, parser) -> None:
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--config", type=int, help="the products one config offers")
        scope.add_argument(
            "--product", action="append", metavar="OWN_CODE", help="one of our products"
        )

    def handle(self, *args, config: int | None, product: list[str] | None, **options) -> None:
        if config is not None:
            done = offers.config_offers_refresh(config)
        elif product:
            found = dict(Product.objects.filter(own_code__in=product).values_list("own_code", "pk"))
            unknown = sorted(set(product) - set(found))
            if unknown:
                raise CommandError(f"no product with the own code {', '.join(unknown)}")
            done = offers.offers_refresh(found.values())
        else:
            done = offers.all_offers_refresh()
        self.stdout.write(
            f"{done.products} products, {done.offers} offers made; best offer changed for "
            f"{done.best_changed}, published price for {done.published_changed}; "
            f"{done.held} held for approval"
        )
