"""The fake's stock scheduler on PodTopologySpread's node inclusion policies, matchLabelKeys and
minDomains, and on InterPodAffinity's matchLabelKeys, mismatchLabelKeys and namespaceSelector.

Cases come from kube-scheduler's tables: pkg/scheduler/framework/plugins/podtopologyspread/
filtering_test.go (TestPreFilterState: the matching pods per domain, `TpPairToMatchNum`;
TestSingleConstraint: the nodes that pass) and interpodaffinity/filtering_test.go
(TestRequiredAffinitySingleNode), with the semantics of common.go (filterTopologySpreadConstraints,
matchNodeInclusionPolicies) and of kube-apiserver's merge of matchLabelKeys/mismatchLabelKeys into
the label selector on create.
"""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.fakecluster.stock import StockScheduler

Raw = dict[str, Any]
BAR: Raw = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
FOO: Raw = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
# filtering_test.go's `taints`: the unschedulable taint, NoSchedule.
TAINTS = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]


def node(name: str, taints: list[Raw] | None = None, **labels: str) -> Raw:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def pod(name: str, on: str = "", namespace: str = "default", labels: dict[str, str] | None = None, **spec: Any) -> Raw:
    body: Raw = {"containers": [{"name": "c"}], **spec}
    if on:
        body["nodeName"] = on
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": body,
        "status": {"phase": "Running" if on else "Pending"},
    }


def spread(key: str, selector: Raw, max_skew: int = 1, **extra: Any) -> Raw:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": selector,
        **extra,
    }


def counts(stock: StockScheduler, incoming: Raw) -> list[dict[str, int]]:
    """PreFilter's matching pods per domain, per constraint (TestPreFilterState's TpPairToMatchNum)."""
    return [dict(s.counts) for s in stock._cycle(incoming).spreads]


# TestPreFilterState's three nodes and four pods of the node inclusion policy cases.
def _abc(c_taints: list[Raw] | None = None, a_b_labels: dict[str, str] | None = None) -> list[Raw]:
    extra = a_b_labels or {}
    return [
        node("node-a", node="node-a", **extra),
        node("node-b", node="node-b", **extra),
        node("node-c", c_taints, node="node-c", bar=""),
    ]


ABC_PODS = [
    pod("p-a", "node-a", labels={"bar": ""}),
    pod("p-b", "node-b", labels={"bar": ""}),
    pod("p-c", "node-b", labels={"bar": ""}),
    pod("p-d", "node-c"),
]
FOO_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}]
        }
    }
}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({}, {"node-a": 1, "node-b": 2}),  # "NodeAffinityPolicy honored with nodeAffinity"
        ({"nodeAffinityPolicy": "Ignore"}, {"node-a": 1, "node-b": 2, "node-c": 0}),  # "... ignored with nodeAffinity"
    ],
)
def test_node_affinity_policy_decides_whether_nodes_the_pod_may_not_use_count(
    policy: Raw, expected: dict[str, int]
) -> None:
    stock = StockScheduler(_abc(a_b_labels={"foo": ""}), ABC_PODS)
    incoming = pod(
        "p", labels={"foo": ""}, affinity=FOO_AFFINITY, topologySpreadConstraints=[spread("node", BAR, **policy)]
    )
    assert counts(stock, incoming) == [expected]


@pytest.mark.parametrize(
    ("policy", "tolerations", "expected"),
    [
        ({}, [], {"node-a": 1, "node-b": 2, "node-c": 0}),  # "NodeTaintsPolicy ignored"
        ({"nodeTaintsPolicy": "Honor"}, [], {"node-a": 1, "node-b": 2}),  # "NodeTaintsPolicy honored"
        (  # "NodeTaintsPolicy honored with tolerated taints"
            {"nodeTaintsPolicy": "Honor"},
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
            {"node-a": 1, "node-b": 2, "node-c": 0},
        ),
    ],
)
def test_node_taints_policy_honor_leaves_out_nodes_whose_taints_the_pod_does_not_tolerate(
    policy: Raw, tolerations: list[Raw], expected: dict[str, int]
) -> None:
    stock = StockScheduler(_abc(TAINTS), ABC_PODS)
    incoming = pod(
        "p", labels={"foo": ""}, tolerations=tolerations, topologySpreadConstraints=[spread("node", BAR, **policy)]
    )
    assert counts(stock, incoming) == [expected]


def test_node_taints_policy_honor_changes_which_nodes_pass_the_skew() -> None:
    # Ignored, node-c's empty domain is the global minimum (0) and node-b's 2 + 0 − 0 > 1; honored,
    # the minimum is node-a's 1 and node-b passes (node-c stays refused by its taint).
    stock = StockScheduler(_abc(TAINTS), [*ABC_PODS, pod("p-e", "node-a", labels={"bar": ""})])
    ignored = pod("p", labels={"bar": ""}, topologySpreadConstraints=[spread("node", BAR)])
    honored = pod("p", labels={"bar": ""}, topologySpreadConstraints=[spread("node", BAR, nodeTaintsPolicy="Honor")])
    assert stock.feasible(ignored) == []
    assert stock.feasible(honored) == ["node-a", "node-b"]


def test_each_constraint_applies_its_own_inclusion_policies() -> None:
    # "two node inclusion Constraints, zone: honor/honor, node: honor/ignore"
    nodes = [
        node("node-a", zone="zone1", node="node-a", foo=""),
        node("node-b", TAINTS, zone="zone1", node="node-b"),
        node("node-x", zone="zone2", node="node-x", foo=""),
    ]
    pods = [
        pod("p-b1", "node-b", labels={"foo": ""}),
        pod("p-b2", "node-b", labels={"foo": ""}),
        pod("p-x1", "node-x", labels={"foo": ""}),
    ]
    incoming = pod(
        "p",
        labels={"foo": ""},
        topologySpreadConstraints=[spread("zone", FOO, nodeTaintsPolicy="Honor"), spread("node", FOO)],
    )
    assert counts(StockScheduler(nodes, pods), incoming) == [
        {"zone1": 0, "zone2": 1},
        {"node-a": 0, "node-b": 2, "node-x": 1},
    ]


def test_match_label_keys_count_only_pods_with_the_incoming_pods_values() -> None:
    # TestPreFilterState's matchLabelKeys cases: the pod's value of each key joins the selector.
    nodes = [node("node-a", zone="zone1"), node("node-x", zone="zone2")]
    pods = [
        pod("v1-a", "node-a", labels={"foo": "", "rev": "1"}),
        pod("v1-b", "node-a", labels={"foo": "", "rev": "1"}),
        pod("v2-x", "node-x", labels={"foo": "", "rev": "2"}),
    ]
    incoming = pod(
        "p", labels={"foo": "", "rev": "1"}, topologySpreadConstraints=[spread("zone", FOO, matchLabelKeys=["rev"])]
    )
    stock = StockScheduler(nodes, pods)
    assert counts(stock, incoming) == [{"zone1": 2, "zone2": 0}]
    assert stock.feasible(incoming) == ["node-x"]


def test_a_match_label_key_the_pod_lacks_is_ignored() -> None:
    # "key in matchLabelKeys is ignored when it isn't exist in pod.labels"
    nodes = [node("node-a", zone="zone1"), node("node-x", zone="zone2")]
    pods = [pod("v1", "node-a", labels={"foo": "", "rev": "1"}), pod("v2", "node-x", labels={"foo": "", "rev": "2"})]
    incoming = pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread("zone", FOO, matchLabelKeys=["rev"])])
    assert counts(StockScheduler(nodes, pods), incoming) == [{"zone1": 1, "zone2": 1}]


@pytest.mark.parametrize(("min_domains", "fits"), [(None, ["node-a", "node-b", "node-c"]), (4, ["node-c"])])
def test_min_domains_above_the_domains_makes_the_global_minimum_zero(min_domains: int | None, fits: list[str]) -> None:
    # TestSingleConstraint: "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of
    # domains < minDomains, then the third node fits".
    nodes = [node(n, node=n) for n in ("node-a", "node-b", "node-c")]
    pods = [
        pod(f"p{i}", n, labels={"foo": ""}) for i, n in enumerate(["node-a", "node-a", "node-b", "node-b", "node-c"])
    ]
    extra = {"minDomains": min_domains} if min_domains else {}
    incoming = pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread("node", FOO, max_skew=2, **extra)])
    assert StockScheduler(nodes, pods).feasible(incoming) == fits


# --- InterPodAffinity --------------------------------------------------------------------------


def _affinity(kind: str, selector: Raw, key: str = "zone", **extra: Any) -> Raw:
    return {
        kind: {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector, "topologyKey": key, **extra}]
        }
    }


ZONED = [node("node-a", zone="zone1"), node("node-x", zone="zone2")]


@pytest.mark.parametrize(
    ("keys", "fits"),
    [
        ({"matchLabelKeys": ["tenant"]}, ["node-x"]),  # a cache pod of the same tenant
        ({"mismatchLabelKeys": ["tenant"]}, ["node-a"]),  # a cache pod of another tenant
    ],
)
def test_affinity_label_keys_select_cache_pods_by_the_incoming_pods_tenant(keys: Raw, fits: list[str]) -> None:
    pods = [
        pod("cache-1", "node-a", labels={"app": "cache", "tenant": "one"}),
        pod("cache-2", "node-x", labels={"app": "cache", "tenant": "two"}),
    ]
    incoming = pod(
        "p", labels={"tenant": "two"}, affinity=_affinity("podAffinity", {"matchLabels": {"app": "cache"}}, **keys)
    )
    assert StockScheduler(ZONED, pods).feasible(incoming) == fits


def test_anti_affinity_mismatch_label_keys_keep_tenants_apart() -> None:
    # The KEP's example: pods of one tenant keep pods of other tenants out of their domain.
    pods = [pod("one", "node-a", labels={"tenant": "one"})]
    incoming = pod(
        "p",
        labels={"tenant": "two"},
        affinity=_affinity(
            "podAntiAffinity",
            {"matchExpressions": [{"key": "tenant", "operator": "Exists"}]},
            mismatchLabelKeys=["tenant"],
        ),
    )
    assert StockScheduler(ZONED, pods).feasible(incoming) == ["node-x"]


def test_an_existing_pods_anti_affinity_uses_its_own_label_values() -> None:
    holder = pod(
        "one",
        "node-a",
        labels={"tenant": "one"},
        affinity=_affinity(
            "podAntiAffinity",
            {"matchExpressions": [{"key": "tenant", "operator": "Exists"}]},
            mismatchLabelKeys=["tenant"],
        ),
    )
    stock = StockScheduler(ZONED, [holder])
    assert stock.feasible(pod("same", labels={"tenant": "one"})) == ["node-a", "node-x"]
    assert stock.feasible(pod("other", labels={"tenant": "two"})) == ["node-x"]


def test_affinity_namespace_selector_looks_in_the_namespaces_it_selects() -> None:
    # TestRequiredAffinitySingleNode: "affinity with namespaceSelector"; an empty selector is every namespace.
    namespaces = [
        {"metadata": {"name": "default", "labels": {}}},
        {"metadata": {"name": "team-a", "labels": {"team": "a"}}},
    ]
    pods = [pod("cache", "node-x", namespace="team-a", labels={"app": "cache"})]
    stock = StockScheduler(ZONED, pods, (), namespaces)

    def incoming(selector: Raw | None) -> Raw:
        extra = {} if selector is None else {"namespaceSelector": selector}
        return pod("p", affinity=_affinity("podAffinity", {"matchLabels": {"app": "cache"}}, **extra))

    assert stock.feasible(incoming(None)) == []  # its own namespace only
    assert stock.feasible(incoming({"matchLabels": {"team": "a"}})) == ["node-x"]
    assert stock.feasible(incoming({})) == ["node-x"]
    assert stock.feasible(incoming({"matchLabels": {"team": "b"}})) == []
