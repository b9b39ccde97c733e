"""The controller's SnapshotSource: the list-watch cache plus the policy's load reader."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

import structlog

from descheduler import metrics
from descheduler.controller.cycle import SourceError
from descheduler.kube import ClusterCache, KubeClient
from descheduler.loadsource import LoadReader, LoadSourceError, reader_for
from descheduler.policy import LoadSource, Policy
from descheduler.snapshot import Snapshot

log = structlog.get_logger(__name__)


class ClusterSource:
    """Snapshots from the cache and one load reading each; the reader follows the policy's
    `loadSource` (a reload that changes it swaps the reader before the next snapshot)."""

    def __init__(self, client: KubeClient, cache: ClusterCache) -> None:
        self.client = client
        self.cache = cache
        self._lock = threading.Lock()
        self._reader: tuple[LoadSource, LoadReader] | None = None

    def not_ready(self) -> str | None:
        return self.cache.not_ready()

    def _reader_for(self, source: LoadSource) -> LoadReader:
        with self._lock:
            if self._reader is None or self._reader[0] != source:
                if self._reader is not None:
                    self._reader[1].close()
                    log.info("load source changed", source=source.type)
                self._reader = (source, reader_for(source, self.client, self.cache))
                metrics.LOAD_SOURCE_ERRORS.labels(source.type)  # at 0, so the first error shows as an increase
            return self._reader[1]

    def snapshot(self, now: datetime, policy: Policy) -> Snapshot:
        try:
            reading = self._reader_for(policy.load_source).read(now)
        except LoadSourceError as err:
            metrics.LOAD_SOURCE_ERRORS.labels(policy.load_source.type).inc()
            raise SourceError(f"load source {policy.load_source.type}: {err}") from None
        for warning in reading.warnings:
            log.warning("load source", warning=warning)
        return self.cache.snapshot(now, reading)

    def snapshot_now(self, clock: Callable[[], datetime], policy: Callable[[], Policy]) -> Callable[[], Snapshot]:
        """A no-argument snapshot function (for the migration controller's feasibility checks)."""
        return lambda: self.snapshot(clock(), policy())

    def close(self) -> None:
        with self._lock:
            if self._reader is not None:
                self._reader[1].close()
                self._reader = None
