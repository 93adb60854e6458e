from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from .exceptions import PatternError
from .limits import file_size_problem
from .matching import compile_pattern
from .models import PriceListConfig
from .texts import translated

FIELDS = ("sku", "name", "price", "currency", "quantity")


class PriceListConfigForm(forms.ModelForm):
    class Meta:
        model = PriceListConfig
        fields = [
            "name",
            "mailbox",
            "enabled",
            "sender_pattern",
            "subject_pattern",
            "filename_pattern",
            "sender_auth",
            "columns",
            "sheet",
            "number_format",
            "mode",
            "default_currency",
            "max_bad_rows_percent",
        ]

    def _clean_pattern(self, field: str) -> str:
        value = (self.cleaned_data.get(field) or "").strip()
        try:
            compile_pattern(value)
        except PatternError as exc:
            raise forms.ValidationError(translated(str(exc))) from None
        return value

    def clean_sender_pattern(self) -> str:
        return self._clean_pattern("sender_pattern")

    def clean_subject_pattern(self) -> str:
        return self._clean_pattern("subject_pattern")

    def clean_filename_pattern(self) -> str:
        return self._clean_pattern("filename_pattern")

    def clean_sender_auth(self) -> str:
        value = self.cleaned_data.get("sender_auth") or PriceListConfig.SenderAuth.RECORD
        if value == PriceListConfig.SenderAuth.REQUIRE and not settings.PRICEFEED_AUTHSERV_IDS:
            raise forms.ValidationError(
                _(
                    "No receiving server is trusted (PRICEFEED_AUTHSERV_IDS is empty), so no "
                    "sender can be authenticated and this config would never match. Set "
                    "PRICEFEED_AUTHSERV_IDS first, or choose “%(record)s”."
                ),
                code="no_authserv_ids",
                params={"record": PriceListConfig.SenderAuth.RECORD.label},
            )
        return value

    def clean_columns(self) -> dict:
        columns = self.cleaned_data.get("columns") or {}
        if not isinstance(columns, dict):
            raise forms.ValidationError(
                _('Expected an object such as {"sku": "A", "price": "Цена"}.'), code="invalid"
            )
        unknown = sorted(set(columns) - set(FIELDS))
        if unknown:
            raise forms.ValidationError(
                _("Unknown field(s) %(unknown)s; use %(fields)s."),
                code="unknown_field",
                params={"unknown": ", ".join(unknown), "fields": ", ".join(FIELDS)},
            )
        for key, value in columns.items():
            if not isinstance(value, str) or not value.strip():
                raise forms.ValidationError(
                    _("Column for %(field)s must be a header text or a column letter."),
                    code="invalid_column",
                    params={"field": repr(key)},
                )
        return columns

    def clean_sheet(self) -> str:
        sheet = (self.cleaned_data.get("sheet") or "").strip()
        if sheet.isdigit() and int(sheet) < 1:
            raise forms.ValidationError(_("Sheet numbers start at 1."), code="invalid_sheet")
        return sheet


class PreviewForm(forms.Form):
    file = forms.FileField(
        label=_("File"), help_text=_("A price-list file or an archive; nothing is stored.")
    )

    def clean_file(self):
        """The upload's size, known before its bytes are read, within the file limit."""
        upload = self.cleaned_data["file"]
        problem = file_size_problem(upload.size or 0)
        if problem:
            raise forms.ValidationError(capfirst(translated(problem)) + ".", code="too_large")
        return upload
