"""A library's error inside a failed file's reason is said in our words, in the
reader's language: the csv module's, which a damaged text table gives."""

from __future__ import annotations

import csv

import pytest
from django.utils import translation

from core.texts import translated
from pricefeed.parsing import messages as m
from pricefeed.parsing.library_errors import csv_described


def csv_error(data: str) -> csv.Error:
    """The error the csv module itself raises reading ``data`` (strict, as a dialect
    that refuses what it cannot read)."""
    with pytest.raises(csv.Error) as raised:
        list(csv.reader(data.splitlines(keepends=True), delimiter=";", strict=True))
    return raised.value


@pytest.mark.parametrize(
    ("data", "template"),
    [
        ('a;"b"c\n', m.CSV_AFTER_QUOTE),
        ('a;"b\n', m.CSV_CUT_SHORT),
    ],
)
def test_the_csv_modules_errors_are_our_sentences(data, template):
    assert csv_described(csv_error(data)).template == template


def test_a_field_past_the_limit_keeps_the_limit_and_other_errors_are_general():
    too_large = csv_described(csv.Error("field larger than field limit (131072)"))
    assert (too_large.template, too_large.params) == (m.CSV_FIELD_TOO_LARGE, {"limit": "131072"})
    assert csv_described(csv.Error("line contains NUL")).template == m.CSV_NUL
    assert csv_described(csv.Error("something new")).template == m.STRUCTURE_UNREADABLE


def test_the_sentence_is_russian_with_no_english_of_the_library():
    reason = csv_described(csv_error('a;"b\n'))
    with translation.override("ru"):
        shown = translated(reason.as_json())
    assert shown == "текст обрывается внутри поля в кавычках"
