"""django-q2's admin where it runs functions (schedules, resubmitting a task, a queued
task's lock) answers to superusers only, whatever the groups hold."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.urls import reverse
from django.utils import timezone
from django_q.models import Failure, OrmQ, Schedule, Success, Task
from django_q.tasks import async_task

from access.roles import ROLES

from .support import offered, run_action

pytestmark = pytest.mark.django_db

SCHEDULES = "admin:django_q_schedule_changelist"
FAILURES = "admin:django_q_failure_changelist"
SUCCESSES = "admin:django_q_success_changelist"


@pytest.fixture
def everyone(client):
    """A staff user in every role's group, also holding every permission on schedules."""
    user = User.objects.create_user("everyone", is_staff=True)
    user.groups.add(*Group.objects.filter(name__in=ROLES))
    user.user_permissions.add(*Permission.objects.filter(content_type__model="schedule"))
    client.force_login(user)
    return client


@pytest.fixture
def superuser(client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", None))
    return client


@pytest.fixture
def schedule(db) -> Schedule:
    return Schedule.objects.create(name="nightly", func="math.floor", args="1.5")


def finished_task(*, success: bool) -> Task:
    now = timezone.now()
    return Task.objects.create(
        id=uuid.uuid4().hex,
        name=f"task-{success}",
        func="math.floor",
        args=(1.5,),
        kwargs={},
        started=now,
        stopped=now,
        success=success,
    )


def test_schedules_are_refused_to_staff_holding_every_role_and_schedule_permission(
    everyone, schedule
):
    assert everyone.get(reverse(SCHEDULES)).status_code == 403
    assert everyone.get(reverse("admin:django_q_schedule_add")).status_code == 403
    change = reverse("admin:django_q_schedule_change", args=[schedule.pk])
    assert everyone.get(change).status_code == 403
    response = everyone.post(change, {"name": "nightly", "func": "os.system", "args": "'id'"})
    assert response.status_code == 403
    assert Schedule.objects.get(pk=schedule.pk).func == "math.floor"
    assert reverse(SCHEDULES) not in everyone.get(reverse("admin:index")).content.decode()


def test_schedules_are_a_superusers(superuser, schedule):
    assert superuser.get(reverse(SCHEDULES)).status_code == 200
    assert superuser.get(reverse("admin:django_q_schedule_add")).status_code == 200
    assert reverse(SCHEDULES) in superuser.get(reverse("admin:index")).content.decode()


def test_task_results_are_shown_to_staff_but_resubmit_is_not_offered(everyone):
    failure = finished_task(success=False)
    finished_task(success=True)

    assert offered(everyone, reverse(FAILURES)) == set()
    assert offered(everyone, reverse(SUCCESSES)) == set()
    run_action(everyone, reverse(FAILURES), "resubmit_task", failure.pk)

    assert Failure.objects.filter(pk=failure.pk).exists()
    assert not OrmQ.objects.exists()


def test_a_superuser_resubmits_a_failed_task(superuser):
    failure = finished_task(success=False)
    success = finished_task(success=True)
    assert "resubmit_task" in offered(superuser, reverse(FAILURES))
    assert "resubmit_task" in offered(superuser, reverse(SUCCESSES))

    run_action(superuser, reverse(FAILURES), "resubmit_task", failure.pk)
    run_action(superuser, reverse(SUCCESSES), "resubmit_task", success.pk)

    assert not Failure.objects.filter(pk=failure.pk).exists()  # django-q2 drops it
    assert Success.objects.filter(pk=success.pk).exists()
    assert sorted(q.func() for q in OrmQ.objects.all()) == ["math.floor", "math.floor"]


def test_a_queued_task_is_shown_to_staff_but_only_a_superuser_changes_its_lock(client, everyone):
    async_task("math.floor", 1.5)
    queued = OrmQ.objects.get()
    change = reverse("admin:django_q_ormq_change", args=[queued.pk])
    form = {"key": queued.key, "lock_0": "2000-01-01", "lock_1": "00:00:00"}

    assert everyone.get(change).status_code == 200
    assert everyone.post(change, form).status_code == 403
    assert OrmQ.objects.get().lock == queued.lock

    client.force_login(User.objects.create_superuser("root", "root@example.com", None))
    assert client.post(change, form).status_code == 302
    assert OrmQ.objects.get().lock.year == 2000
