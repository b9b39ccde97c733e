"""The pod parts kube-scheduler's pod-level rules read (host ports, topology spread, required pod
affinity) decode alike from the full shape (`RawPod`) and the cache's (`RawListedPod`), with
`matchLabelKeys`/`mismatchLabelKeys` merged from the pod's own labels."""

from __future__ import annotations

import msgspec
import pytest

from descheduler import decode
from descheduler.labels import LabelSelector, Requirement
from descheduler.model import HostPort, Pod
from tests.builders import Obj, container, pod


def both(obj: Obj) -> tuple[Pod, Pod]:
    text = msgspec.json.encode(obj)
    full = decode.pod_from_raw(msgspec.json.decode(text, type=decode.RawPod))
    listed = decode.pod_from_listed(msgspec.json.decode(text, type=decode.RawListedPod))
    return full, listed


def with_ports() -> Obj:
    app = container("app", "1", "1Gi")
    app["ports"] = [{"containerPort": 80}, {"containerPort": 9100, "hostPort": 9100}]
    sidecar = container("proxy", restart_policy="Always")
    sidecar["ports"] = [{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}]
    init = container("setup")
    init["ports"] = [{"containerPort": 99, "hostPort": 99}]
    return pod("p", "n1", labels={"rev": "2"}, containers=[app], init_containers=[sidecar, init])


def test_host_ports_of_app_and_sidecar_containers_not_of_plain_init_containers() -> None:
    full, listed = both(with_ports())
    want = (HostPort(port=53, protocol="UDP", ip="10.0.0.1"), HostPort(port=9100))
    assert full.host_ports == listed.host_ports == want


def test_spread_constraints_keep_do_not_schedule_and_merge_match_label_keys() -> None:
    obj = pod("p", "n1", labels={"rev": "2"})
    obj["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}},
        {
            "maxSkew": 2,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "matchLabelKeys": ["rev", "absent"],
            "minDomains": 3,
            "nodeTaintsPolicy": "Honor",
        },
    ]
    full, listed = both(obj)
    assert full.spread == listed.spread
    (c,) = full.spread
    assert (c.max_skew, c.min_domains, c.honor_node_affinity, c.honor_node_taints) == (2, 3, True, True)
    assert c.selector == LabelSelector((("app", "web"),), (Requirement("rev", "In", ("2",)),))
    assert full.unjudged == ""


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("whenUnsatisfiable", "Sometimes", "whenUnsatisfiable 'Sometimes'"),
        ("nodeAffinityPolicy", "Maybe", "nodeAffinityPolicy 'Maybe'"),
        ("nodeTaintsPolicy", "Maybe", "nodeTaintsPolicy 'Maybe'"),
    ],
)
def test_a_spread_field_value_not_modelled_makes_the_pod_unjudged(field: str, value: str, words: str) -> None:
    obj = pod("p", "n1")
    constraint = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", field: value}
    obj["spec"]["topologySpreadConstraints"] = [constraint]
    full, listed = both(obj)
    assert full.unjudged == listed.unjudged == f"PodTopologySpread: spec.topologySpreadConstraints[0] {words}"


def test_required_pod_affinity_merges_match_and_mismatch_label_keys() -> None:
    term = {
        "labelSelector": {"matchLabels": {"app": "cache"}},
        "topologyKey": "zone",
        "matchLabelKeys": ["tenant"],
        "mismatchLabelKeys": ["rev"],
    }
    obj = pod(
        "p",
        "n1",
        labels={"tenant": "a", "rev": "2"},
        affinity={
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
        },
    )
    full, listed = both(obj)
    assert full.affinity == listed.affinity and full.anti_affinity == listed.anti_affinity
    want = LabelSelector(
        (("app", "cache"),), (Requirement("tenant", "In", ("a",)), Requirement("rev", "NotIn", ("2",)))
    )
    assert full.affinity[0].label_selector == want == full.anti_affinity[0].label_selector
    assert full.affinity[0].match_label_keys == ()


def test_pods_sharing_a_template_get_their_own_label_values() -> None:
    # The cache remembers a workload's affinity text once; each pod's own labels are merged after.
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone", "matchLabelKeys": ["rev"]}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    _, one = both(pod("p1", "n1", labels={"rev": "1"}, affinity=affinity))
    _, two = both(pod("p2", "n1", labels={"rev": "2"}, affinity=affinity))
    selectors = [p.affinity[0].label_selector for p in (one, two)]
    assert [s.match_expressions[0].values if s else None for s in selectors] == [("1",), ("2",)]
