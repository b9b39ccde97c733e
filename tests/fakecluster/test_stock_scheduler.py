"""kube-scheduler's default plugins (descheduler/fakecluster/stock.py), each pinned by its documented
behaviour: the Kubernetes docs (Assigning Pods to Nodes, Taints and Tolerations, Pod Topology Spread
Constraints, Resource Bin Packing, Resource Management for Pods and Containers, Sidecar Containers)
and the plugins' own comments."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from descheduler.fakecluster.stock import StockScheduler, parse_quantity, pod_requests, summary, to_units

Raw = dict[str, Any]


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[Raw] | None = None,
    unschedulable: bool = False,
    ready: str | None = None,
    **extra: str,
) -> Raw:
    status: Raw = {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **extra}}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": status,
    }


def pod(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    on: str = "",
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    **spec: Any,
) -> Raw:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    body: Raw = {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}
    if on:
        body["nodeName"] = on
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": body,
        "status": {"phase": "Running" if on else "Pending"},
    }


def anti(key: str, **match: str) -> Raw:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": match}, "topologyKey": key}
            ]
        }
    }


def node_affinity(*expressions: Raw) -> Raw:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
            }
        }
    }


# --- quantities and requests ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        ("1Ki", 1024),
        ("1.5Gi", 3 * 2**29),
        ("128974848", 128974848),
        ("129e6", 129_000_000),
        ("129M", 129_000_000),
        ("123Mi", 128974848),
        ("1E3", 1000),  # an exponent, while "1E" alone is exa
        ("1E", 10**18),
        ("2k", 2000),
        ("5n", Fraction(5, 10**9)),
    ],
)
def test_quantities_read_as_kubernetes_resource_quantity(text: str, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


def test_units_round_up_as_milli_value_and_value_do() -> None:
    assert to_units("cpu", "1n") == 1  # MilliValue rounds up
    assert to_units("memory", "0.5") == 1  # Value rounds up
    assert to_units("cpu", "1.5") == 1500


def test_pod_request_is_the_larger_of_the_containers_sum_and_any_init_container() -> None:
    # Resource Management / Init Containers: effective request = max(sum of app containers, highest init container).
    raw = pod("p", cpu="1", memory="1Gi")
    raw["spec"]["containers"].append({"name": "d", "resources": {"requests": {"cpu": "1"}}})
    raw["spec"]["initContainers"] = [
        {"name": "i1", "resources": {"requests": {"cpu": "3"}}},
        {"name": "i2", "resources": {"requests": {"memory": "2Gi"}}},
    ]
    assert pod_requests(raw) == {"cpu": 3000, "memory": 2 * 2**30}


def test_sidecars_add_to_the_containers_and_to_every_later_init_container() -> None:
    # Sidecar containers (restartPolicy Always) keep running: they count with the app containers and
    # with each init container started after them.
    raw = pod("p", cpu="1")
    raw["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "2"}}},
    ]
    assert pod_requests(raw) == {"cpu": 2500}  # max(1 + 0.5, 2 + 0.5)


def test_pod_overhead_is_added_to_the_request() -> None:
    raw = pod("p", cpu="1", overhead={"cpu": "250m", "memory": "120Mi"})
    assert pod_requests(raw) == {"cpu": 1250, "memory": 120 * 2**20}


# --- filters -------------------------------------------------------------------------------


def test_node_unschedulable_refuses_a_cordoned_node() -> None:
    stock = StockScheduler([node("n1", unschedulable=True), node("n2")], [])
    assert stock.feasible(pod("p")) == ["n2"]
    assert stock.why_not(pod("p"), "n1") == "node(s) were unschedulable"


def test_node_unschedulable_lets_a_pod_tolerating_the_unschedulable_taint_in() -> None:
    toleration = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    stock = StockScheduler([node("n1", unschedulable=True)], [])
    assert stock.feasible(pod("p", tolerations=[toleration])) == ["n1"]


def test_node_name_binds_to_that_node_only() -> None:
    stock = StockScheduler([node("n1"), node("n2")], [])
    assert stock.feasible(pod("p", nodeName="n2")) == ["n2"]


def test_fit_refuses_a_node_whose_requests_plus_the_pods_exceed_allocatable() -> None:
    # NodeResourcesFit: the sum of the requests of the pods on the node plus the pod's must not exceed allocatable.
    stock = StockScheduler([node("n1", cpu="4"), node("n2", cpu="4")], [pod("a", cpu="3", on="n1")])
    assert stock.feasible(pod("p", cpu="1500m")) == ["n2"]
    assert stock.why_not(pod("p", cpu="1500m"), "n1") == "Insufficient cpu"
    assert stock.feasible(pod("q", cpu="1")) == ["n1", "n2"]  # exactly full fits


def test_fit_counts_requests_not_limits_and_ignores_finished_pods() -> None:
    done = pod("done", cpu="4", on="n1")
    done["status"]["phase"] = "Succeeded"
    stock = StockScheduler([node("n1", cpu="4")], [done])
    assert stock.feasible(pod("p", cpu="4")) == ["n1"]


def test_fit_counts_terminating_pods_until_they_are_gone() -> None:
    leaving = pod("leaving", cpu="4", on="n1")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-15T12:00:00Z"
    assert StockScheduler([node("n1", cpu="4")], [leaving]).feasible(pod("p", cpu="1")) == []


def test_fit_refuses_a_node_at_its_pod_count() -> None:
    stock = StockScheduler([node("n1", pods="1")], [pod("a", on="n1")])
    assert stock.why_not(pod("p"), "n1") == "Too many pods"


def test_fit_checks_extended_resources_and_a_node_without_one_has_none() -> None:
    gpu = pod("p")
    gpu["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    stock = StockScheduler([node("n1"), node("n2", **{"example.com/gpu": "2"})], [])
    assert stock.feasible(gpu) == ["n2"]
    assert stock.why_not(gpu, "n1") == "Insufficient example.com/gpu"


def test_a_reservation_holding_room_counts_as_requested_and_its_owner_may_be_given_it_back() -> None:
    reservation = {
        "metadata": {"name": "r"},
        "spec": {"nodeName": "n1", "resources": {"cpu": "3"}},
        "status": {"phase": "Available"},
    }
    consumed = {**reservation, "metadata": {"name": "c"}, "status": {"phase": "Succeeded", "consumedBy": "x"}}
    stock = StockScheduler([node("n1", cpu="4")], [], [reservation, consumed])
    assert stock.feasible(pod("p", cpu="2")) == []
    assert stock.feasible(pod("p", cpu="2"), own=["r"]) == ["n1"]


def test_node_selector_needs_every_label() -> None:
    stock = StockScheduler([node("n1", labels={"disk": "ssd"}), node("n2", labels={"disk": "ssd", "zone": "a"})], [])
    assert stock.feasible(pod("p", nodeSelector={"disk": "ssd", "zone": "a"})) == ["n2"]
    assert stock.why_not(pod("p", nodeSelector={"zone": "a"}), "n1") == (
        "node(s) didn't match Pod's node affinity/selector"
    )


@pytest.mark.parametrize(
    ("expression", "fits"),
    [
        ({"key": "zone", "operator": "In", "values": ["a", "b"]}, ["n1", "n2"]),
        ({"key": "zone", "operator": "NotIn", "values": ["a"]}, ["n2", "n3"]),  # no label: NotIn matches
        ({"key": "zone", "operator": "Exists"}, ["n1", "n2"]),
        ({"key": "zone", "operator": "DoesNotExist"}, ["n3"]),
        # Gt / Lt compare the label as an integer; a node without it does not match.
        ({"key": "cores", "operator": "Gt", "values": ["8"]}, ["n2"]),
        ({"key": "cores", "operator": "Lt", "values": ["16"]}, ["n1"]),
    ],
)
def test_required_node_affinity_operators(expression: Raw, fits: list[str]) -> None:
    nodes = [
        node("n1", labels={"zone": "a", "cores": "8"}),
        node("n2", labels={"zone": "b", "cores": "16"}),
        node("n3", labels={"cores": "x"}),
    ]
    assert StockScheduler(nodes, []).feasible(pod("p", affinity=node_affinity(expression))) == fits


def test_node_selector_terms_are_ored_and_match_fields_reads_the_node_name() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]},
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                ]
            }
        }
    }
    nodes = [node("n1", labels={"zone": "a"}), node("n2"), node("n3")]
    assert StockScheduler(nodes, []).feasible(pod("p", affinity=affinity)) == ["n1", "n3"]


def test_an_empty_node_selector_term_matches_no_node() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}
    assert StockScheduler([node("n1")], []).feasible(pod("p", affinity=affinity)) == []


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_an_untolerated_no_schedule_or_no_execute_taint_refuses_the_node(effect: str) -> None:
    stock = StockScheduler([node("n1", taints=[{"key": "k", "value": "v", "effect": effect}])], [])
    assert stock.why_not(pod("p"), "n1") == "node(s) had untolerated taint {k: v}"


def test_a_prefer_no_schedule_taint_does_not_filter() -> None:
    stock = StockScheduler([node("n1", taints=[{"key": "k", "effect": "PreferNoSchedule"}])], [])
    assert stock.feasible(pod("p")) == ["n1"]


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v"}, True),  # operator defaults to Equal; empty effect matches all effects
        ({"key": "k", "value": "other"}, False),
        ({"key": "k", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),  # empty key with Exists tolerates everything
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"value": "v"}, False),  # Equal with an empty key matches nothing
    ],
)
def test_toleration_rules(toleration: Raw, tolerated: bool) -> None:
    stock = StockScheduler([node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])], [])
    assert stock.feasible(pod("p", tolerations=[toleration])) == (["n1"] if tolerated else [])


def test_a_node_not_ready_carries_the_not_ready_taint() -> None:
    # The node lifecycle controller taints it node.kubernetes.io/not-ready:NoSchedule (TaintNodesByCondition).
    stock = StockScheduler([node("n1", ready="False"), node("n2", ready="True"), node("n3", ready="Unknown")], [])
    assert stock.feasible(pod("p")) == ["n2"]
    assert stock.why_not(pod("p"), "n1") == "node(s) had untolerated taint {node.kubernetes.io/not-ready}"
    assert stock.why_not(pod("p"), "n3") == "node(s) had untolerated taint {node.kubernetes.io/unreachable}"


def test_anti_affinity_refuses_the_domain_where_a_matching_pod_runs() -> None:
    nodes = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "a"}), node("n3", labels={"zone": "b"})]
    stock = StockScheduler(nodes, [pod("web-1", on="n1", labels={"app": "web"})])
    assert stock.feasible(pod("p", labels={"app": "web"}, affinity=anti("kubernetes.io/hostname", app="web"))) == [
        "n2",
        "n3",
    ]
    assert stock.feasible(pod("p", affinity=anti("zone", app="web"))) == ["n3"]
    assert stock.why_not(pod("p", affinity=anti("zone", app="web")), "n2") == (
        "node(s) didn't match pod anti-affinity rules"
    )


def test_anti_affinity_looks_in_the_pods_own_namespace_by_default() -> None:
    stock = StockScheduler([node("n1")], [pod("web-1", on="n1", labels={"app": "web"}, namespace="other")])
    assert stock.feasible(pod("p", affinity=anti("kubernetes.io/hostname", app="web"))) == ["n1"]
    listed = anti("kubernetes.io/hostname", app="web")
    listed["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["namespaces"] = ["other"]
    assert stock.feasible(pod("p", affinity=listed)) == []


def test_anti_affinity_match_expressions() -> None:
    term = {
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]},
        "topologyKey": "kubernetes.io/hostname",
    }
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    stock = StockScheduler([node("n1"), node("n2")], [pod("a", on="n1", labels={"app": "api"})])
    assert stock.feasible(pod("p", affinity=affinity)) == ["n2"]


def test_an_existing_pods_anti_affinity_keeps_a_matching_pod_out_of_its_domain() -> None:
    # InterPodAffinity also refuses a node where a running pod's required anti-affinity selects the new pod.
    guard = pod("guard", on="n1", affinity=anti("kubernetes.io/hostname", app="web"))
    stock = StockScheduler([node("n1"), node("n2")], [guard])
    assert stock.feasible(pod("p", labels={"app": "web"})) == ["n2"]
    assert stock.why_not(pod("p", labels={"app": "web"}), "n1") == (
        "node(s) didn't satisfy existing pods anti-affinity rules"
    )
    assert stock.feasible(pod("q", labels={"app": "db"})) == ["n1", "n2"]


def test_required_pod_affinity_needs_a_matching_pod_in_the_domain() -> None:
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "zone"}
            ]
        }
    }
    nodes = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "a"}), node("n3", labels={"zone": "b"})]
    stock = StockScheduler(nodes, [pod("cache", on="n1", labels={"app": "cache"})])
    assert stock.feasible(pod("p", affinity=affinity)) == ["n1", "n2"]
    assert stock.why_not(pod("p", affinity=affinity), "n3") == "node(s) didn't match pod affinity rules"
    # The first pod of a group that selects itself may go anywhere (no matching pod exists yet).
    alone = StockScheduler(nodes, [])
    assert alone.feasible(pod("p", labels={"app": "cache"}, affinity=affinity)) == ["n1", "n2", "n3"]
    assert alone.feasible(pod("p", affinity=affinity)) == []


def _spread(max_skew: int, key: str = "zone", **extra: Any) -> list[Raw]:
    return [
        {
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            **extra,
        }
    ]


def test_topology_spread_keeps_the_skew_within_max_skew() -> None:
    # Docs example: zone A holds 2 matching pods, zone B none; with maxSkew 1 the pod must go to B.
    nodes = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "a"}), node("n3", labels={"zone": "b"})]
    web = [pod("w1", on="n1", labels={"app": "web"}), pod("w2", on="n2", labels={"app": "web"})]
    stock = StockScheduler(nodes, web)
    incoming = pod("p", labels={"app": "web"}, topologySpreadConstraints=_spread(1))
    assert stock.feasible(incoming) == ["n3"]
    assert stock.why_not(incoming, "n1") == "node(s) didn't match pod topology spread constraints"
    # zone a would hold 3 against zone b's 0: a skew of 3, allowed from maxSkew 3 on
    assert stock.feasible(pod("p", labels={"app": "web"}, topologySpreadConstraints=_spread(2))) == ["n3"]
    assert stock.feasible(pod("p", labels={"app": "web"}, topologySpreadConstraints=_spread(3))) == ["n1", "n2", "n3"]


def test_topology_spread_refuses_nodes_without_the_topology_key() -> None:
    stock = StockScheduler([node("n1", labels={"zone": "a"}), node("n2")], [])
    incoming = pod("p", labels={"app": "web"}, topologySpreadConstraints=_spread(1))
    assert stock.feasible(incoming) == ["n1"]
    assert stock.why_not(incoming, "n2") == (
        "node(s) didn't match pod topology spread constraints (missing required label)"
    )


def test_topology_spread_min_domains_treats_the_global_minimum_as_zero() -> None:
    # With fewer eligible domains than minDomains, the global minimum counts as 0.
    nodes = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"})]
    web = [pod("w1", on="n1", labels={"app": "web"}), pod("w2", on="n2", labels={"app": "web"})]
    stock = StockScheduler(nodes, web)
    assert stock.feasible(pod("p", labels={"app": "web"}, topologySpreadConstraints=_spread(1))) == ["n1", "n2"]
    constrained = pod("p", labels={"app": "web"}, topologySpreadConstraints=_spread(1, minDomains=3))
    assert stock.feasible(constrained) == []


def test_topology_spread_schedule_anyway_does_not_filter() -> None:
    nodes = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"})]
    stock = StockScheduler(
        nodes, [pod("w1", on="n1", labels={"app": "web"}), pod("w2", on="n1", labels={"app": "web"})]
    )
    lenient = _spread(1, whenUnsatisfiable="ScheduleAnyway")
    assert stock.feasible(pod("p", labels={"app": "web"}, topologySpreadConstraints=lenient)) == ["n1", "n2"]


def test_place_accounts_the_binding_for_the_next_pod() -> None:
    stock = StockScheduler([node("n1", cpu="4")], [])
    first = pod("a", cpu="3", labels={"app": "web"})
    stock.place(first, "n1")
    assert stock.feasible(pod("b", cpu="3")) == []
    assert stock.feasible(pod("c", affinity=anti("kubernetes.io/hostname", app="web"))) == []


def test_summary_counts_the_reasons_as_kube_schedulers_fit_error() -> None:
    stock = StockScheduler([node("n1", unschedulable=True), node("n2", cpu="1"), node("n3", cpu="1")], [])
    assert summary(3, stock.refusals(pod("p", cpu="2"))) == (
        "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) were unschedulable."
    )


# --- scores ----------------------------------------------------------------------------------


def test_least_allocated_is_the_free_fraction_times_100_averaged_over_cpu_and_memory() -> None:
    # (allocatable − requested) × 100 / allocatable per resource, weights 1: cpu (4−1−1)/4 → 50, memory (8−2)/8 → 75.
    stock = StockScheduler([node("n1", cpu="4", memory="8Gi")], [pod("a", cpu="1", memory="1Gi", on="n1")])
    scores = stock.plugin_scores(pod("p", cpu="1", memory="1Gi"), ["n1"])
    assert scores["NodeResourcesFit"] == {"n1": (50 + 75) // 2}


def test_least_allocated_counts_an_unset_request_as_100m_cpu_and_200mi_memory() -> None:
    stock = StockScheduler([node("n1", cpu="1", memory="1000Mi")], [])
    assert stock.plugin_scores(pod("p"), ["n1"])["NodeResourcesFit"] == {"n1": (90 + 80) // 2}


def test_balanced_allocation_is_one_minus_the_std_of_the_requested_fractions() -> None:
    # cpu 2/4 = 0.5, memory 2/8 = 0.25: std = |0.5 − 0.25| / 2 = 0.125 → (1 − 0.125) × 100 = 87.
    stock = StockScheduler([node("n1", cpu="4", memory="8Gi")], [])
    assert stock.plugin_scores(pod("p", cpu="2", memory="2Gi"), ["n1"])["NodeResourcesBalancedAllocation"] == {"n1": 87}


def test_taint_toleration_scores_fewer_untolerated_prefer_no_schedule_taints_higher() -> None:
    prefer = [{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}]
    nodes = [node("n0"), node("n1", taints=prefer[:1]), node("n2", taints=prefer)]
    stock = StockScheduler(nodes, [])
    assert stock.plugin_scores(pod("p"), ["n0", "n1", "n2"])["TaintToleration"] == {"n0": 100, "n1": 50, "n2": 0}
    tolerant = pod("p", tolerations=[{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert stock.plugin_scores(tolerant, ["n0", "n1", "n2"])["TaintToleration"] == {"n0": 100, "n1": 100, "n2": 0}


def test_node_affinity_scores_the_sum_of_matching_preferred_weights_normalized_to_100() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
                },
                {"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
            ]
        }
    }
    nodes = [node("n1", labels={"disk": "ssd", "zone": "a"}), node("n2", labels={"disk": "ssd"}), node("n3")]
    scores = StockScheduler(nodes, []).plugin_scores(pod("p", affinity=affinity), ["n1", "n2", "n3"])
    assert scores["NodeAffinity"] == {"n1": 100, "n2": 25, "n3": 0}


def test_inter_pod_affinity_scores_preferred_terms_min_max_normalized() -> None:
    affinity = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }
    running = [pod("w1", on="n1", labels={"app": "web"}), pod("w2", on="n1", labels={"app": "web"})]
    running.append(pod("w3", on="n2", labels={"app": "web"}))
    stock = StockScheduler([node("n1"), node("n2"), node("n3")], running)
    assert stock.plugin_scores(pod("p", affinity=affinity), ["n1", "n2", "n3"])["InterPodAffinity"] == {
        "n1": 0,
        "n2": 50,
        "n3": 100,
    }


def test_scores_weigh_the_plugins_as_the_default_configuration() -> None:
    # TaintToleration 3, NodeAffinity 2, InterPodAffinity 2, NodeResourcesFit 1, BalancedAllocation 1.
    stock = StockScheduler([node("n1", cpu="4", memory="8Gi")], [])
    incoming = pod("p", cpu="2", memory="2Gi")
    parts = stock.plugin_scores(incoming, ["n1"])
    assert parts["NodeAffinity"] == {"n1": 0} and parts["InterPodAffinity"] == {"n1": 0}
    expected = parts["NodeResourcesFit"]["n1"] + parts["NodeResourcesBalancedAllocation"]["n1"] + 3 * 100
    assert stock.scores(incoming, ["n1"]) == {"n1": expected}


def test_pick_takes_the_least_allocated_node_and_breaks_ties_by_name() -> None:
    nodes = [node("n1"), node("n2"), node("n3")]
    stock = StockScheduler(nodes, [pod("a", cpu="2", memory="4Gi", on="n1")])
    assert stock.pick(pod("p", cpu="1", memory="2Gi")) == "n2"
    assert StockScheduler([node("n1", cpu="1")], []).pick(pod("p", cpu="2")) is None


def test_with_several_affinity_terms_only_a_pod_matching_all_of_them_satisfies_them() -> None:
    # InterPodAffinity counts an existing pod for the incoming pod's affinity when it matches every term.
    terms = [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"},
        {"labelSelector": {"matchLabels": {"tier": "hot"}}, "topologyKey": "kubernetes.io/hostname"},
    ]
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    running = [pod("a", on="n1", labels={"app": "cache"}), pod("b", on="n1", labels={"tier": "hot"})]
    running.append(pod("c", on="n2", labels={"app": "cache", "tier": "hot"}))
    assert StockScheduler([node("n1"), node("n2")], running).feasible(pod("p", affinity=affinity)) == ["n2"]
