"""Access log: the authorization attributes of every request, as the real API server derives them.

The real kube-apiserver turns each URL into request attributes (verb, API group, resource,
subresource, namespace, name) before it asks RBAC; this module does the same, following
k8s.io/apiserver/pkg/endpoints/request/requestinfo.go, so a test can run real code against the
fake server and compare what it touched with a ClusterRole. It parses the URL on its own rather
than using the fake's routing, so a request for a resource the fake does not serve is still
recorded with the attributes RBAC would see.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

# Method → verb before the list/watch/deletecollection refinement (requestinfo.go).
_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
# /apis/G/V/{watch|proxy}/... are verbs in the path; proxy takes no subresource.
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_SPECIAL_VERBS_NO_SUBRESOURCES = frozenset({"proxy"})
# /api/v1/namespaces/{ns}/{status|finalize} are subresources of the namespace, not resources.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class Access:
    """One request's authorization attributes. `resource` is empty for a non-resource URL (`path`)."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def is_resource(self) -> bool:
        return bool(self.resource)

    @property
    def resource_name(self) -> str:
        """The name RBAC rules use: `pods` or `pods/eviction`."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def __str__(self) -> str:
        if not self.is_resource:
            return f"{self.verb} {self.path}"
        where = f" in namespace {self.namespace}" if self.namespace else ""
        named = f" {self.name!r}" if self.name else ""
        return f"{self.verb} {self.resource_name}.{self.group or 'core'}{named}{where}"


def request_access(method: str, path: str, query: Mapping[str, str] | None = None) -> Access:
    """The attributes kube-apiserver would authorize for `method path?query`."""
    query = query or {}
    verb = method.lower()
    parts = [p for p in path.strip("/").split("/") if p]
    if len(parts) < 2 or parts[0] not in ("api", "apis"):
        return Access(verb, path=path)
    if parts[0] == "apis":
        if len(parts) < 3:
            return Access(verb, path=path)
        group, rest = parts[1], parts[3:]
    else:
        group, rest = "", parts[2:]
    if not rest:  # discovery of one group version
        return Access(verb, path=path)

    verb = _METHOD_VERBS.get(method.upper(), verb)
    if rest[0] in _SPECIAL_VERBS:
        if len(rest) < 2:
            return Access(method.lower(), path=path)
        verb, rest = rest[0], rest[1:]

    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]

    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 and verb not in _SPECIAL_VERBS_NO_SUBRESOURCES else ""

    if not name and verb == "get":
        # Any watch value but false/0 means watch (a named GET stays a get, whatever it asks for).
        watch = query.get("watch")
        verb = "list" if watch is None or watch.lower() in ("false", "0") else "watch"
        name = _exact_name(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Access(verb, group, resource, subresource, namespace, name, path)


def _exact_name(field_selector: str) -> str:
    """`metadata.name=x` (or `==`) in a list/watch field selector names the object, as for RBAC."""
    for term in field_selector.split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and not key.endswith("!") and key.strip() == "metadata.name" and value.strip():
            return value.strip()
    return ""


@dataclass
class AccessLog:
    """The distinct accesses the server saw, with how often; thread-safe. Injected failures count too.

    Resource accesses are kept without their URL (two URLs with one set of attributes are one
    access), so the log grows with the objects touched, not with the requests made.
    """

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _counts: Counter[Access] = field(default_factory=Counter)

    def record(self, access: Access) -> None:
        if access.is_resource:
            access = replace(access, path="")
        with self._lock:
            self._counts[access] += 1

    def accesses(self) -> set[Access]:
        with self._lock:
            return set(self._counts)

    def counts(self) -> Counter[Access]:
        with self._lock:
            return Counter(self._counts)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()
