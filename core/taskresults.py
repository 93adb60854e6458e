"""django-q2's successful task results, kept to the newest PRICEFEED_Q_SAVE_LIMIT by a
sweep (registered in mailboxes.apps, run by listen_mail's supervisor).

django-q2's monitor can prune them itself (``Q_CLUSTER["save_limit"]``), but it does so
after every task by locking every result kept (``SELECT … FOR UPDATE`` of up to
save_limit rows, then deleting the oldest): at 1000 that held a two-worker cluster to
~40 tasks/s where it otherwise ran ~150. So the monitor keeps them all
(config/settings.py) and this sweep deletes what is beyond the newest ones, once per
sweep interval.
"""

from __future__ import annotations

from django.db.models import Q


def successes_prune(keep: int | None = None) -> int:
    """Deletes the successful task results beyond the newest ``keep`` (default
    PRICEFEED_Q_SAVE_LIMIT; 0 or less: none are deleted); returns how many it deleted.
    Failures are never deleted here."""
    from django.conf import settings
    from django_q.models import Success

    if keep is None:
        keep = settings.PRICEFEED_Q_SAVE_LIMIT
    if keep <= 0:
        return 0
    newest = Success.objects.order_by("-stopped", "-pk").values_list("stopped", "pk")
    boundary = newest[keep : keep + 1].first()
    if boundary is None:
        return 0
    stopped, pk = boundary
    older = Q(stopped__lt=stopped) | Q(stopped=stopped, pk__lte=pk)
    deleted, _ = Success.objects.filter(older).delete()
    return deleted
