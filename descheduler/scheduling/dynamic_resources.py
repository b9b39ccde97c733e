"""kube-scheduler's DynamicResources filter (scheduling-core.md §2 item 9), for the replacement of a
moved pod (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go): a ResourceClaim
the pod names that is allocated keeps it to the nodes of its `status.allocation.nodeSelector`
("resourceclaim not available on the node").

What the core does not judge, naming the rule: a claim made from a ResourceClaimTemplate (the
replacement gets a new claim, and its devices are allocated when it is scheduled, by rules of the
device classes that are not modelled here), a named claim that is not allocated, or one the
snapshot does not hold or could not read. Such a pod is not moved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from descheduler.model import Pod
from descheduler.refusal import Refusal, define
from descheduler.scheduling.node_terms import cached_terms_mask
from descheduler.scheduling.view import ClusterView
from descheduler.scheduling.volume_rules import NodeRule, ReasonCheck

if TYPE_CHECKING:
    from descheduler.snapshot import Snapshot

# subject: the claim ("namespace/name").
CLAIM_NOT_AVAILABLE = define(
    "ResourceClaimNotAvailable",
    "resource claim {subject}: its allocated devices are not available on this node",
    brief="resource claim not available here",
)
FOR_SCHEDULER: Mapping[str, Callable[[Refusal], str]] = {
    CLAIM_NOT_AVAILABLE: lambda r: "resourceclaim not available on the node",
}
RESOURCE_CLAIMS = "resourceclaims.resource.k8s.io"


def claim_rules(pod: Pod, snapshot: Snapshot) -> tuple[str, tuple[NodeRule, ...]]:
    """(the rule the core cannot judge, "" when none; the node selectors of the pod's allocated claims)."""
    rules: list[NodeRule] = []
    for entry in pod.resource_claims:
        if not entry.claim_name:
            template = entry.template_name or "none named"
            return (
                f"DynamicResources: claim {entry.name} is made from template {template}; the replacement's "
                "devices are allocated when it is scheduled",
                (),
            )
        key = f"{pod.namespace}/{entry.claim_name}"
        if RESOURCE_CLAIMS in snapshot.unreadable:
            return f"DynamicResources: claim {key}: {snapshot.unreadable[RESOURCE_CLAIMS]}", ()
        claim = snapshot.resource_claims.get(key)
        if claim is None:
            return f"DynamicResources: ResourceClaim {key} is not in the snapshot", ()
        if not claim.allocated:
            return f"DynamicResources: ResourceClaim {key} is not allocated", ()
        if claim.node_selector is not None:
            rules.append(NodeRule(claim.node_selector, Refusal(code=CLAIM_NOT_AVAILABLE, subject=key)))
    return "", tuple(rules)


def unjudged(pod: Pod, snapshot: Snapshot) -> str:
    return claim_rules(pod, snapshot)[0] if pod.resource_claims else ""


def claim_check(view: ClusterView, rules: tuple[NodeRule, ...]) -> ReasonCheck:
    """Every node against the allocated claims' node selectors."""
    table = view.table
    check = ReasonCheck.over(table)
    for rule in rules:
        check.refuse(~cached_terms_mask(table, rule.terms), rule.refusal)
    return check
