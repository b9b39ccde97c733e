"""A fake, stateful Kubernetes API server for contract tests and the simulator.

Public surface: `FakeApiServer` (HTTP on 127.0.0.1), its `Store` (seed and read objects from
Python), `Faults` (inject failures, delays, dropped watches; count requests), `ApiError`, the
resource table (`ResourceType`, `RESOURCES`), and the `AccessLog` of every request's
authorization attributes (`Access`, `request_access`) for RBAC tests.
"""

from .access import Access, AccessLog, request_access
from .errors import ApiError
from .faults import Faults, RequestInfo
from .resources import RESOURCES, ResourceTable, ResourceType
from .server import FakeApiServer
from .store import ListPage, Store
from .watch import Watcher, WatchEvent

__all__ = [
    "RESOURCES",
    "Access",
    "AccessLog",
    "ApiError",
    "FakeApiServer",
    "Faults",
    "ListPage",
    "RequestInfo",
    "ResourceTable",
    "ResourceType",
    "Store",
    "WatchEvent",
    "Watcher",
    "request_access",
]
