"""``{% console_dashboard %}``: the front page's tiles and charts, for the user of the
request it is rendered for (``templates/admin/index.html``)."""

from __future__ import annotations

from typing import Any

from django import template

from console.dashboard import dashboard_build

register = template.Library()


@register.inclusion_tag("console/dashboard.html", takes_context=True)
def console_dashboard(context: template.Context) -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not (user.is_active and user.is_staff):
        return {"dashboard": None}
    return {"dashboard": dashboard_build(user)}
