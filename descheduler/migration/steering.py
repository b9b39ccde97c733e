"""Steering a stock scheduler's replacements off the source node (migration.md §3, issue 42).

A move without a Reservation leaves kube-scheduler free to score the replacement by requests, and
so to put it back on the hot node it just left. While a node has such moves in flight it carries
our taint (`TAINT_MOVING_OFF`, PreferNoSchedule): TaintToleration then scores every other node
higher, without making the node unschedulable. The taint goes when those moves end; `reconcile`
also removes any a crashed controller left behind.

The taint rules are pure functions over raw nodes; `SourceSteering` applies them by
read-modify-write (a PUT carrying the resourceVersion read; a 409 means read again and redo).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from typing import Any, Final

import structlog

from descheduler import metrics
from descheduler.migration.api import ApiFailure, MigrationApi
from descheduler.migration.objects import TAINT_MOVING_OFF

log = structlog.get_logger(__name__)

EFFECT: Final = "PreferNoSchedule"
# As client-go's retry.DefaultRetry (5 steps): a node is rewritten by its kubelet and controllers too.
CONFLICT_ATTEMPTS: Final = 5

Taints = list[dict[str, Any]]
# The taints wanted from the taints read; None when they are already as wanted.
TaintChange = Callable[[Taints], Taints | None]


def is_moving_off(taint: Mapping[str, Any]) -> bool:
    """Our taint: the key and the effect (the API allows one taint per key and effect)."""
    return taint.get("key") == TAINT_MOVING_OFF and taint.get("effect") == EFFECT


def taints_of(node: Mapping[str, Any]) -> Taints:
    return [t for t in (node.get("spec") or {}).get("taints") or () if isinstance(t, dict)]


def carries_moving_off(node: Mapping[str, Any]) -> bool:
    return any(is_moving_off(t) for t in taints_of(node))


def with_moving_off(taints: Taints) -> Taints | None:
    """The taints plus ours at the end; None when ours is there already."""
    if any(is_moving_off(t) for t in taints):
        return None
    # No value (the API returns an empty value as absent) and no timeAdded: the API documents it as
    # written only for NoExecute taints, and kubectl writes none for PreferNoSchedule.
    return [*taints, {"key": TAINT_MOVING_OFF, "effect": EFFECT}]


def without_moving_off(taints: Taints) -> Taints | None:
    """The taints but ours, in their order; None when ours is not there."""
    kept = [t for t in taints if not is_moving_off(t)]
    return None if len(kept) == len(taints) else kept


def leftovers(nodes: Iterable[Mapping[str, Any]], in_flight: Set[str]) -> list[Mapping[str, Any]]:
    """The nodes that carry our taint although no move without a Reservation is in flight from them."""
    return [n for n in nodes if carries_moving_off(n) and n["metadata"]["name"] not in in_flight]


class SourceSteering:
    """Puts our taint on a source node and takes it off again; raises ApiFailure, except that a
    node that is gone is left alone and a conflict is retried (`attempts` writes in all)."""

    def __init__(self, api: MigrationApi, attempts: int = CONFLICT_ATTEMPTS) -> None:
        self.api = api
        self.attempts = attempts

    def taint(self, node: str) -> None:
        """Taint the node (once: a node that carries our taint already is not written)."""
        if self._rewrite(node, self.api.get_node(node), with_moving_off):
            log.info("tainted the source node so replacements go elsewhere", node=node, taint=TAINT_MOVING_OFF)
            metrics.SOURCE_TAINTS.labels("added").inc()

    def untaint(self, node: str) -> None:
        """Take our taint off the node (nothing is written when it carries none)."""
        if self._rewrite(node, self.api.get_node(node), without_moving_off):
            log.info("removed the moving-off taint: no move without a Reservation in flight", node=node)
            metrics.SOURCE_TAINTS.labels("removed").inc()

    def reconcile(self, in_flight: Set[str]) -> None:
        """Untaint every node that carries our taint and is not in `in_flight` (the nodes with moves
        without a Reservation in flight): one list, then one write per node. Every such node is
        tried; the first failure is raised after."""
        failure: ApiFailure | None = None
        for node in leftovers(self.api.list_nodes(), in_flight):
            name = str(node["metadata"]["name"])
            try:
                removed = self._rewrite(name, dict(node), without_moving_off)
            except ApiFailure as err:
                log.warning("could not remove the moving-off taint; will retry", node=name, error=str(err))
                failure = failure or err
                continue
            if removed:
                log.info("removed the moving-off taint: no move without a Reservation in flight", node=name)
                metrics.SOURCE_TAINTS.labels("removed").inc()
        if failure is not None:
            raise failure

    def _rewrite(self, name: str, node: dict[str, Any] | None, change: TaintChange) -> bool:
        """Write the node's taints as `change` wants them, starting from `node` as read; False when
        there was nothing to write or the node is gone."""
        attempt = 1
        while True:
            if node is None:
                log.debug("node gone; no taint to change", node=name)
                return False
            wanted = change(taints_of(node))
            if wanted is None:
                return False
            spec = node["spec"] = dict(node.get("spec") or {})
            if wanted:
                spec["taints"] = wanted
            else:
                spec.pop("taints", None)
            try:
                self.api.replace_node(node)
            except ApiFailure as failure:
                if failure.not_found:
                    log.debug("node gone; no taint to change", node=name)
                    return False
                if not failure.conflict or attempt >= self.attempts:
                    raise
                log.debug("node changed since it was read; reading it again", node=name, attempt=attempt)
                attempt += 1
                node = self.api.get_node(name)
                continue
            return True
