"""Error reports that keep the passwords inside URLs to themselves.

Django's ``SafeExceptionReporterFilter`` hides settings by their name (``…PASSWORD``,
``…KEY``, ``…SECRET``), so a URL with credentials under an innocent name — the Redis
broker in ``Q_CLUSTER["redis"]``, a local variable holding a database URL — reached the
error mails to ``ADMINS`` whole. ``UrlPasswordReporterFilter`` masks the password of
every ``scheme://user:password@host`` in settings, request metadata and the local
variables of the traceback's frames (``DEFAULT_EXCEPTION_REPORTER_FILTER``).
"""

from __future__ import annotations

import re
from pprint import pformat
from typing import Any

from django.views.debug import SafeExceptionReporterFilter

MASK = SafeExceptionReporterFilter.cleansed_substitute

# scheme://userinfo@host: the password is what follows the first ":" of the userinfo,
# up to the last "@" before the host (a raw "@" in a password still parses: urllib
# splits at the last one), never past the end of the authority ("/", "?", "#").
_URL_PASSWORD = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#:]*):(?P<password>[^\s/?#]*)@"
)


def mask_url_passwords(text: str, mask: str = MASK) -> str:
    """Returns ``text`` with the password of every ``scheme://user:password@`` in it
    replaced by ``mask``; user, host and the rest are kept (they say where it went)."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}:{mask}@", text)


class _MaskedRepr:
    """A frame variable as the report shows it (its pretty-printed form), with the
    passwords of the URLs in it masked; formatted only when the report asks."""

    def __init__(self, value: Any, mask: str) -> None:
        self.value = value
        self.mask = mask

    def __repr__(self) -> str:
        return mask_url_passwords(pformat(self.value), self.mask)


class UrlPasswordReporterFilter(SafeExceptionReporterFilter):
    """Django's filter, plus: passwords in URLs are masked wherever a value is shown."""

    def cleanse_setting(self, key, value):
        # Django recurses into dicts, lists and tuples through this method, so every
        # string of a nested setting passes here.
        cleansed = super().cleanse_setting(key, value)
        if isinstance(cleansed, str):
            # str(): a lazy string (django-axes's AXES_USERNAME_FORM_FIELD) passes for a str.
            return mask_url_passwords(str(cleansed), self.cleansed_substitute)
        return cleansed

    def get_traceback_frame_variables(self, request, tb_frame):
        return [
            (name, self._cleanse_variable(value))
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]

    def _cleanse_variable(self, value: Any) -> Any:
        if isinstance(value, str):
            return mask_url_passwords(str(value), self.cleansed_substitute)
        # Anything else is masked in the text the report shows for it: a dict, an
        # object whose repr names its URL, a settings dict of a connection.
        return _MaskedRepr(value, self.cleansed_substitute)
