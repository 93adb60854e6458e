"""pricefeed.matching: which configs a message matches, and why the others do not."""

from __future__ import annotations

import dataclasses
import json
import unicodedata

import pytest

from core.storedtext import as_json
from mailboxes.authresults import SenderVerdict
from pricefeed.matching import (
    IGNORE,
    RECORD,
    REQUIRE,
    Attachment,
    Envelope,
    PatternError,
    Rule,
    compile_pattern,
    evaluate,
    evaluate_all,
    pattern_matches,
    report,
)
from pricefeed.models import PriceListConfig
from tests.factories import english


def matches(pattern: str, value: str) -> bool:
    compiled = compile_pattern(pattern)
    return pattern_matches(compiled, value, regex=pattern.strip().startswith("re:"))


def attachment(key: str, filename: str) -> Attachment:
    return Attachment(
        key=key,
        filename=filename,
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        size=10,
        sha256="0" * 64,
    )


def envelope(
    sender: str = "prices@supplier.ru",
    subject: str = "Прайс-лист на 01.06",
    filenames: tuple[str, ...] = ("прайс_июнь.xlsx",),
) -> Envelope:
    return Envelope(
        sender=sender,
        subject=subject,
        attachments=tuple(attachment(f"part{i + 2}", name) for i, name in enumerate(filenames)),
    )


# -- patterns ---------------------------------------------------------------------------------


def test_glob_sender_pattern_is_case_insensitive():
    assert matches("*@Supplier.RU", "PRICES@supplier.ru")


def test_glob_with_cyrillic_is_case_insensitive():
    assert matches("прайс*", "ПРАЙС-ЛИСТ на июнь")
    assert matches("прайс_*.xlsx", "Прайс_2024.XLSX")


def test_glob_matches_the_whole_value_not_a_prefix():
    assert not matches("*@supplier.ru", "prices@supplier.ru.evil.example")
    assert not matches("price*.xlsx", "price.xlsx.exe")


def test_glob_matches_the_whole_value_not_a_suffix():
    assert not matches("прайс*", "Новый прайс-лист")


def test_regex_pattern_searches_anywhere_in_the_value():
    assert matches("re:прайс", "Новый ПРАЙС-лист")
    assert matches(r"re:\d{2}\.\d{2}", "Прайс-лист на 01.06 готов")


def test_regex_pattern_is_case_insensitive():
    assert matches("re:^prices@", "PRICES@supplier.ru")


def test_regex_pattern_that_does_not_occur_does_not_match():
    assert not matches("re:остатки", "Прайс-лист")


@pytest.mark.parametrize("pattern", ["", "   "])
def test_empty_pattern_matches_anything(pattern):
    assert compile_pattern(pattern) is None
    assert matches(pattern, "")
    assert matches(pattern, "anything at all")


def test_invalid_regex_raises_pattern_error():
    with pytest.raises(PatternError, match="invalid regular expression"):
        compile_pattern("re:(unclosed")


def test_unclosed_bracket_in_glob_matches_literally():
    assert matches("price[.xlsx", "PRICE[.xlsx")
    assert not matches("price[.xlsx", "price1.xlsx")


def test_glob_character_class_matches():
    assert matches("price_[0-9][0-9].xlsx", "PRICE_07.xlsx")
    assert not matches("price_[0-9][0-9].xlsx", "price_ab.xlsx")


def test_escaped_bracket_matches_a_literal_bracket():
    assert matches("[[]*", "[1C] прайс.xlsx")


# -- evaluate ---------------------------------------------------------------------------------


def test_matching_config_lists_every_matching_attachment_key():
    env = envelope(filenames=("прайс_опт.xlsx", "readme.txt", "ПРАЙС_розница.XLSX"))
    rule = Rule(1, "Опт", "*@supplier.ru", "прайс*", "прайс_*.xlsx")

    result = evaluate(rule, env)

    assert result.matched
    assert result.attachments == ["part2", "part4"]
    assert result.reasons == ["matched 2 file(s)"]


def test_config_with_empty_patterns_matches_any_message_with_attachments():
    result = evaluate(Rule(1, "any"), envelope())

    assert result.matched
    assert result.attachments == ["part2"]


def test_sender_mismatch_gives_a_reason_naming_sender_and_pattern():
    result = evaluate(Rule(1, "r", sender_pattern="*@supplier.ru"), envelope(sender="x@other.ru"))

    assert not result.matched
    assert result.attachments == []
    assert result.reasons == ["sender 'x@other.ru' does not match '*@supplier.ru'"]


def test_missing_sender_is_shown_as_none_in_the_reason():
    result = evaluate(Rule(1, "r", sender_pattern="*@supplier.ru"), envelope(sender=""))

    assert result.reasons == ["sender '(none)' does not match '*@supplier.ru'"]


def test_subject_mismatch_gives_a_reason_naming_subject_and_pattern():
    result = evaluate(Rule(1, "r", subject_pattern="остатки*"), envelope(subject="Прайс-лист"))

    assert not result.matched
    assert result.reasons == ["subject 'Прайс-лист' does not match 'остатки*'"]


def test_message_without_attachments_gives_a_reason():
    result = evaluate(Rule(1, "r"), envelope(filenames=()))

    assert not result.matched
    assert result.reasons == ["message has no attachments"]


def test_no_matching_attachment_name_lists_the_attachment_names():
    env = envelope(filenames=("остатки.xlsx", "readme.txt"))

    result = evaluate(Rule(1, "r", filename_pattern="прайс_*.xlsx"), env)

    assert not result.matched
    assert result.attachments == []
    assert result.reasons == [
        "no attachment name matches 'прайс_*.xlsx' (attachments: 'остатки.xlsx', 'readme.txt')"
    ]


def test_every_failed_criterion_gives_its_own_reason():
    rule = Rule(1, "r", "*@supplier.ru", "прайс*", "прайс_*.xlsx")
    env = envelope(sender="spam@evil.example", subject="Hello", filenames=("invoice.pdf",))

    result = evaluate(rule, env)

    assert not result.matched
    assert len(result.reasons) == 3
    assert result.reasons[0].startswith("sender 'spam@evil.example'")
    assert result.reasons[1].startswith("subject 'Hello'")
    assert result.reasons[2].startswith("no attachment name matches")
    assert "'invoice.pdf'" in result.reasons[2]


def test_sender_and_subject_mismatch_without_attachments_gives_three_reasons():
    rule = Rule(1, "r", "*@supplier.ru", "прайс*")

    result = evaluate(rule, envelope(sender="a@b.c", subject="x", filenames=()))

    assert [r.split(" ")[0] for r in result.reasons] == ["sender", "subject", "message"]


def test_config_with_invalid_pattern_does_not_match_and_says_why():
    result = evaluate(Rule(1, "broken", subject_pattern="re:(("), envelope())

    assert not result.matched
    assert result.attachments == []
    assert len(result.reasons) == 1
    assert result.reasons[0].startswith("config has an invalid pattern: invalid regular expression")


# -- evaluate_all / report --------------------------------------------------------------------


def test_evaluate_all_gives_one_result_per_config_in_order():
    rules = [
        Rule(1, "Опт", filename_pattern="прайс_*.xlsx"),
        Rule(2, "Остатки", filename_pattern="остатки*.xlsx"),
    ]

    results = evaluate_all(rules, envelope())

    assert [(r.config_id, r.name, r.matched) for r in results] == [
        (1, "Опт", True),
        (2, "Остатки", False),
    ]


def test_report_is_json_serialisable_and_names_every_config():
    env = envelope(filenames=("прайс_июнь.xlsx", "фото.jpg"))
    rules = [
        Rule(7, "Опт", sender_pattern="*@supplier.ru", filename_pattern="прайс_*.xlsx"),
        Rule(8, "Другой поставщик", sender_pattern="*@other.ru"),
    ]

    data = report(env, evaluate_all(rules, env), warnings=["w1"])
    decoded = json.loads(json.dumps(data, ensure_ascii=False))

    assert decoded["sender"] == "prices@supplier.ru"
    assert decoded["subject"] == "Прайс-лист на 01.06"
    assert [a["filename"] for a in decoded["attachments"]] == ["прайс_июнь.xlsx", "фото.jpg"]
    assert decoded["attachments"][0]["key"] == "part2"
    assert [c["name"] for c in decoded["configs"]] == ["Опт", "Другой поставщик"]
    assert decoded["configs"][0]["matched"] is True
    assert decoded["configs"][0]["attachments"] == ["part2"]
    assert decoded["configs"][1]["matched"] is False
    assert english(decoded["configs"][1]["reasons"]) == [
        "sender 'prices@supplier.ru' does not match '*@other.ru'"
    ]
    assert decoded["warnings"] == ["w1"]


def test_report_without_configs_has_an_empty_config_list():
    data = report(envelope(), [])

    assert data["configs"] == []
    json.dumps(data)


# -- sender_auth ------------------------------------------------------------------------------

PASSED = SenderVerdict(
    authenticated=True,
    reason="dmarc=pass for supplier.ru (Authentication-Results from mx.buyer.example)",
    authserv_id="mx.buyer.example",
    from_domain="supplier.ru",
    dmarc="pass header.from=supplier.ru",
    aligned_domain="supplier.ru",
)
FAILED = SenderVerdict(
    authenticated=False,
    reason="dmarc=fail, dkim=none (Authentication-Results from mx.buyer.example)",
    authserv_id="mx.buyer.example",
    from_domain="supplier.ru",
    dmarc="fail",
)
UNCHECKED = SenderVerdict(
    authenticated=False,
    reason="no authserv-id is trusted (PRICEFEED_AUTHSERV_IDS is empty)",
    checked=False,
)


def with_verdict(verdict: SenderVerdict | None, **fields) -> Envelope:
    return dataclasses.replace(envelope(**fields), sender_auth=verdict)


def test_the_policies_are_the_configs_choices(settings):
    settings.PRICEFEED_AUTHSERV_IDS = []

    assert {c.value for c in PriceListConfig.SenderAuth} == {IGNORE, RECORD, REQUIRE}
    # A rule's default is a config's while no authserv-id is trusted.
    assert Rule(1, "r").sender_auth == PriceListConfig._meta.get_field("sender_auth").default()


def test_require_matches_an_authenticated_sender_and_says_so():
    result = evaluate(Rule(1, "r", "*@supplier.ru", sender_auth=REQUIRE), with_verdict(PASSED))

    assert result.matched
    assert result.attachments == ["part2"]
    assert result.reasons == ["matched 1 file(s)", f"sender authenticated: {PASSED.reason}"]


def test_require_does_not_match_an_unauthenticated_sender_and_says_why():
    result = evaluate(Rule(1, "r", "*@supplier.ru", sender_auth=REQUIRE), with_verdict(FAILED))

    assert not result.matched
    assert result.attachments == []
    assert result.reasons == [
        "sender not authenticated: dmarc=fail, dkim=none "
        "(Authentication-Results from mx.buyer.example)"
    ]


def test_require_gives_its_reason_beside_the_others():
    rule = Rule(1, "r", "*@supplier.ru", sender_auth=REQUIRE)

    result = evaluate(rule, with_verdict(FAILED, sender="x@other.ru"))

    assert [r.split(" ")[0:2] for r in result.reasons] == [
        ["sender", "'x@other.ru'"],
        ["sender", "not"],
    ]


def test_require_without_any_verdict_does_not_match():
    result = evaluate(Rule(1, "r", sender_auth=REQUIRE), with_verdict(None))

    assert not result.matched
    assert result.reasons == ["sender not authenticated: the message's sender was not checked"]


def test_require_with_no_trusted_authserv_id_does_not_match():
    result = evaluate(Rule(1, "r", sender_auth=REQUIRE), with_verdict(UNCHECKED))

    assert not result.matched
    assert result.reasons == [f"sender not authenticated: {UNCHECKED.reason}"]


@pytest.mark.parametrize(
    ("verdict", "note"),
    [
        (PASSED, f"sender authenticated: {PASSED.reason}"),
        (FAILED, f"sender not authenticated (recorded only): {FAILED.reason}"),
    ],
)
def test_record_matches_as_before_and_notes_the_verdict(verdict, note):
    result = evaluate(Rule(1, "r", "*@supplier.ru", sender_auth=RECORD), with_verdict(verdict))

    assert result.matched
    assert result.attachments == ["part2"]
    assert result.reasons == ["matched 1 file(s)", note]


def test_record_notes_nothing_when_nothing_was_checked():
    for verdict in (UNCHECKED, None):
        result = evaluate(Rule(1, "r", sender_auth=RECORD), with_verdict(verdict))

        assert result.matched
        assert result.reasons == ["matched 1 file(s)"]


def test_record_adds_no_note_to_a_config_that_does_not_match():
    rule = Rule(1, "r", "*@other.ru", sender_auth=RECORD)

    result = evaluate(rule, with_verdict(FAILED))

    assert result.reasons == ["sender 'prices@supplier.ru' does not match '*@other.ru'"]


@pytest.mark.parametrize("verdict", [PASSED, FAILED, UNCHECKED, None])
def test_ignore_matches_as_before_and_says_nothing(verdict):
    result = evaluate(Rule(1, "r", "*@supplier.ru", sender_auth=IGNORE), with_verdict(verdict))

    assert result.matched
    assert result.reasons == ["matched 1 file(s)"]


def test_one_message_matches_the_ignoring_config_and_not_the_requiring_one():
    rules = [
        Rule(1, "strict", sender_auth=REQUIRE),
        Rule(2, "lenient", sender_auth=IGNORE),
    ]

    results = evaluate_all(rules, with_verdict(FAILED))

    assert [(r.name, r.matched) for r in results] == [("strict", False), ("lenient", True)]


def test_report_carries_the_verdict():
    env = with_verdict(FAILED)

    data = json.loads(json.dumps(report(env, evaluate_all([Rule(1, "r")], env))))

    assert data["sender_auth"] == {
        "authenticated": False,
        "reason": as_json(FAILED.reason),  # a Text, said in the reader's language
        "checked": True,
        "authserv_id": "mx.buyer.example",
        "from_domain": "supplier.ru",
        "dmarc": "fail",
        "dkim": [],
        "spf": "",
        "aligned_domain": "",
    }


def test_report_without_a_verdict_has_no_sender_auth():
    assert "sender_auth" not in report(envelope(), [])


def test_decomposed_names_from_macos_match_a_pattern_typed_composed():
    # "й" in NFD is "и" and a combining breve: it looks the same and matches nothing.
    decomposed = unicodedata.normalize("NFD", "Прайс-лист май.xlsx")
    rule = Rule(1, "Май", filename_pattern="прайс*май*")
    attached = attachment("part2", decomposed)
    assert evaluate(rule, Envelope("a@b.ru", "Прайс", (attached,))).attachments == ["part2"]
    archive = dataclasses.replace(
        attachment("part3", "архив.zip"), members=(f"Прайсы/{decomposed}",)
    )
    result = evaluate(rule, Envelope("a@b.ru", "Прайс", (archive,)))
    assert result.attachments == [f"part3/Прайсы/{decomposed}"]
