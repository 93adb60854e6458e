"""manage.py api_token <username> [--name ...] [--expires-days N]: makes an API token and
prints its key, once (for scripts; people use the admin)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from api.tokens import token_create


class Command(BaseCommand):
    help = "Makes an API token for a user and prints its key (shown only this once)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for.")
        parser.add_argument(
            "--expires-days", type=int, default=None, help="Expires after this many days."
        )

    def handle(self, *args, username: str, name: str, expires_days: int | None, **options):
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"no user {username!r}") from None
        if not user.is_active:
            raise CommandError(f"user {username!r} is inactive")
        if expires_days is not None and expires_days < 1:
            raise CommandError("--expires-days must be 1 or more")
        expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
        _, key = token_create(
            user=user,
            name=name or f"manage.py api_token {timezone.now():%Y-%m-%d}",
            expires_at=expires_at,
        )
        self.stdout.write(key)
