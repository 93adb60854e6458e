"""How the OpenAPI schema describes the token sign-in (imported by ApiConfig.ready)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class TokenScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "An API token made in the admin or with manage.py api_token: "
                "Authorization: Bearer <key> (or Token <key>)."
            ),
        }
