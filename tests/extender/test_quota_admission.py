"""The extender enforces ElasticQuota (scheduling/quota.py) on the state it answers from, against the
fake API server: a refusal names the quota on every node, as unresolvable; the book follows the watch."""

from __future__ import annotations

from typing import Any

from descheduler.kube.kinds import QUOTAS_X
from tests.quota_builders import pod, quota

from .conftest import Client, extender_args
from .test_reservation_protocol import Side, _wait, side  # noqa: F401 (the fixture)


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _ask(side: Side, name: str, group: str) -> dict[str, Any]:  # noqa: F811
    status, answer = Client(side.http.port).post("filter", extender_args(pod(name, group, cpu=1), ["cool", "other"]))
    assert status == 200, answer
    return dict(answer)


def test_a_borrowers_pod_is_refused_on_every_node_while_a_lenders_pods_wait(side: Side) -> None:  # noqa: F811
    """team-a (min 2) borrows 4 of team-b's min 6, and 3 team-b pods wait: a team-a pod, even after one of
    its pods is gone, is refused everywhere; a team-b pod is not."""
    side.store.load([_namespace("team-a"), _namespace("team-b")])
    side.store.load(
        [
            quota("team-a", min={"cpu": 2}, max={"cpu": 8}, api_group="scheduling.x-k8s.io"),
            quota("team-b", min={"cpu": 6}, max={"cpu": 8}, api_group="scheduling.x-k8s.io"),
            *[pod(f"a-{i}", "team-a", node=("cool", "other")[i % 2], cpu=1) for i in range(6)],
            *[pod(f"b-{i}", "team-b", cpu=1) for i in range(3)],
        ]
    )
    _wait(lambda: side.cache.get("pods", "team-b/b-2") is not None, "the pods in the cache")
    _wait(lambda: side.cache.get(QUOTAS_X, "team-b/team-b") is not None, "the quotas in the cache")
    side.extender.refresh(force=True)  # the fixture's extender rebuilds only when told
    answer = _ask(side, "a-new", "team-a")
    assert answer["NodeNames"] == [] and answer["FailedNodes"] == {}
    reason = (
        "quota team-a would borrow cpu beyond its min 2 (6 used + 1 requested), and the quotas' min cannot cover "
        "it: 9 used or claimed by waiting pods + 1 > 8"
    )
    assert answer["FailedAndUnresolvableNodes"] == {"cool": reason, "other": reason}
    assert _ask(side, "b-0", "team-b")["NodeNames"] == ["cool", "other"]
    first = side.extender.state
    side.store.delete("pods", "a-0", "team-a")
    _wait(lambda: "5 used + 1" in str(_ask(side, "a-new", "team-a")), "the departure")
    assert side.extender.state is first  # seen from the watch, without a rebuild
    assert _ask(side, "a-new", "team-a")["NodeNames"] == []
