from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.crypto import secrets_reencrypt


class Command(BaseCommand):
    help = (
        "Re-encrypts the stored secrets (mailbox passwords) under the current key, the "
        "first of PRICEFEED_ENCRYPTION_KEYS, so that a key rotated out can be dropped. "
        "Fails, naming the rows, when a secret no configured key can decrypt is left."
    )

    def handle(self, *args, **options):
        result = secrets_reencrypt()
        for name, count in result.reencrypted.items():
            self.stdout.write(
                f"{name}: {count} re-encrypted, {result.current[name]} already current"
            )
        if result.unreadable:
            problems = "; ".join(
                f"{name} pk={', '.join(map(str, pks))}" for name, pks in result.unreadable.items()
            )
            raise CommandError(
                f"no configured key decrypts {problems}: keep the old key until these "
                "are re-entered (or restore the key that encrypted them)"
            )
