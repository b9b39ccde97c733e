"""The pod `schedulerName`s whose kube-scheduler profile calls this extender (`--scheduler-name`).

The extender writes them on the scheduler Lease (`ANNOTATION_SCHEDULER_NAMES`): the migration
controller gives a move a Reservation only when its pod's schedulerName is listed. A profile that
calls the extender but is not listed gets its pods moved without one, so the first pod of such a
profile seen in a request is worth a warning.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Final

from descheduler.migration.objects import DEFAULT_SCHEDULER_NAME
from descheduler.model import Pod

log = logging.getLogger(__name__)

# The profile deploy/overlays/with-scheduler's kube-scheduler runs with the extender.
LOAD_AWARE_SCHEDULER: Final = "load-aware-scheduler"


def pod_scheduler_name(pod: Pod) -> str:
    """The pod's schedulerName as the API server sets it (none: the default scheduler's)."""
    return pod.scheduler_name or DEFAULT_SCHEDULER_NAME


def annotation_value(names: Iterable[str]) -> str:
    """The annotation's text: the names sorted and comma-joined, each once, empty ones dropped."""
    return ",".join(sorted({name.strip() for name in names} - {""}))


class SchedulerNames:
    """The names served; `check` warns once per unlisted name a request brings."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(name.strip() for name in names) - {""}
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    @property
    def annotation(self) -> str:
        return annotation_value(self.names)

    def check(self, pod: Pod) -> bool:
        """True when the pod's schedulerName is listed; else False, with a warning the first time for its name."""
        name = pod_scheduler_name(pod)
        if name in self.names:
            return True
        with self._lock:
            if name in self._warned:
                return False
            self._warned.add(name)
        log.warning(
            "extender: pod %s has schedulerName %r: that scheduler profile calls the extender, but --scheduler-name "
            "does not list it (only %s), so the Lease does not announce it and moves of its pods make no "
            "Reservation (their replacements may land anywhere); add --scheduler-name %s to the extender's "
            "arguments, or remove the extender from that profile",
            pod.key,
            name,
            self.annotation or "none",
            name,
        )
        return False
