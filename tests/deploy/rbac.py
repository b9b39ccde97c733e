"""RBAC as kube-apiserver evaluates it: which rules bind to a ServiceAccount, and whether they allow
an access (the authorization attributes the fake API server records, `descheduler.fakecluster.apiserver.Access`).

Follows the RBAC authorizer (k8s.io/kubernetes/pkg/apis/rbac/v1/evaluation_helpers.go): a rule
allows a resource request when its verbs, apiGroups and resources match (`*` and `*/subresource`
included) and, if it lists resourceNames, the request names one of them — so a rule with
resourceNames never allows `create`, `list`, `watch` or `deletecollection` of a whole collection.
A RoleBinding grants only inside its own namespace; only a ClusterRoleBinding grants on
cluster-scoped resources and non-resource URLs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from descheduler.fakecluster.apiserver import Access


@dataclass(frozen=True, slots=True)
class Rule:
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: dict[str, Any]) -> Rule:
        def strings(key: str) -> tuple[str, ...]:
            return tuple(str(v) for v in rule.get(key) or ())

        return cls(
            strings("verbs"),
            strings("apiGroups"),
            strings("resources"),
            strings("resourceNames"),
            strings("nonResourceURLs"),
        )

    def allows(self, access: Access) -> bool:
        if not ("*" in self.verbs or access.verb in self.verbs):
            return False
        if not access.is_resource:
            return any(
                url == "*" or url == access.path or (url.endswith("*") and access.path.startswith(url[:-1]))
                for url in self.non_resource_urls
            )
        if not ("*" in self.api_groups or access.group in self.api_groups):
            return False
        combined = access.resource_name
        if not any(
            r == "*" or r == combined or (access.subresource and r == f"*/{access.subresource}") for r in self.resources
        ):
            return False
        return not self.resource_names or access.name in self.resource_names


@dataclass(frozen=True, slots=True)
class Grant:
    """A rule bound to the subject; `namespace` None means cluster-wide (a ClusterRoleBinding)."""

    rule: Rule
    namespace: str | None
    source: str  # "ClusterRole descheduler, rule 2" — for messages
    default: bool = False  # granted to every authenticated user by the cluster's default roles

    def allows(self, access: Access) -> bool:
        if self.namespace is not None and (not access.is_resource or access.namespace != self.namespace):
            return False
        return self.rule.allows(access)


# The default ClusterRoles every cluster binds to system:authenticated (kube-apiserver's bootstrap
# policy): discovery, version and health, and self reviews.
DEFAULT_GRANTS = (
    Grant(
        Rule(
            ("get",),
            non_resource_urls=(
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ),
        ),
        None,
        "ClusterRole system:discovery",
        default=True,
    ),
    Grant(
        Rule(("create",), ("authorization.k8s.io",), ("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
        None,
        "ClusterRole system:basic-user",
        default=True,
    ),
)


class BindingError(Exception):
    """A binding that names a role the manifests do not define."""


def _binds(binding: dict[str, Any], namespace: str, name: str) -> bool:
    binding_ns = binding["metadata"].get("namespace", "")
    for subject in binding.get("subjects") or []:
        if subject.get("kind") != "ServiceAccount" or subject.get("name") != name:
            continue
        # A RoleBinding's ServiceAccount subject without a namespace means the binding's namespace.
        if (subject.get("namespace") or binding_ns) == namespace:
            return True
    return False


# The roles deploy/overlays/with-scheduler binds its kube-scheduler's account to (kind, name): the
# API server's bootstrapped ones (not in the manifests) and the scheduler's leader-election Role.
# They grant kube-scheduler's own calls, not our code's, though the extender shares the account.
KUBE_SCHEDULER_ROLES = frozenset(
    {
        ("ClusterRole", "system:kube-scheduler"),
        ("ClusterRole", "system:volume-scheduler"),
        ("Role", "extension-apiserver-authentication-reader"),
        ("Role", "load-aware-scheduler-leader-election"),
    }
)


def grants_for(
    objects: Iterable[dict[str, Any]],
    namespace: str,
    service_account: str,
    *,
    outside: frozenset[tuple[str, str]] = frozenset(),
) -> list[Grant]:
    """Every rule the manifests bind to ServiceAccount `namespace/service_account`, plus the defaults.
    Bindings to the roles named in `outside` (another program's, such as KUBE_SCHEDULER_ROLES) are
    left out; a binding to any other role the manifests do not define is a BindingError."""
    objects = list(objects)
    cluster_roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    roles = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects if o["kind"] == "Role"}
    grants = list(DEFAULT_GRANTS)
    for binding in objects:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding") or not _binds(
            binding, namespace, service_account
        ):
            continue
        ref = binding["roleRef"]
        if (ref["kind"], ref["name"]) in outside:
            continue
        binding_ns = binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else None
        if ref["kind"] == "ClusterRole":
            role = cluster_roles.get(ref["name"])
        elif binding_ns is not None:
            role = roles.get((binding_ns, ref["name"]))
        else:
            raise BindingError(f"ClusterRoleBinding {binding['metadata']['name']} refers to a Role")
        if role is None:
            raise BindingError(
                f"{binding['kind']} {binding['metadata']['name']} refers to {ref['kind']} {ref['name']}, "
                "which the manifests do not define"
            )
        for index, rule in enumerate(role.get("rules") or []):
            grants.append(Grant(Rule.from_dict(rule), binding_ns, f"{ref['kind']} {ref['name']}, rule {index}"))
    return grants


def rbac_covers(grants: Iterable[Grant], accesses: Iterable[Access]) -> list[Access]:
    """The accesses no grant allows (empty: the permissions cover everything the code did)."""
    grants = list(grants)
    return sorted((a for a in set(accesses) if not any(g.allows(a) for g in grants)), key=str)


@dataclass(frozen=True, slots=True)
class Permission:
    """One verb on one resource (and name, for resourceNames rules) that one rule grants."""

    source: str
    verb: str
    group: str
    resource: str
    name: str = ""
    namespace: str | None = None

    def __str__(self) -> str:
        named = f" {self.name!r}" if self.name else ""
        where = f" in namespace {self.namespace}" if self.namespace is not None else ""
        return f"{self.verb} {self.resource}.{self.group or 'core'}{named}{where} ({self.source})"

    def used_by(self, access: Access) -> bool:
        if not access.is_resource or (self.namespace is not None and access.namespace != self.namespace):
            return False
        rule = Rule((self.verb,), (self.group,), (self.resource,), (self.name,) if self.name else ())
        return rule.allows(access)


def permissions(grants: Iterable[Grant]) -> list[Permission]:
    """The grants, one verb × group × resource × name each (the defaults left out)."""
    out = []
    for grant in grants:
        if grant.default:
            continue
        rule = grant.rule
        for verb in rule.verbs:
            for group in rule.api_groups:
                for resource in rule.resources:
                    for name in rule.resource_names or ("",):
                        out.append(Permission(grant.source, verb, group, resource, name, grant.namespace))
    return out


def unused_permissions(grants: Iterable[Grant], accesses: Iterable[Access]) -> list[Permission]:
    """Granted permissions that no recorded access needed."""
    accesses = set(accesses)
    return [p for p in permissions(grants) if not any(p.used_by(a) for a in accesses)]


def wildcards(objects: Iterable[dict[str, Any]]) -> list[str]:
    """Every `*` in a Role or ClusterRole rule, named."""
    found = []
    for obj in objects:
        if obj["kind"] not in ("Role", "ClusterRole"):
            continue
        for index, rule in enumerate(obj.get("rules") or []):
            for key in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"):
                if any("*" in str(v) for v in rule.get(key) or ()):
                    found.append(f"{obj['kind']} {obj['metadata']['name']}, rule {index}: {key} {rule[key]}")
    return found
