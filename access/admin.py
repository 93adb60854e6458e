"""django-q2's admin, where it runs functions, for superusers only; the group and user
pages with permissions and roles named in the reader's language (permissions.py).

A schedule names any importable function with any arguments and the workers run it;
*Resubmit* runs a finished task's function again; editing a queued task's lock hands it
to a worker again. So these are superusers' whatever permissions a group holds; the
rest of django-q2's pages (results, the queue) answer to the ordinary view permissions.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import admin as auth_admin
from django.contrib.auth.models import Group, User
from django.db.models import Model
from django_q import admin as q_admin
from django_q.models import Failure, OrmQ, Schedule, Success

from core.adminutils import GrammarAdminMixin, ReadableQueryMixin

from . import permissions


def superuser(request) -> bool:
    return request.user.is_active and request.user.is_superuser


class ScheduleAdmin(ReadableQueryMixin, GrammarAdminMixin, q_admin.ScheduleAdmin):
    def has_module_permission(self, request) -> bool:
        return superuser(request)

    def has_view_permission(self, request, obj=None) -> bool:
        return superuser(request)

    def has_add_permission(self, request) -> bool:
        return superuser(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return superuser(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        return superuser(request)


@admin.action(description=q_admin.resubmit_task.short_description, permissions=["superuser"])
def resubmit_task(modeladmin, request, queryset) -> None:
    q_admin.resubmit_task(modeladmin, request, queryset)


class TaskAdmin(ReadableQueryMixin, GrammarAdminMixin, q_admin.TaskAdmin):
    actions = [resubmit_task]

    def has_superuser_permission(self, request) -> bool:
        return superuser(request)


class FailAdmin(ReadableQueryMixin, GrammarAdminMixin, q_admin.FailAdmin):
    actions = [resubmit_task]

    def has_superuser_permission(self, request) -> bool:
        return superuser(request)


class QueueAdmin(ReadableQueryMixin, GrammarAdminMixin, q_admin.QueueAdmin):
    def has_change_permission(self, request, obj=None) -> bool:
        return superuser(request)


def replace(model: type[Model], model_admin: type[admin.ModelAdmin]) -> None:
    # django-q2 registers the queue only for its ORM broker.
    if admin.site.is_registered(model):
        admin.site.unregister(model)
        admin.site.register(model, model_admin)


# Apps whose permissions nobody is given: django-axes keeps its lockouts out of the
# admin (config/settings.py AXES_ENABLE_ADMIN), so its permissions would grant nothing.
UNGRANTED_APPS = ("axes",)


def named(field, db_field):
    """The permission and group choices of a group's or a user's form named in the
    reader's language (Django shows the stored English names)."""
    if field is not None and db_field.name in ("permissions", "user_permissions"):
        field.queryset = field.queryset.exclude(content_type__app_label__in=UNGRANTED_APPS)
        field.label_from_instance = permissions.permission_label
    elif field is not None and db_field.name == "groups":
        field.label_from_instance = permissions.role_name
    return field


class RoleFilter(admin.RelatedFieldListFilter):
    """The users' filter by group, the roles named in the reader's language."""

    def field_choices(self, field, request, model_admin):
        return [
            (group.pk, permissions.role_name(group)) for group in Group.objects.order_by("name")
        ]


class GroupAdmin(ReadableQueryMixin, GrammarAdminMixin, auth_admin.GroupAdmin):
    """Groups, the roles among them named in the reader's language: in the list, the
    page's title and its breadcrumbs (templates/admin/auth/group/change_form.html)."""

    list_display = ["role"]

    def formfield_for_manytomany(self, db_field, request=None, **kwargs):
        return named(super().formfield_for_manytomany(db_field, request, **kwargs), db_field)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        group = self.get_object(request, object_id)
        shown = {"subtitle": permissions.role_name(group)} if group is not None else {}
        return super().change_view(request, object_id, form_url, {**shown, **(extra_context or {})})

    @admin.display(description=Group._meta.get_field("name").verbose_name, ordering="name")
    def role(self, obj: Group) -> str:
        return permissions.role_name(obj)


class UserAdmin(ReadableQueryMixin, GrammarAdminMixin, auth_admin.UserAdmin):
    list_filter = ["is_staff", "is_superuser", "is_active", ("groups", RoleFilter)]

    def formfield_for_manytomany(self, db_field, request=None, **kwargs):
        return named(super().formfield_for_manytomany(db_field, request, **kwargs), db_field)


replace(Group, GroupAdmin)
replace(User, UserAdmin)
replace(Schedule, ScheduleAdmin)
replace(Success, TaskAdmin)
replace(Failure, FailAdmin)
replace(OrmQ, QueueAdmin)
