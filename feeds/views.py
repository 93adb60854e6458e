"""``/feeds/<token>/``: a feed of our published prices, streamed.

Unknown, renewed and switched-off tokens alike are a 404 that tells nothing. The ETag
follows the published version, the catalogue's (products.keys.catalogue_version: any
product written) and the feed's own settings (and its customer group's);
Last-Modified is the later of the version's change and those settings'. A request whose
If-None-Match (or, without it, If-Modified-Since) matches is answered 304.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django.views.decorators.http import require_safe

from products.keys import catalogue_version

from . import writers
from .models import Feed
from .tokens import feed_for_token

CONTENT_TYPES = {
    Feed.Format.YML: "application/xml; charset=utf-8",
    Feed.Format.CML: "application/xml; charset=utf-8",
    Feed.Format.CSV: "text/csv; charset=utf-8",
    Feed.Format.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
FILE_NAMES = {
    Feed.Format.YML: "yml.xml",
    Feed.Format.CML: "offers.xml",
    Feed.Format.CSV: "prices.csv",
    Feed.Format.XLSX: "prices.xlsx",
}


def feed_etag(feed: Feed, version: writers.Version) -> str:
    group = feed.customer_group
    parts = [
        str(version.number),
        str(feed.pk),
        feed.format,
        feed.updated_at.isoformat(),
        group.updated_at.isoformat() if group is not None else "",
        # Names, brands, codes and categories: a product written moves it on.
        str(catalogue_version()),
    ]
    return '"' + hashlib.sha256("|".join(parts).encode()).hexdigest()[:32] + '"'


def feed_last_modified(feed: Feed, version: writers.Version) -> int:
    moments = [version.changed_at, feed.updated_at]
    if feed.customer_group is not None:
        moments.append(feed.customer_group.updated_at)
    # Whole seconds, as the header carries it (If-Modified-Since compares to it).
    return int(max(moments).timestamp())


@require_safe
def feed_view(request: HttpRequest, token: str) -> HttpResponseBase:
    feed = feed_for_token(token)
    if feed is None:
        raise Http404()
    version = writers.published_version()
    etag = feed_etag(feed, version)
    last_modified = feed_last_modified(feed, version)
    conditional = get_conditional_response(request, etag=etag, last_modified=last_modified)
    if conditional is not None:
        return conditional
    response = StreamingHttpResponse(
        _content(feed, version) if request.method == "GET" else iter(()),
        content_type=CONTENT_TYPES[Feed.Format(feed.format)],
    )
    response["ETag"] = etag
    response["Last-Modified"] = http_date(last_modified)
    response["Cache-Control"] = "private, no-cache"
    disposition = "attachment" if feed.format in (Feed.Format.CSV, Feed.Format.XLSX) else "inline"
    response["Content-Disposition"] = (
        f'{disposition}; filename="{FILE_NAMES[Feed.Format(feed.format)]}"'
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _content(feed: Feed, version: writers.Version) -> Iterator[bytes]:
    percent = writers.percent_of(feed.customer_group)
    if feed.format == Feed.Format.YML:
        return writers.yml(feed, version)
    if feed.format == Feed.Format.CML:
        return writers.cml(feed, version)
    if feed.format == Feed.Format.CSV:
        return writers.csv(percent)
    out, _rows = writers.xlsx(percent, settings.PRICEFEED_FEEDS_XLSX_MAX_ROWS)
    return writers.file_chunks(out)
