"""Who may read the API: a token or the admin's session, the user's view permissions,
and nothing but reading (api.authentication, api.permissions, api.tokens)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import ApiToken
from api.tokens import LAST_USED_EVERY, key_hash, token_create, token_touch

from .conftest import EVERYTHING, token_client, user_with


def test_without_credentials_the_api_answers_401_and_names_the_token_scheme(db):
    response = APIClient().get("/api/imports/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")


def test_an_unknown_key_is_refused(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token pf_not-a-key")
    assert client.get("/api/imports/").status_code == 401


@pytest.mark.parametrize("scheme", ["Token", "Bearer", "bearer"])
def test_a_token_signs_in_with_either_scheme(reader, scheme):
    _, key = token_client(reader)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {key}")
    response = client.get("/api/imports/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


def test_a_token_without_the_catalogues_view_permission_reads_imports_not_the_catalogue(
    config,
):
    user = user_with("imports-only", ["view_priceimport"])
    client, _ = token_client(user)
    assert client.get("/api/imports/").status_code == 200
    assert client.get(f"/api/configs/{config.pk}/catalogue/").status_code == 403
    assert client.get("/api/configs/").status_code == 403


def test_the_admin_session_reads_by_the_same_permissions(config):
    person = user_with("buyer", ["view_priceimport"])
    client = APIClient()
    client.force_login(person)
    assert client.get("/api/imports/").status_code == 200
    assert client.get(f"/api/configs/{config.pk}/catalogue/").status_code == 403


def test_a_person_in_a_session_gets_the_browsable_api_and_a_token_json(reader):
    person = APIClient()
    person.force_login(reader)
    page = person.get("/api/imports/", HTTP_ACCEPT="text/html")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    program, _ = token_client(reader)
    response = program.get("/api/imports/", HTTP_ACCEPT="text/html")
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_api_only_reads(api, config, method):
    for url in (
        "/api/imports/",
        f"/api/configs/{config.pk}/",
        f"/api/configs/{config.pk}/catalogue/",
    ):
        response = getattr(api, method)(url, {"name": "x"}, format="json")
        assert response.status_code == 405, (url, response.status_code)


def test_the_key_is_stored_only_as_its_hash(reader):
    _, key = token_client(reader)
    token = ApiToken.objects.get(user=reader)
    assert token.key_hash == key_hash(key) and key.startswith(token.prefix)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")
        stored = [str(value) for row in cursor.fetchall() for value in row]
    assert not any(key in value for value in stored)


def test_a_revoked_token_is_refused(reader):
    client, _ = token_client(reader)
    ApiToken.objects.update(revoked_at=timezone.now())
    response = client.get("/api/imports/")
    assert response.status_code == 401
    assert "revoked or expired" in response.json()["detail"]


def test_an_expired_token_is_refused_and_one_expiring_later_is_not(reader):
    client, _ = token_client(reader)
    ApiToken.objects.update(expires_at=timezone.now() + timedelta(hours=1))
    assert client.get("/api/imports/").status_code == 200
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/imports/").status_code == 401


def test_an_inactive_users_token_is_refused(reader):
    client, _ = token_client(reader)
    User.objects.filter(pk=reader.pk).update(is_active=False)
    assert client.get("/api/imports/").status_code == 401


def test_last_use_is_recorded_at_most_once_a_minute(reader):
    client, _ = token_client(reader)
    assert client.get("/api/imports/").status_code == 200
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    assert client.get("/api/imports/").status_code == 200
    assert ApiToken.objects.get().last_used_at == first
    token = ApiToken.objects.get()
    later = first + LAST_USED_EVERY + timedelta(seconds=1)
    token_touch(token, now=later)
    assert ApiToken.objects.get().last_used_at == later


def test_api_token_command_prints_a_working_key_once(reader):
    out = StringIO()
    call_command("api_token", "erp", "--name", "1C", stdout=out)
    key = out.getvalue().strip()
    token = ApiToken.objects.get(name="1C")
    assert token.user == reader and token.key_hash == key_hash(key)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/api/imports/").status_code == 200


def test_api_token_command_refuses_an_unknown_user(db):
    with pytest.raises(CommandError, match="no user"):
        call_command("api_token", "nobody")


@pytest.mark.usefixtures("fast_password_hashing")
def test_the_admin_shows_a_new_tokens_key_once_and_makes_it_for_its_user(db):
    person = user_with("ops", ["add_apitoken", "view_apitoken", "change_apitoken"])
    person.is_staff = True
    person.save()
    other = user_with("boss", EVERYTHING)
    client = APIClient()
    client.force_login(person)
    add = reverse("admin:api_apitoken_add")
    form = {"name": "скрипт", "expires_at_0": "", "expires_at_1": ""}
    # Not a superuser: a token of another user (acting as them) is not offered.
    refused = client.post(add, {**form, "user": other.pk})
    assert refused.status_code == 200 and not ApiToken.objects.exists()
    response = client.post(add, {**form, "user": person.pk})
    # The key is on the page that answers the form, in no cookie, cached nowhere.
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    assert not response.cookies.get("messages")
    token = ApiToken.objects.get(name="скрипт")
    assert token.user == person
    key = response.context["key"]
    assert key_hash(key) == token.key_hash
    assert f'value="{key}"' in response.content.decode()
    page = client.get(reverse("admin:api_apitoken_change", args=[token.pk]))
    assert key not in page.content.decode()
    assert key not in "".join(str(c) for c in client.cookies.values())


def test_admin_revoke_action_refuses_the_token_from_then_on(reader):
    client, _ = token_client(reader)
    admin_user = User.objects.create_superuser("root", password=None)
    browser = APIClient()
    browser.force_login(admin_user)
    token = ApiToken.objects.get(user=reader)
    listed = browser.get(reverse("admin:api_apitoken_changelist"), HTTP_ACCEPT_LANGUAGE="ru")
    assert token.prefix in listed.content.decode() and "действует" in listed.content.decode()
    browser.post(
        reverse("admin:api_apitoken_changelist"),
        {"action": "revoke", "_selected_action": [token.pk]},
    )
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert client.get("/api/imports/").status_code == 401


def test_a_rate_limits_each_token_on_its_own(reader, monkeypatch):
    from django.core.cache import cache
    from rest_framework.views import APIView

    from api.throttling import TokenRateThrottle

    monkeypatch.setattr(APIView, "throttle_classes", [TokenRateThrottle])
    monkeypatch.setattr(TokenRateThrottle, "THROTTLE_RATES", {"api": "2/minute"})
    cache.clear()
    first, _ = token_client(reader)
    second, _ = token_client(reader)
    assert [first.get("/api/imports/").status_code for _ in range(3)] == [200, 200, 429]
    assert second.get("/api/imports/").status_code == 200
    cache.clear()


def token_owner(client: APIClient) -> User:
    """A staff user who may make and change his own tokens (the operator role's
    permissions on tokens), logged in to ``client``."""
    person = user_with("ops", ["add_apitoken", "view_apitoken", "change_apitoken"])
    person.is_staff = True
    person.save()
    client.force_login(person)
    return person


def change_form(token: ApiToken, **fields) -> dict:
    """The token's change form as the page posts it, with ``fields`` changed (a crafted
    post may add any field, even one the page does not show)."""
    local = timezone.localtime(token.expires_at) if token.expires_at else None
    form = {
        "name": token.name,
        "expires_at_0": local.strftime("%Y-%m-%d") if local else "",
        "expires_at_1": local.strftime("%H:%M:%S") if local else "",
    }
    return {**form, **fields}


def expiry_fields(moment) -> dict:
    local = timezone.localtime(moment)
    return {"expires_at_0": local.strftime("%Y-%m-%d"), "expires_at_1": local.strftime("%H:%M:%S")}


@pytest.mark.usefixtures("fast_password_hashing")
def test_a_tokens_owner_cannot_clear_its_revocation(db):
    client = APIClient()
    person = token_owner(client)
    token, key = token_create(user=person, name="1C")
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())  # a superuser's
    token.refresh_from_db()

    response = client.post(
        reverse("admin:api_apitoken_change", args=[token.pk]),
        change_form(token, revoked_at_0="", revoked_at_1="", name="renamed"),
    )

    assert response.status_code == 302  # saved: the name, not the revocation
    after = ApiToken.objects.get(pk=token.pk)
    assert after.name == "renamed" and after.revoked_at == token.revoked_at
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/imports/").status_code == 401


@pytest.mark.usefixtures("fast_password_hashing")
def test_a_tokens_owner_may_shorten_its_expiry_but_not_extend_or_clear_it(db):
    client = APIClient()
    person = token_owner(client)
    expires = (timezone.now() + timedelta(days=30)).replace(microsecond=0)
    token, _ = token_create(user=person, name="1C", expires_at=expires)
    url = reverse("admin:api_apitoken_change", args=[token.pk])

    for later in (
        {"expires_at_0": "", "expires_at_1": ""},
        expiry_fields(expires + timedelta(days=1)),
    ):
        refused = client.post(url, change_form(token, **later))
        assert refused.status_code == 200
        assert "expires_at" in refused.context["adminform"].form.errors
        assert ApiToken.objects.get(pk=token.pk).expires_at == expires

    sooner = expires - timedelta(days=10)
    assert client.post(url, change_form(token, **expiry_fields(sooner))).status_code == 302
    assert ApiToken.objects.get(pk=token.pk).expires_at == sooner


@pytest.mark.usefixtures("fast_password_hashing")
def test_a_superuser_may_extend_a_tokens_expiry(db):
    root = User.objects.create_superuser("root", password=None)
    client = APIClient()
    client.force_login(root)
    expires = (timezone.now() + timedelta(days=1)).replace(microsecond=0)
    token, _ = token_create(user=root, name="1C", expires_at=expires)
    url = reverse("admin:api_apitoken_change", args=[token.pk])

    assert client.post(url, change_form(token, expires_at_0="", expires_at_1="")).status_code == 302
    assert ApiToken.objects.get(pk=token.pk).expires_at is None
