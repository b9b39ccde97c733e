"""What a load reader returns, the reader interface, and its one error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import msgspec

from descheduler.errors import ClusterUnreachableError
from descheduler.model import NodeUsage, PodUsage


class LoadSourceError(ClusterUnreachableError):
    """The load source could not be read (down, refused, not installed, answered nonsense).

    Nothing may be planned on it: a reader raises this rather than return partial or invented data.
    """


@dataclass(frozen=True, slots=True)
class LoadReading:
    """Node and pod usage as one read of a load source found it.

    A node or pod with no entry was not reported (missing), which the planner treats as "no
    metric"; the timestamps say how fresh each entry is (`age`, `stale_nodes`). `warnings` name the
    objects or series that were malformed and left out. `objects` holds, when asked for, the API
    objects the reading came from (or, for Prometheus, NodeMetrics/PodMetrics that decode to the
    same usage), each as its JSON text with apiVersion and kind set, for `snapshot save` to write
    as it is (150,000 PodMetrics as dicts would take ten times the memory).
    """

    source: str
    read_at: datetime
    node_usage: Mapping[str, NodeUsage] = field(default_factory=dict)
    pod_usage: Mapping[str, PodUsage] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    objects: tuple[msgspec.Raw, ...] = ()

    def age(self, node: str, now: datetime | None = None) -> float | None:
        """Seconds between the node's last report and `now` (default: when this was read); None if missing."""
        usage = self.node_usage.get(node)
        if usage is None:
            return None
        return ((now or self.read_at) - usage.timestamp).total_seconds()

    def stale_nodes(self, max_age_seconds: float, now: datetime | None = None) -> list[str]:
        """Nodes whose last report is older than `max_age_seconds`, by name."""
        moment = now or self.read_at
        return sorted(
            name for name, u in self.node_usage.items() if (moment - u.timestamp).total_seconds() > max_age_seconds
        )


class LoadReader(Protocol):
    """One load source. `read` raises LoadSourceError when the source cannot be read."""

    @property
    def source(self) -> str:
        """A short name for logs and reports: metrics.k8s.io, NodeMetric, prometheus."""

    def read(self, now: datetime, *, keep_objects: bool = False, usage: bool = True) -> LoadReading:
        """Usage as of `now`; with `keep_objects`, also the objects to write into a snapshot file.
        `usage=False` (with `keep_objects`, for `snapshot save`): a reader may leave out usage it would
        have to build only to be thrown away; the objects and the warnings are the same."""

    def close(self) -> None:
        """Release connections."""
