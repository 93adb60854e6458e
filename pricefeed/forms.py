from __future__ import annotations

import re

from django import forms
from django.conf import settings
from django.db import models
from django.utils.dates import WEEKDAYS
from django.utils.text import capfirst, format_lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from . import columns as column_mapping
from .exceptions import PatternError
from .limits import file_size_problem
from .matching import compile_pattern
from .models import PriceListConfig, PriceType, default_sender_auth
from .parsing import ALL_FIELDS as FIELDS
from .parsing.types import MAX_PRICE_TYPES, MAX_WAREHOUSES
from .schedule import ISO_WEEKDAYS, zone_problem
from .texts import text_of, translated

# Two Latin letters are a column (AA..ZZ) or a short header ("ID", "No"): the parser
# takes the header when the sheet's header row has it (parsing.table.find_header).
_TWO_LETTERS = re.compile(r"[A-Za-z]{2}")


PRICE_SENSE_DEFAULTED = ("price_jump_percent", "hold_removed_percent", "hold_shrink_percent")


class PriceListConfigForm(forms.ModelForm):
    expected_weekdays = forms.TypedMultipleChoiceField(
        label=_("expected on weekdays"),
        choices=[(day, WEEKDAYS[day - 1]) for day in ISO_WEEKDAYS],
        coerce=int,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("The days of the week a list is due on, by the time below."),
    )

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
            "allow_nonpositive_prices",
            "price_jump_percent",
            "hold_removed_percent",
            "hold_shrink_percent",
            "expected_every_hours",
            "expected_weekdays",
            "expected_by",
            "expected_timezone",
            "expected_grace_minutes",
        ]

    def _clean_pattern(self, field: str) -> str:
        value = (self.cleaned_data.get(field) or "").strip()
        try:
            compile_pattern(value)
        except PatternError as exc:
            raise forms.ValidationError(translated(text_of(exc))) from None
        return value

    def clean_sender_pattern(self) -> str:
        return self._clean_pattern("sender_pattern")

    def clean_subject_pattern(self) -> str:
        return self._clean_pattern("subject_pattern")

    def clean_filename_pattern(self) -> str:
        return self._clean_pattern("filename_pattern")

    def clean_sender_auth(self) -> str:
        value = self.cleaned_data.get("sender_auth") or default_sender_auth()
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
        known = (*FIELDS, column_mapping.PRICES, column_mapping.STOCKS)
        unknown = sorted(set(columns) - set(known))
        if unknown:
            raise forms.ValidationError(
                _("Unknown field(s) %(unknown)s; use %(fields)s."),
                code="unknown_field",
                params={"unknown": ", ".join(unknown), "fields": ", ".join(known)},
            )
        self._clean_prices(columns.get(column_mapping.PRICES))
        self._clean_stocks(columns.get(column_mapping.STOCKS))
        for key, value in columns.items():
            if key in (column_mapping.PRICES, column_mapping.STOCKS):
                continue
            if not isinstance(value, str) or not value.strip():
                raise forms.ValidationError(
                    _("Column for %(field)s must be a header text or a column letter."),
                    code="invalid_column",
                    params={"field": repr(key)},
                )
        # Not refused: only the file can tell, and the parser decides the same way every
        # time (the header wins) and says so in the import's warnings when the header is
        # elsewhere than the letter.
        self.column_notes = [
            gettext(
                "“%(value)s” for %(field)s will be read as the header “%(value)s” if the "
                "sheet's header row has one, else as column %(letter)s."
            )
            % {"value": value.strip(), "field": key, "letter": value.strip().upper()}
            for key, value in columns.items()
            if isinstance(value, str) and _TWO_LETTERS.fullmatch(value.strip())
        ]
        return columns

    def _clean_prices(self, prices: object) -> None:
        """ "prices": {price type code: column, or {"column": ..., "currency": ...}}."""
        if prices is None:
            return
        if not isinstance(prices, dict):
            raise forms.ValidationError(
                _('“prices” must be an object such as {"rrp": "РРЦ", "retail": "H"}.'),
                code="invalid_prices",
            )
        if len(prices) > MAX_PRICE_TYPES:
            raise forms.ValidationError(
                _("At most %(limit)s price columns besides the main one."),
                code="too_many_prices",
                params={"limit": MAX_PRICE_TYPES},
            )
        codes = set(PriceType.objects.values_list("code", flat=True))
        unknown = sorted(code for code in prices if code not in codes)
        if unknown:
            raise forms.ValidationError(
                _("Unknown price type(s) %(unknown)s; known: %(known)s (Price types)."),
                code="unknown_price_type",
                params={"unknown": ", ".join(unknown), "known": ", ".join(sorted(codes)) or "—"},
            )
        for code, spec in prices.items():
            column = spec.get("column") if isinstance(spec, dict) else spec
            if not isinstance(column, str) or not column.strip():
                raise forms.ValidationError(
                    _(
                        "The column of price type %(code)s must be a header text or a "
                        'column letter, or {"column": ..., "currency": ...}.'
                    ),
                    code="invalid_price_column",
                    params={"code": code},
                )
            if isinstance(spec, dict):
                extra = sorted(set(spec) - {"column", "currency"})
                currency = spec.get("currency", "")
                if extra or not isinstance(currency, str) or len(currency.strip()) > 10:
                    raise forms.ValidationError(
                        _(
                            "Price type %(code)s: only “column” and “currency” (a code of at "
                            "most 10 characters, such as USD) may be given."
                        ),
                        code="invalid_price_spec",
                        params={"code": code},
                    )

    def _clean_stocks(self, stocks: object) -> None:
        """ "stocks": {warehouse: column}."""
        if stocks is None:
            return
        if isinstance(stocks, dict) and len(stocks) > MAX_WAREHOUSES:
            raise forms.ValidationError(
                _("At most %(limit)s warehouses."),
                code="too_many_stocks",
                params={"limit": MAX_WAREHOUSES},
            )
        if not isinstance(stocks, dict) or not all(
            isinstance(name, str)
            and name.strip()
            and len(name) <= 100
            and isinstance(column, str)
            and column.strip()
            for name, column in stocks.items()
        ):
            raise forms.ValidationError(
                _(
                    "“stocks” must be an object of warehouse names (at most 100 characters) "
                    'and their columns, such as {"Москва": "Остаток МСК", "СПб": "K"}.'
                ),
                code="invalid_stocks",
            )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if "expected_grace_minutes" in self.fields:
            self.fields["expected_grace_minutes"].required = False  # empty = none
        # Price sense: empty = the default (pricefeed.models.PriceListConfig).
        for name in PRICE_SENSE_DEFAULTED:
            if name in self.fields:
                self.fields[name].required = False
        # What clean_columns found worth saying without refusing the config; the admin
        # shows them as warnings once the config is saved.
        self.column_notes = []
        if "columns" in self.fields:
            self.fields["columns"].help_text = format_lazy(
                "{} {} {}",
                self.fields["columns"].help_text,
                _(
                    "One or two Latin letters are a column letter, unless the sheet's "
                    "header row has a header of that text (such as “ID”): then that header."
                ),
                _(
                    'Also "article", "brand", "barcode", "unit", "pack" and "min_order"; '
                    '"prices": the price columns besides the main one by price type, '
                    'e.g. {"rrp": "РРЦ", "retail": {"column": "H", "currency": "USD"}}; '
                    '"stocks": stock per warehouse, e.g. {"Москва": "Остаток МСК"}. '
                    "Without them, price columns of a known type (РРЦ, розница, опт) and "
                    "several stock columns are found by their headers."
                ),
            )

    def _defaulted(self, name: str) -> int:
        value = self.cleaned_data.get(name)
        if value is None:
            field = PriceListConfig._meta.get_field(name)
            assert isinstance(field, models.Field)
            return field.get_default()
        return value

    def clean_price_jump_percent(self) -> int:
        return self._defaulted("price_jump_percent")

    def clean_hold_removed_percent(self) -> int:
        return self._defaulted("hold_removed_percent")

    def clean_hold_shrink_percent(self) -> int:
        return self._defaulted("hold_shrink_percent")

    def clean_expected_grace_minutes(self) -> int:
        return self.cleaned_data.get("expected_grace_minutes") or 0

    def clean_expected_timezone(self) -> str:
        value = (self.cleaned_data.get("expected_timezone") or "").strip()
        if value and zone_problem(value):
            raise forms.ValidationError(
                _("Unknown time zone “%(zone)s”: give an IANA name such as Europe/Moscow."),
                code="unknown_zone",
                params={"zone": value},
            )
        return value

    def clean(self) -> dict | None:
        cleaned = super().clean()
        self._clean_schedule(self.cleaned_data)
        return cleaned

    def _clean_schedule(self, cleaned: dict) -> None:
        """One rule at a time, each complete: every N hours, or weekdays by a time."""
        if self.errors.keys() & {"expected_every_hours", "expected_weekdays", "expected_by"}:
            return  # a field's own message says what is wrong first
        every = cleaned.get("expected_every_hours")
        days = cleaned.get("expected_weekdays") or []
        by = cleaned.get("expected_by")
        if every and (days or by is not None):
            self.add_error(
                "expected_every_hours",
                forms.ValidationError(
                    _(
                        "Choose one rule: every N hours, or weekdays by a time of day; "
                        "clear the other."
                    ),
                    code="two_rules",
                ),
            )
        elif days and by is None:
            self.add_error(
                "expected_by",
                forms.ValidationError(
                    _("Give the time of day the list is due by on those weekdays."),
                    code="no_time",
                ),
            )
        elif by is not None and not days:
            self.add_error(
                "expected_weekdays",
                forms.ValidationError(
                    _("Choose the weekdays the list is due on by that time."), code="no_days"
                ),
            )
        grace = cleaned.get("expected_grace_minutes")
        if every and grace and grace >= every * 60:
            self.add_error(
                "expected_grace_minutes",
                forms.ValidationError(
                    _("The grace must be shorter than the %(hours)d hours between lists."),
                    code="grace_too_long",
                    params={"hours": every},
                ),
            )

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
