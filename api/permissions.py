"""The API reads only, and only what the user may view in the admin."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from rest_framework import exceptions, permissions
from rest_framework.request import Request


class ViewPermission(permissions.BasePermission):
    """A signed-in user with the view permission (``<app>.view_<model>``) on the view's
    ``model``; GET, HEAD and OPTIONS only (any other method: 405, for anyone signed in).

    Django REST framework's DjangoModelPermissions lets every signed-in user read; here
    reading needs the same permission as the admin's list does.
    """

    def has_permission(self, request: Request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if request.method not in permissions.SAFE_METHODS:
            raise exceptions.MethodNotAllowed(request.method or "")
        model = getattr(view, "model", None)
        if model is None:
            raise ImproperlyConfigured(f"{type(view).__name__} names no model to check")
        meta = model._meta
        return user.has_perm(f"{meta.app_label}.view_{meta.model_name}")
