from __future__ import annotations

from django import forms

from .models import Mailbox


class MailboxForm(forms.ModelForm):
    """Password is write-only: left empty on edit, the stored one is kept."""

    password = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        help_text="Stored encrypted. Leave empty to keep the current password.",
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

    def clean_password(self) -> str:
        value = self.cleaned_data.get("password", "")
        if not value and self.instance.pk:
            return self.instance.password
        if not value:
            raise forms.ValidationError("A password is required for a new mailbox.")
        return value

    def clean(self):
        cleaned = super().clean() or {}
        security, port = cleaned.get("security"), cleaned.get("port")
        if security == Mailbox.Security.SSL and port == 143:
            self.add_error("port", "Port 143 normally speaks STARTTLS or plain, not SSL/TLS.")
        if security in (Mailbox.Security.STARTTLS, Mailbox.Security.PLAIN) and port == 993:
            self.add_error("port", "Port 993 normally speaks implicit SSL/TLS.")
        return cleaned
