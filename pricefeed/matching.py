"""Which price-list configs a message matches, and why the others do not.

Pure logic: no database, no I/O. Patterns are case-insensitive globs matched against the
whole value (``*@supplier.ru``, ``прайс*``, ``price_*.xlsx``); a pattern starting with
``re:`` is a regular expression searched anywhere in the value. Empty matches anything.

A config's ``sender_auth`` policy weighs the sender's authentication verdict the envelope
carries (mailboxes.authresults): ``require`` matches only an authenticated sender (else
the reason says why not), ``record`` matches as the patterns say and notes the verdict
in a matching config's reasons (when there is one: with no authserv-id trusted nothing
was read), ``ignore`` neither asks nor says. The report carries the
verdict whatever the policies.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from core.texts import Text, as_json, gettext_noop, stored_all
from mailboxes.authresults import SenderVerdict

from .exceptions import PatternError

REGEX_PREFIX = "re:"

# The reasons of a config's verdict, stored in English in the match report and
# translated where they are shown (pricefeed.texts).
SENDER_MISMATCH = gettext_noop("sender %(sender)s does not match %(pattern)s")
SUBJECT_MISMATCH = gettext_noop("subject %(subject)s does not match %(pattern)s")
NO_ATTACHMENTS = gettext_noop("message has no attachments")
NO_FILE_MATCHES = gettext_noop(
    "no attachment name matches %(pattern)s (attachments: %(attachments)s)"
)
INVALID_PATTERN = gettext_noop("config has an invalid pattern: %(error)s")
INVALID_REGEX = gettext_noop("invalid regular expression: %(error)s")
NOT_AUTHENTICATED = gettext_noop("sender not authenticated: %(why)s")
AUTHENTICATED = gettext_noop("sender authenticated: %(why)s")
NOT_AUTHENTICATED_RECORDED = gettext_noop("sender not authenticated (recorded only): %(why)s")
NOT_CHECKED = gettext_noop("the message's sender was not checked")
# A count: translated with ngettext (pricefeed.texts).
MATCHED_FILES = "matched %(count)s file(s)"


def compile_pattern(pattern: str) -> re.Pattern[str] | None:
    """Returns a compiled matcher for ``pattern``; None means "matches anything"."""
    pattern = pattern.strip()
    if not pattern:
        return None
    if pattern.startswith(REGEX_PREFIX):
        try:
            return re.compile(pattern[len(REGEX_PREFIX) :], re.IGNORECASE)
        except re.error as exc:
            raise PatternError(Text(INVALID_REGEX, error=exc)) from None
    # fnmatch.translate anchors at the end; match() anchors at the start.
    return re.compile(fnmatch.translate(pattern), re.IGNORECASE)


def pattern_matches(compiled: re.Pattern[str] | None, value: str, *, regex: bool) -> bool:
    if compiled is None:
        return True
    return bool(compiled.search(value) if regex else compiled.match(value))


@dataclass(frozen=True)
class Attachment:
    key: str
    filename: str
    content_type: str
    size: int
    sha256: str
    # For an archive: the paths of the files inside it (nested archives as "a.zip/b.csv"),
    # or why it could not be opened.
    members: tuple[str, ...] = ()
    archive_error: str = ""
    # Entries of an archive left out as macOS metadata (__MACOSX/, ._name, .DS_Store):
    # never imported, listed in the match report.
    skipped: tuple[str, ...] = ()


MAX_KEY = 255


def member_key(attachment_key: str, path: str) -> str:
    """The key of one file inside an archive attachment: "part<N>/<path>"."""
    key = f"{attachment_key}/{path}"
    if len(key) <= MAX_KEY:
        return key
    digest = hashlib.sha256(path.encode()).hexdigest()[:16]
    return f"{key[: MAX_KEY - 18]}~{digest}"


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _files_matching(pattern: str, attachment: Attachment) -> list[str]:
    """Keys of the files an attachment contributes under a filename pattern.

    An attachment whose own name matches gives itself, or every file inside it when it
    is an archive; otherwise, an archive gives the files inside whose name matches.
    """
    if _check(pattern, attachment.filename):
        if attachment.members:
            return [member_key(attachment.key, m) for m in attachment.members]
        return [attachment.key]
    return [
        member_key(attachment.key, m)
        for m in attachment.members
        if _check(pattern, _basename(m)) or _check(pattern, m)
    ]


@dataclass(frozen=True)
class Envelope:
    sender: str
    subject: str
    attachments: tuple[Attachment, ...]
    # What the receiving server's Authentication-Results say of the sender
    # (mailboxes.authresults); None when nobody read them.
    sender_auth: SenderVerdict | None = None


# A config's sender_auth policy (PriceListConfig.SenderAuth): what the verdict must say.
IGNORE = "ignore"  # nothing: the From address alone decides, and the reasons are silent
RECORD = "record"  # nothing, but a matching config notes the verdict in its reasons
REQUIRE = "require"  # an authenticated sender, or the config does not match


@dataclass(frozen=True)
class Rule:
    config_id: int
    name: str
    sender_pattern: str = ""
    subject_pattern: str = ""
    filename_pattern: str = ""
    sender_auth: str = RECORD


@dataclass
class RuleResult:
    config_id: int
    name: str
    matched: bool
    reasons: list[str] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)


def _check(pattern: str, value: str) -> bool:
    # Both NFC: names from macOS come decomposed ("й" as "и" and a breve) and would
    # match no pattern typed elsewhere, though they look the same.
    return pattern_matches(
        compile_pattern(unicodedata.normalize("NFC", pattern)),
        unicodedata.normalize("NFC", value),
        regex=pattern.strip().startswith(REGEX_PREFIX),
    )


def evaluate(rule: Rule, envelope: Envelope) -> RuleResult:
    """Evaluates one config against a message; every failed criterion gives a reason."""
    result = RuleResult(config_id=rule.config_id, name=rule.name, matched=False)
    try:
        if not _check(rule.sender_pattern, envelope.sender):
            result.reasons.append(
                Text(
                    SENDER_MISMATCH,
                    sender=repr(envelope.sender or "(none)"),
                    pattern=repr(rule.sender_pattern),
                )
            )
        if not _check(rule.subject_pattern, envelope.subject):
            result.reasons.append(
                Text(
                    SUBJECT_MISMATCH,
                    subject=repr(envelope.subject),
                    pattern=repr(rule.subject_pattern),
                )
            )
        if not envelope.attachments:
            result.reasons.append(NO_ATTACHMENTS)
        else:
            result.attachments = [
                key
                for attachment in envelope.attachments
                for key in _files_matching(rule.filename_pattern, attachment)
            ]
            if not result.attachments:
                names = ", ".join(
                    repr(a.filename) + (f" [{', '.join(a.members)}]" if a.members else "")
                    for a in envelope.attachments
                )
                result.reasons.append(
                    Text(NO_FILE_MATCHES, pattern=repr(rule.filename_pattern), attachments=names)
                )
    except PatternError as exc:
        result.reasons.append(Text(INVALID_PATTERN, error=exc))
        result.attachments = []
    verdict = envelope.sender_auth
    authenticated = verdict is not None and verdict.authenticated
    if rule.sender_auth == REQUIRE and not authenticated:
        result.reasons.append(Text(NOT_AUTHENTICATED, why=_why(verdict)))
    result.matched = not result.reasons
    if not result.matched:
        result.attachments = []
        return result
    result.reasons.append(Text(MATCHED_FILES, count=len(result.attachments)))
    if verdict is not None and verdict.checked and rule.sender_auth in (RECORD, REQUIRE):
        if authenticated:
            result.reasons.append(Text(AUTHENTICATED, why=verdict.reason))
        else:
            result.reasons.append(Text(NOT_AUTHENTICATED_RECORDED, why=verdict.reason))
    return result


def _why(verdict: SenderVerdict | None) -> str:
    return verdict.reason if verdict is not None else NOT_CHECKED


def evaluate_all(rules: Iterable[Rule], envelope: Envelope) -> list[RuleResult]:
    return [evaluate(rule, envelope) for rule in rules]


def report(envelope: Envelope, results: list[RuleResult], **extra: object) -> dict:
    """The match report stored on the message: what was seen and each config's verdict
    (its texts in their stored form, core.texts)."""
    data = {
        "sender": envelope.sender,
        "subject": envelope.subject,
        "attachments": [
            {**asdict(a), "archive_error": as_json(a.archive_error)} for a in envelope.attachments
        ],
        "configs": [{**asdict(r), "reasons": stored_all(r.reasons)} for r in results],
        **extra,
    }
    if envelope.sender_auth is not None:
        data["sender_auth"] = envelope.sender_auth.as_dict()
    return data
