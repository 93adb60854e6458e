from __future__ import annotations

import socket

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .addresses import ConnectionPolicy
from .exceptions import AddressNotAllowed, ImapSettingsError, PlainNotAllowed
from .models import Mailbox
from .texts import text_of, translated


class MailboxForm(forms.ModelForm):
    """Password is write-only: left empty on edit, the stored one is kept — unless the
    server changes (host, port, security or username): then it must be entered again,
    for a stored password never goes to another server.

    Where the mailbox points is checked like every connection (``mailboxes.addresses``):
    plain text only with PRICEFEED_IMAP_ALLOW_PLAIN, the host's addresses public or held
    by PRICEFEED_IMAP_ALLOWED_NETWORKS. A host that does not resolve (yet) is accepted:
    a passing DNS failure must not block edits, and each connection checks again.
    """

    password_entered = False  # set by clean(): a password was typed in this save

    password = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        label=_("Password"),
        help_text=_(
            "Stored encrypted. Leave empty to keep the current password, unless host, port, "
            "security or username change: then enter it again."
        ),
    )

    class Meta:
        model = Mailbox
        fields = [
            "name",
            "enabled",
            "host",
            "port",
            "security",
            "username",
            "password",
            "folder",
            "backfill",
            "weight",
        ]

    def clean_host(self) -> str:
        host = self.cleaned_data["host"]
        try:
            host.encode("idna")
        except UnicodeError as exc:
            raise forms.ValidationError(_("Not a valid host name."), code="invalid") from exc
        return host

    def clean(self):
        cleaned = super().clean() or {}
        security, port = cleaned.get("security"), cleaned.get("port")
        if security == Mailbox.Security.SSL and port == 143:
            self.add_error(
                "port", gettext("Port 143 normally speaks STARTTLS or plain, not SSL/TLS.")
            )
        if security in (Mailbox.Security.STARTTLS, Mailbox.Security.PLAIN) and port == 993:
            self.add_error("port", gettext("Port 993 normally speaks implicit SSL/TLS."))
        self._clean_password(cleaned)
        self._check_destination(cleaned)
        return cleaned

    def _server_changes(self, cleaned: dict) -> list[str]:
        if not self.instance.pk:
            return []
        return [
            name
            for name in Mailbox.SERVER_FIELDS
            if name in cleaned and cleaned[name] != getattr(self.instance, name)
        ]

    def _clean_password(self, cleaned: dict) -> None:
        self.password_entered = bool(cleaned.get("password"))
        if self.password_entered:
            return
        if not self.instance.pk:
            self.add_error("password", gettext("A password is required for a new mailbox."))
        elif changed := self._server_changes(cleaned):
            self.add_error(
                "password",
                gettext(
                    "The server changed (%(fields)s): enter the password again. The stored "
                    "password is only ever sent to the server it was entered for."
                )
                % {
                    "fields": ", ".join(
                        str(getattr(Mailbox._meta.get_field(name), "verbose_name", name))
                        for name in changed
                    )
                },
            )
        else:
            cleaned["password"] = self.instance.password

    def _check_destination(self, cleaned: dict) -> None:
        """Checks a new mailbox, a changed server and every enabled mailbox; an unchanged
        disabled one can still be saved (to disable a mailbox whose host is refused)."""
        if not (cleaned.get("enabled") or not self.instance.pk or self._server_changes(cleaned)):
            return
        try:
            policy = ConnectionPolicy.current()
        except ImapSettingsError as exc:  # a bad PRICEFEED_IMAP_ALLOWED_NETWORKS
            self.add_error(None, translated(text_of(exc)))
            return
        if "security" in cleaned:
            try:
                policy.check_security(cleaned["security"])
            except PlainNotAllowed as exc:
                self.add_error("security", translated(text_of(exc)))
        if "host" not in cleaned or "port" not in cleaned:
            return
        try:
            policy.addresses(cleaned["host"], cleaned["port"])
        except socket.gaierror:
            pass  # checked again on every connection, which reports "host not found"
        except AddressNotAllowed as exc:
            self.add_error("host", translated(text_of(exc)))

    def save(self, commit: bool = True) -> Mailbox:
        if self.password_entered:
            # Typed in this save, so for the server as configured now: kept even when
            # that server differs from the stored one (Mailbox.save).
            self.instance.set_password(self.cleaned_data["password"])
        return super().save(commit)
