"""The template filters of core/grammar.py, for the admin's templates (registered as the
library ``grammar`` in settings: core is no app of its own)."""

from __future__ import annotations

from django import template
from django.db.models.options import Options

from core import grammar

register = template.Library()


@register.filter
def counted(number: int, opts: Options) -> str:
    """``{{ cl.result_count|counted:cl.opts }}``: "27 входящих сообщений"."""
    return grammar.counted(number, opts)


@register.filter
def accusative(opts: Options) -> str:
    """``{{ cl.opts|accusative }}``: "подписку", for "Добавить подписку"."""
    return grammar.accusative(opts)
