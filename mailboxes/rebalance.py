"""Weighted lease balancing without a coordinator.

Every instance reads the same picture (live instances, mailbox weights, who holds what)
and decides only for itself:

* **Taking.** Free mailboxes are dealt heaviest first, each to the least loaded live
  instance (ties by instance id). Every instance deals the same cards the same way, so
  each takes just its own; a mailbox left free for ``grace`` seconds (its designated
  taker is gone or cannot listen to it) is taken by whoever sees it first, who then
  keeps it for a while rather than offer it again to a peer that does not take.
* **Shedding.** An instance holding more than its fair share plus ``tolerance`` lets go
  of its lightest lease whose weight is below the gap to the least loaded peer. A move
  is made only when it narrows that gap, so the sum of squared loads falls with every
  move and the process stops: no flapping, no matter how the rounds interleave.

Pure functions, so the rules are tested by simulation (tests/mailboxes/test_rebalance.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Snapshot:
    me: str
    live: frozenset[str]  # instances with a fresh heartbeat, not stopping (me included)
    weights: dict[int, int]  # enabled mailbox -> weight
    owners: dict[int, str]  # mailbox -> owner of its unexpired lease (absent = free)
    free_for: dict[int, float] = field(default_factory=dict)  # free mailbox -> seconds

    def held(self) -> dict[str, int]:
        held = dict.fromkeys(self.live, 0)
        for mailbox_id, owner in self.owners.items():
            if owner in held and mailbox_id in self.weights:
                held[owner] += self.weights[mailbox_id]
        return held

    def share(self) -> float:
        return sum(self.weights.values()) / max(1, len(self.live))


@dataclass(frozen=True)
class Plan:
    acquire: list[int]
    release: list[int]
    # Taken although dealt to someone else (who did not come within the grace): the
    # caller keeps these a while, so as not to hand them back to a peer that cannot
    # take them, again and again.
    fallback: list[int] = field(default_factory=list)


def plan(
    snapshot: Snapshot, *, tolerance: float, grace: float, keep: frozenset[int] = frozenset()
) -> Plan:
    me, weights = snapshot.me, snapshot.weights
    held = snapshot.held()
    live = sorted(held)

    def least_loaded(among: list[str]) -> str:
        return min(among, key=lambda instance: (held[instance], instance))

    acquire: list[int] = []
    fallback: list[int] = []
    free = [m for m in weights if m not in snapshot.owners]
    for mailbox_id in sorted(free, key=lambda m: (-weights[m], m)):
        taker = least_loaded(live)
        if taker != me and snapshot.free_for.get(mailbox_id, 0.0) >= grace:
            taker = me
            fallback.append(mailbox_id)
        held[taker] += weights[mailbox_id]
        if taker == me:
            acquire.append(mailbox_id)

    release: list[int] = []
    peers = [instance for instance in live if instance != me]
    mine = sorted(
        (m for m, owner in snapshot.owners.items() if owner == me and m in weights),
        key=lambda m: (weights[m], m),
    )
    share = snapshot.share()
    while peers and held[me] > share + tolerance:
        receiver = least_loaded(peers)
        gap = held[me] - held[receiver]
        candidate = next(
            (m for m in mine if m not in release and m not in keep and 0 < weights[m] < gap),
            None,
        )
        if candidate is None:
            break
        release.append(candidate)
        held[me] -= weights[candidate]
        held[receiver] += weights[candidate]
    return Plan(acquire=acquire, release=release, fallback=fallback)
