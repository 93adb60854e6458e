"""The endpoints' admin forms: secrets are write-only, kinds are ticked."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .endpoints import amqp_address, split_password
from .kinds import EventKind
from .models import AmqpTarget, Webhook


def _kinds_field() -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=EventKind.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label=_("Events"),
        help_text=_("The kinds of event sent to it."),
    )


class WebhookForm(forms.ModelForm):
    """The secret is never shown back: left empty on edit, the stored one is kept."""

    secret = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        label=_("Secret"),
        help_text=_(
            "Signs every request (HMAC-SHA256); the receiver keeps the same. Stored "
            "encrypted, never shown. Leave empty to keep the current one."
        ),
    )
    url = forms.URLField(label=_("URL"), max_length=1000, assume_scheme="https")
    kinds = _kinds_field()

    class Meta:
        model = Webhook
        fields = ["name", "url", "secret", "kinds", "enabled"]

    def clean_secret(self) -> str:
        secret = self.cleaned_data.get("secret") or ""
        if secret:
            if len(secret) < 16:
                raise forms.ValidationError(_("A secret has at least 16 characters."), code="short")
            return secret
        if self.instance.pk and self.instance.secret:
            return self.instance.secret
        raise forms.ValidationError(_("Enter a secret."), code="required")


class AmqpTargetForm(forms.ModelForm):
    """The password is never shown back: typed in the URL or in its own field, it is
    stored apart, encrypted. Left empty on edit, the stored one is kept — unless the
    server (host, port, virtual host, user, TLS) changes: then it must be entered again,
    for a stored password never goes to another server."""

    password = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        label=_("Password"),
        help_text=_("Stored encrypted. Leave empty to keep the current password."),
    )
    kinds = _kinds_field()

    class Meta:
        model = AmqpTarget
        fields = ["name", "url", "password", "exchange", "routing_key", "kinds", "enabled"]

    def clean(self):
        cleaned = super().clean() or {}
        url = cleaned.get("url")
        if not url:
            return cleaned
        try:
            url, in_url = split_password(url)
        except ValueError:
            self.add_error("url", gettext("Not a valid URL."))
            return cleaned
        cleaned["url"] = url
        self.instance.url = url
        typed = cleaned.get("password") or in_url or ""
        if typed:
            cleaned["password"] = typed
            return cleaned
        old = self.instance.pk and AmqpTarget.objects.filter(pk=self.instance.pk).first()
        if old and old.password:
            try:
                same = amqp_address(old.url) == amqp_address(url)
            except forms.ValidationError:
                same = False
            if not same:
                self.add_error(
                    "password",
                    gettext("The server changed: enter its password again."),
                )
            cleaned["password"] = old.password
        return cleaned
