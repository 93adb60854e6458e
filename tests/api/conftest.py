"""Users, tokens and clients of the API tests."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from api.tokens import token_create
from tests.products.conftest import world  # noqa: F401  (our products with offers)

EVERYTHING = [
    "view_pricelistconfig",
    "view_priceimport",
    "view_priceitem",
    "view_catalogueentry",
    "view_product",
    "view_supplierlink",
]


def user_with(username: str, codenames: list[str]) -> User:
    user = User.objects.create_user(username, password=None)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # no cached permissions


def token_client(user: User) -> tuple[APIClient, str]:
    _, key = token_create(user=user, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client, key


@pytest.fixture
def reader(db) -> User:
    """A program's user that may view everything the API shows."""
    return user_with("erp", EVERYTHING)


@pytest.fixture
def api(reader) -> APIClient:
    """A client signed in with a token of ``reader``."""
    return token_client(reader)[0]
