"""The API's reference page (/api/docs/): the OpenAPI schema drf-spectacular generates,
shown in the admin's look and in the reader's language. The schema is generated for the
request, so the summaries and descriptions (gettext_lazy) come in the request's language;
the page's own words are the template's. Identifiers (paths, parameter and field names,
values) stay as the API spells them, in <code>."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, pgettext
from drf_spectacular.generators import SchemaGenerator

METHODS = ("get", "post", "put", "patch", "delete")


def type_name(schema: dict[str, Any]) -> str:
    """A schema's type in words ("целое число", "список: объект")."""
    if "$ref" in schema:
        return gettext("object")
    if "allOf" in schema or "oneOf" in schema:
        parts = schema.get("allOf") or schema.get("oneOf") or []
        return type_name(parts[0]) if parts else gettext("value")
    if "enum" in schema:
        return gettext("one of the values")
    kind = schema.get("type", "")
    if kind == "array":
        return gettext("list: %(items)s") % {"items": type_name(schema.get("items", {}))}
    names = {
        "string": gettext("text"),
        "integer": gettext("integer"),
        "number": gettext("number"),
        "boolean": gettext("yes or no"),
        "object": gettext("object"),
    }
    formats = {
        "date-time": gettext("date and time (ISO 8601)"),
        "date": gettext("date (ISO 8601)"),
        "decimal": gettext("decimal number, as text"),
        "uri": gettext("address (URL)"),
    }
    name = formats.get(schema.get("format", ""), names.get(kind, gettext("value")))
    return gettext("%(type)s or null") % {"type": name} if schema.get("nullable") else name


def values(schema: dict[str, Any], components: dict[str, Any]) -> list[str]:
    """The values an enumeration allows (none for another type)."""
    for part in [schema, *schema.get("allOf", []), *schema.get("oneOf", [])]:
        enum = resolved(part, components).get("enum")
        if enum:
            return [str(v) for v in enum if v not in ("", None)]
    return []


def with_code(text: str, names: set[str]) -> SafeString:
    """``text`` escaped, each of ``names`` (the operation's parameters, fields and
    values) in <code>: the identifiers a description mentions stay as the API spells
    them."""
    if not names:
        return SafeString(escape(text))
    longest_first = sorted(names, key=len, reverse=True)
    pattern = re.compile(r"\b({})\b".format("|".join(map(re.escape, longest_first))))
    parts = pattern.split(str(text))
    return mark_safe(
        "".join(
            format_html("<code>{}</code>", part) if i % 2 else escape(part)
            for i, part in enumerate(parts)
        )
    )


def resolved(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    return components.get(ref.rsplit("/", 1)[-1], {}) if ref else schema


def fields(schema: dict[str, Any], components: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields of a response body (of each row, for a page of rows)."""
    body = resolved(schema, components)
    rows = body.get("properties", {}).get("results")
    if rows and rows.get("type") == "array":
        body = resolved(rows.get("items", {}), components)
    return [
        {
            "name": name,
            "type": type_name(field),
            "values": values(field, components),
            "description": field.get("description", ""),
        }
        for name, field in body.get("properties", {}).items()
    ]


def operations(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Each operation of the schema as the page lists it."""
    components = schema.get("components", {}).get("schemas", {})
    places = {
        "query": pgettext("API parameter", "query"),
        "path": pgettext("API parameter", "path"),
    }
    found = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            ok = operation.get("responses", {}).get("200", {})
            body = ok.get("content", {}).get("application/json", {}).get("schema", {})
            parameters = [
                {
                    "name": p["name"],
                    "place": places.get(p.get("in", ""), p.get("in", "")),
                    "required": p.get("required", False),
                    "type": type_name(p.get("schema", {})),
                    "values": values(p.get("schema", {}), components),
                    "description": p.get("description", ""),
                }
                for p in operation.get("parameters", [])
            ]
            answer = fields(body, components)
            names = {row["name"] for row in parameters + answer} | {
                value for row in parameters + answer for value in row["values"]
            }
            for row in parameters + answer:
                row["description"] = with_code(row["description"], names)
            found.append(
                {
                    "id": operation.get("operationId", f"{method}-{path}"),
                    "method": method.upper(),
                    "path": path,
                    "summary": operation.get("summary", ""),
                    "description": with_code(operation.get("description", ""), names),
                    "parameters": parameters,
                    "fields": answer,
                }
            )
    return found


def reference(request: HttpRequest) -> HttpResponse:
    """The page, for a signed-in user (the sign-in page of the admin first)."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), "admin:login")
    schema = SchemaGenerator().get_schema(request=None, public=True)
    context = {
        **admin.site.each_context(request),
        "title": gettext("API reference"),
        "operations": operations(schema),
        "version": schema.get("info", {}).get("version", ""),
    }
    return TemplateResponse(request, "api/reference.html", context)
