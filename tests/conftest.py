"""Shared pytest configuration; importing this makes `tests.builders` importable from every test.

Tests mirror the layout of what they test (tests/scheduling for descheduler/scheduling,
tests/strategies for strategies/, tests/test_budget.py for descheduler/budget.py, ...). What kind
of test each is, is a marker set here, so one kind can be chosen or left out (`pytest -m property`,
`pytest -m "not realcluster"`): `property` (hypothesis), `contract` (the same test against the fake
API server and a real kube-apiserver, through the `api_server` fixture of
tests/fakecluster/apiserver), `realcluster` (the whole product on a real control plane:
tests/realcluster, which spans every package) and `end_to_end` (a whole process or loop, in a file
named test_end_to_end*.py or under tests/realcluster).

Fixtures shared by more than one test package live here: the session's real control plane
(tests/realcluster's harness), used by tests/realcluster and by the contract tests' real-server runs;
the real Prometheus binary (tests/prometheus_server.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.prometheus_server import HOW_TO_GET, find_binary
from tests.realcluster.controlplane import ControlPlane, assets_folder


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver on free loopback ports, stopped (terminate, then kill) at the end;
    skipped, saying how to get the binaries, when $KUBEBUILDER_ASSETS does not have them."""
    assets, why = assets_folder()
    if assets is None:
        pytest.skip(why)
    plane = ControlPlane(assets, tmp_path_factory.mktemp("controlplane"))
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def prometheus_binary() -> str:
    """The real Prometheus binary (tests/prometheus_server.py starts it); skipped, saying how to
    get it, when it is absent."""
    binary = find_binary("prometheus")
    if binary is None:
        pytest.skip(HOW_TO_GET)
    return binary


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """A test that configures logging in-process (the CLI does) leaves the root handler writing to
    that test's captured stderr, which is closed once it ends; put the handlers back, so a later
    test's background thread does not log to a closed stream."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers = handlers
    root.setLevel(level)


KINDS = {
    "property": "a hypothesis property test",
    "contract": "the same test against the fake API server and a real kube-apiserver",
    "realcluster": "the whole product on a real control plane ($KUBEBUILDER_ASSETS)",
    "end_to_end": "a whole process or loop, end to end",
}


def pytest_configure(config: pytest.Config) -> None:
    for name, what in KINDS.items():
        config.addinivalue_line("markers", f"{name}: {what}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its kind (see the module docstring)."""
    for item in items:
        parts = item.path.parts
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker("property")
        if "api_server" in getattr(item, "fixturenames", ()):
            item.add_marker("contract")
        if "realcluster" in parts:
            item.add_marker("realcluster")
        if "realcluster" in parts or item.path.name.startswith("test_end_to_end"):
            item.add_marker("end_to_end")


# The tests that may start the session's real control plane: tests/realcluster, and the contract
# tests' runs against the real kube-apiserver (api_server's "real" parameter).
_ON_CONTROL_PLANE = re.compile(r"^tests/realcluster/|^tests/fakecluster/apiserver/.*[\[-]real[\]-]")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (`-n 2`, pyproject.toml): every test on the real control plane in one unit
    of work, started first (the largest), so one worker runs them on one control plane while the
    other takes the rest module by module (a module's tests in order, its fixtures made once).
    (xdist's own `--dist loadgroup` reads `xdist_group` marks from node ids that pytest 9 no longer
    lets it rewrite.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ControlPlaneApart(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "control-plane" if _ON_CONTROL_PLANE.search(nodeid) else super()._split_scope(nodeid)

    return ControlPlaneApart(config, log)
