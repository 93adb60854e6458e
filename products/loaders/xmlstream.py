"""XML read as a stream of callbacks, bounded: no tree is built, nothing of the file is
held but the path of open elements and the text of the one being read.

defusedxml's parser refuses entity declarations (billion laughs, external entities);
a DOCTYPE without them is allowed (Yandex's YML files carry
``<!DOCTYPE yml_catalog SYSTEM "shops.dtd">``, which is never fetched). The file is fed
in pieces, and the caps of LoadLimits hold on the way: elements, nesting depth, the
length of a text or of an attribute, the time. A value expat holds whole before it
calls back (an attribute, a tag, a comment) is bounded by the bytes fed since the last
callback.
"""

from __future__ import annotations

import time
from typing import BinaryIO
from xml.etree.ElementTree import ParseError

from defusedxml.common import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser
from django.utils.translation import gettext as _

from .limits import CatalogueRefused, LoadLimits

CHUNK = 1 << 16


class _Stop(Exception):
    """Raised from a callback: expat passes it on, and the reason is kept."""


class XmlReader:
    """A reader of one XML format: ``started`` and ``ended`` are called with the path
    of open elements (local names, namespaces dropped), ``ended`` with the element's
    own text (stripped), collected only where ``wants_text(path)`` says so."""

    def __init__(self, limits: LoadLimits) -> None:
        self.limits = limits
        self.path: list[str] = []
        self.elements = 0
        self.events = 0
        self._text: list[str] = []
        self._text_chars = 0
        self._collect = False
        self.problem: str | None = None
        self._expat: object | None = None

    @property
    def line(self) -> int:
        """The line of the file the parser is at (1 before it starts)."""
        return int(getattr(self._expat, "CurrentLineNumber", 1))

    # -- for the formats ---------------------------------------------------------------

    def wants_text(self, path: list[str]) -> bool:
        return True

    def started(self, path: list[str], attrib: dict[str, str]) -> None:
        pass

    def ended(self, path: list[str], text: str) -> None:
        pass

    # -- the parser's target ------------------------------------------------------------

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.events += 1
        self.elements += 1
        limits = self.limits
        if self.elements > limits.max_elements:
            self._stop(_("more than %(limit)s XML elements") % {"limit": limits.max_elements})
        if len(self.path) >= limits.max_depth:
            self._stop(_("XML nested deeper than %(limit)s levels") % {"limit": limits.max_depth})
        for value in attrib.values():
            if len(value) > limits.max_value_chars:
                self._stop(self._too_long())
        self.path.append(tag.rsplit("}", 1)[-1])
        self._text.clear()
        self._text_chars = 0
        self._collect = self.wants_text(self.path)
        self.started(self.path, attrib)

    def data(self, text: str) -> None:
        self.events += 1
        if not self._collect:
            return
        self._text_chars += len(text)
        if self._text_chars > self.limits.max_value_chars:
            self._stop(self._too_long())
        self._text.append(text)

    def end(self, tag: str) -> None:
        self.events += 1
        text = "".join(self._text).strip() if self._collect else ""
        self._text.clear()
        self._text_chars = 0
        self.ended(self.path, text)
        self.path.pop()
        self._collect = bool(self.path) and self.wants_text(self.path)

    def close(self) -> None:
        return None

    def _too_long(self) -> str:
        return _("an XML value longer than %(limit)s characters") % {
            "limit": self.limits.max_value_chars
        }

    def _stop(self, reason: str) -> None:
        self.problem = reason
        raise _Stop(reason)

    # -- reading -----------------------------------------------------------------------

    def read(self, source: BinaryIO) -> None:
        """Feeds the whole of ``source`` through the parser; CatalogueRefused when the
        file is not well-formed XML, declares entities or goes past a cap."""
        parser = DefusedXMLParser(
            target=self, forbid_dtd=False, forbid_entities=True, forbid_external=True
        )
        self._expat = parser.parser
        limits = self.limits
        deadline = time.monotonic() + limits.max_seconds
        # expat holds a start tag (with its attributes) or a comment whole before any
        # callback: no callback for this many bytes means one of those is too long.
        silent_bytes_allowed = limits.max_value_chars * 4 + CHUNK
        silent = 0
        try:
            while chunk := source.read(CHUNK):
                events = self.events
                parser.feed(chunk)
                silent = silent + len(chunk) if events == self.events else 0
                if silent > silent_bytes_allowed:
                    self._stop(self._too_long())
                if time.monotonic() > deadline:
                    self._stop(
                        _("reading took longer than %(limit)s seconds")
                        % {"limit": limits.max_seconds}
                    )
            parser.close()
        except _Stop:
            raise CatalogueRefused(self.problem) from None
        except DefusedXmlException:
            raise CatalogueRefused(
                _("the XML declares entities (a DTD with ENTITY): such files are not read")
            ) from None
        except ParseError as exc:
            line, column = exc.position
            raise CatalogueRefused(
                _("not well-formed XML (line %(line)s, column %(column)s)")
                % {"line": line, "column": column}
            ) from None
