"""Shared pytest configuration; importing this makes `tests.builders` importable from every test.

Fixtures shared by more than one test package live here: the session's real control plane
(tests/realcluster's harness), used by tests/realcluster and by the contract tests' real-server runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
