"""Least privilege: the ClusterRole and Role allow exactly the calls the code makes, nothing more.

The exercises (tests/deploy/exercises.py) run real code paths against the fake API server, which
records each request's RBAC attributes; the checker (tests/deploy/rbac.py) evaluates them against
the rendered manifests the way kube-apiserver's RBAC authorizer does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from descheduler.fakecluster.apiserver import Access

from .deploy_support import BASE, NAMESPACE, controller_targets, deploy_targets, rendered, target_id
from .exercises import EXERCISES, SERVICE_ACCOUNT, Exercise, run_exercise
from .rbac import (
    KUBE_SCHEDULER_ROLES,
    BindingError,
    Grant,
    Rule,
    grants_for,
    permissions,
    rbac_covers,
    unused_permissions,
    wildcards,
)

# Permissions the manifests grant for code no exercise runs yet: (verb, group, resource) → the code
# that needs it. The no-extras test fails both for an unused permission missing here and for an
# entry here that an exercise now uses, so this list can only shrink as exercises are added.
NOT_YET_EXERCISED: dict[tuple[str, str, str], str] = {}

_recorded: dict[Callable[[Path], set[Access]], set[Access] | Exception] = {}


def accesses_of(exercise: Exercise, scratch: Path) -> set[Access]:
    """Each exercise's code runs once per test session, however many tests (and exercises: one
    code path checked against two kustomizations) read its accesses (or its failure)."""
    if exercise.run not in _recorded:
        try:
            _recorded[exercise.run] = run_exercise(exercise, scratch)
        except Exception as error:
            _recorded[exercise.run] = error
    recorded = _recorded[exercise.run]
    if isinstance(recorded, Exception):
        raise AssertionError(f"exercise {exercise.name} failed: {recorded}") from recorded
    return recorded


@pytest.fixture(scope="module")
def all_accesses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[Access]]:
    return {e.name: accesses_of(e, tmp_path_factory.mktemp(e.name)) for e in EXERCISES}


def _grants(directory: Path = BASE, account: tuple[str, str] = (NAMESPACE, SERVICE_ACCOUNT)) -> list[Grant]:
    return grants_for(rendered(directory), *account, outside=KUBE_SCHEDULER_ROLES)


def _descheduler_accesses(all_accesses: dict[str, set[Access]]) -> set[Access]:
    return {a for e in EXERCISES if e.service_account == (NAMESPACE, SERVICE_ACCOUNT) for a in all_accesses[e.name]}


def _checks() -> list[tuple[Path, Exercise]]:
    """Each exercise against every kustomization that installs the controller, or against the one
    that enables its opt-in feature."""
    return [
        (directory, exercise)
        for exercise in EXERCISES
        for directory in ([exercise.target] if exercise.target else controller_targets())
    ]


@pytest.mark.parametrize(
    ("directory", "exercise"), _checks(), ids=lambda v: v.name if isinstance(v, Exercise) else target_id(v)
)
def test_every_call_the_code_makes_is_allowed(
    directory: Path, exercise: Exercise, tmp_path_factory: pytest.TempPathFactory
) -> None:
    accesses = accesses_of(exercise, tmp_path_factory.mktemp(exercise.name))
    assert accesses, f"exercise {exercise.name} made no API call"
    missing = rbac_covers(_grants(directory, exercise.service_account), accesses)
    assert not missing, f"{exercise.covers} makes calls {target_id(directory)} does not allow: " + "; ".join(
        map(str, missing)
    )


@pytest.mark.parametrize("exercise", [e for e in EXERCISES if e.target], ids=lambda e: e.name)
def test_opt_in_features_need_their_component(exercise: Exercise, all_accesses: dict[str, set[Access]]) -> None:
    """The base alone refuses what an opt-in feature does; what its kustomization adds for the
    feature's ServiceAccount is all used by the feature."""
    assert exercise.target is not None
    accesses = all_accesses[exercise.name]
    assert rbac_covers(_grants(BASE, exercise.service_account), accesses), f"the base already allows {exercise.name}"
    base = {
        (p.verb, p.group, p.resource, p.name, p.namespace) for p in permissions(_grants(BASE, exercise.service_account))
    }
    added = [
        p
        for p in permissions(_grants(exercise.target, exercise.service_account))
        if (p.verb, p.group, p.resource, p.name, p.namespace) not in base
    ]
    assert added
    users = {a for e in EXERCISES if e.target == exercise.target for a in all_accesses[e.name]}
    unused = [str(p) for p in added if not any(p.used_by(a) for a in users)]
    assert not unused, f"{target_id(exercise.target)} grants more than {exercise.name} uses: {unused}"


def test_the_namespaced_make_before_break_grant_allows_only_its_namespace(
    all_accesses: dict[str, set[Access]],
) -> None:
    """Bound by a RoleBinding in the Deployment's namespace, the move is allowed there and nowhere else."""
    exercise = next(e for e in EXERCISES if e.name == "migration-make-before-break-namespaced")
    assert exercise.target is not None
    apps = {a for a in all_accesses[exercise.name] if a.group == "apps" and a.verb in ("get", "update")}
    assert {(a.verb, a.resource) for a in apps} == {
        ("get", "replicasets"),
        ("get", "deployments"),
        ("update", "deployments"),
    }
    elsewhere = {replace(a, namespace=f"not-{a.namespace}") for a in apps}
    assert rbac_covers(_grants(exercise.target), apps) == []
    assert rbac_covers(_grants(exercise.target), elsewhere) == sorted(elsewhere, key=str)


def _role_rules() -> list[tuple[str, int]]:
    objects = rendered(BASE)
    return [
        (f"{o['kind']} {o['metadata']['name']}", index)
        for o in objects
        if o["kind"] in ("ClusterRole", "Role")
        for index, _ in enumerate(o.get("rules") or [])
    ]


@pytest.mark.parametrize(("role", "index"), _role_rules(), ids=lambda v: str(v))
def test_removing_any_rule_leaves_a_call_unauthorized(
    role: str, index: int, all_accesses: dict[str, set[Access]]
) -> None:
    """Each rule is needed: without it the check reports the calls it allowed as missing."""
    accesses = _descheduler_accesses(all_accesses)
    reduced = [g for g in _grants() if g.source != f"{role}, rule {index}"]
    assert len(reduced) == len(_grants()) - 1
    missing = rbac_covers(reduced, accesses)
    if not missing:
        rule = next(g.rule for g in _grants() if g.source == f"{role}, rule {index}")
        needed_later = all(
            (p.verb, p.group, p.resource) in NOT_YET_EXERCISED
            for p in permissions([Grant(rule, None, f"{role}, rule {index}")])
        )
        assert needed_later, f"{role}, rule {index} allows nothing the code does: {rule}"
        pytest.skip(f"{role}, rule {index} serves code no exercise runs yet")
    assert missing


def test_no_permission_goes_unused(all_accesses: dict[str, set[Access]]) -> None:
    unused = unused_permissions(_grants(), _descheduler_accesses(all_accesses))
    extras = sorted({str(p) for p in unused if (p.verb, p.group, p.resource) not in NOT_YET_EXERCISED})
    assert not extras, "granted but never used by the code: " + "; ".join(extras)
    unused_keys = {(p.verb, p.group, p.resource) for p in unused}
    now_covered = sorted(set(NOT_YET_EXERCISED) - unused_keys)
    assert not now_covered, f"now exercised, remove from NOT_YET_EXERCISED: {now_covered}"


def test_no_wildcards_and_no_secrets() -> None:
    for directory in deploy_targets():
        objects = rendered(directory)
        assert wildcards(objects) == [], target_id(directory)
        for obj in objects:
            for rule in obj.get("rules") or [] if obj["kind"] in ("Role", "ClusterRole") else []:
                assert "secrets" not in (rule.get("resources") or []), f"{obj['metadata']['name']} reads secrets"
                assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), obj["metadata"]["name"]


def test_the_lease_rules_name_the_lease_the_code_uses() -> None:
    from descheduler.controller.command import RunOptions
    from descheduler.migration.objects import SCHEDULER_LEASE

    role = next(o for o in rendered(BASE) if o["kind"] == "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    by_verbs = {tuple(r["verbs"]): r for r in role["rules"]}
    # create cannot be limited by name (the name is not in a create request's URL): its own rule.
    assert "resourceNames" not in by_verbs[("create",)]
    named = {name: r["verbs"] for r in role["rules"] for name in r.get("resourceNames") or ()}
    # Its own Lease to hold, and the reservation-aware scheduler's to read.
    assert named == {RunOptions(policy=BASE).lease_name: ["get", "update"], SCHEDULER_LEASE: ["get"]}


# ---------------------------------------------------------------------- the checker itself


def _grant(namespace: str | None = None, **rule: list[str]) -> Grant:
    return Grant(Rule.from_dict(rule), namespace, "test rule")


def test_resource_names_never_allow_create_or_collections() -> None:
    grant = _grant(verbs=["create", "get", "list"], apiGroups=["coordination.k8s.io"], resources=["leases"])
    named = Grant(Rule(grant.rule.verbs, grant.rule.api_groups, grant.rule.resources, ("lock",)), None, "named")
    create = Access("create", "coordination.k8s.io", "leases", namespace="ns")
    listing = Access("list", "coordination.k8s.io", "leases", namespace="ns")
    get = Access("get", "coordination.k8s.io", "leases", namespace="ns", name="lock")
    other = Access("get", "coordination.k8s.io", "leases", namespace="ns", name="other")
    assert rbac_covers([grant], [create, listing, get, other]) == []
    assert rbac_covers([named], [create, listing, get, other]) == sorted([create, listing, other], key=str)


def test_a_role_binding_grants_only_in_its_namespace() -> None:
    grant = _grant("ns", verbs=["get"], apiGroups=[""], resources=["pods", "nodes"])
    assert grant.allows(Access("get", "", "pods", namespace="ns", name="p"))
    assert not grant.allows(Access("get", "", "pods", namespace="other", name="p"))
    assert not grant.allows(Access("get", "", "nodes", name="n"))


def test_a_subresource_needs_its_own_rule() -> None:
    pods = _grant(verbs=["create", "update"], apiGroups=[""], resources=["pods"])
    eviction = Access("create", "", "pods", "eviction", "ns", "p")
    assert not pods.allows(eviction)
    assert _grant(verbs=["create"], apiGroups=[""], resources=["pods/eviction"]).allows(eviction)
    assert _grant(verbs=["update"], apiGroups=["x"], resources=["*/status"]).allows(
        Access("update", "x", "a", "status")
    )


def test_groups_and_verbs_must_match() -> None:
    grant = _grant(verbs=["list"], apiGroups=["apps"], resources=["deployments"])
    assert grant.allows(Access("list", "apps", "deployments"))
    assert not grant.allows(Access("list", "extensions", "deployments"))
    assert not grant.allows(Access("watch", "apps", "deployments"))


def test_discovery_is_allowed_by_the_default_roles_only_as_get() -> None:
    grants = _grants()
    assert rbac_covers(grants, [Access("get", path="/apis/apps/v1"), Access("get", path="/version")]) == []
    assert rbac_covers(grants, [Access("post", path="/apis")]) == [Access("post", path="/apis")]


def test_a_binding_to_a_missing_role_is_an_error() -> None:
    binding = {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"},
        "roleRef": {"kind": "ClusterRole", "name": "gone"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}],
    }
    with pytest.raises(BindingError, match="gone"):
        grants_for([binding], "ns", "sa")


def test_bindings_to_other_accounts_grant_nothing() -> None:
    assert all(g.default for g in _grants(account=(NAMESPACE, "someone-else")))
    assert all(g.default for g in _grants(account=("default", SERVICE_ACCOUNT)))
