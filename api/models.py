from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class ApiToken(models.Model):
    """A key a program signs in to the API with, acting as ``user`` (that user's model
    permissions decide what it may read).

    The key itself is never stored: only its SHA-256 (looked up through a unique index)
    and its first characters, which name it in the admin and in logs. It is shown once,
    when it is made (api.tokens.token_create). A revoked or expired token is refused.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        verbose_name=_("user"),
    )
    name = models.CharField(
        pgettext_lazy("api token", "name"),
        max_length=100,
        help_text=_("What the token is for, e.g. the program that uses it."),
    )
    prefix = models.CharField(_("key prefix"), max_length=16, editable=False)
    key_hash = models.CharField(_("key hash"), max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(pgettext_lazy("api token", "created at"), db_default=Now())
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(
        _("expires at"), null=True, blank=True, help_text=_("Empty: the token never expires.")
    )
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    # The key, on the instance that was just given it (api.tokens), never stored.
    key: str | None = None

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def usable(self, now: datetime | None = None) -> bool:
        """Neither revoked nor expired (at ``now``, default the current time)."""
        now = now or timezone.now()
        if self.revoked_at is not None and self.revoked_at <= now:
            return False
        return self.expires_at is None or self.expires_at > now
