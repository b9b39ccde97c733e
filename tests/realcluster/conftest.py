"""Fixtures for the real-cluster tests: one control plane per session (etcd + kube-apiserver from
$KUBEBUILDER_ASSETS, skipped with how to get them when absent), an admin client, a namespace per test."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from controlplane import ControlPlane, assets_folder
from realcluster_support import create

from descheduler.kube import KubeApiError, KubeClient, connect


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver on free loopback ports, stopped (terminate, then kill) at the end."""
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
def kubeconfig(control_plane: ControlPlane) -> Path:
    """The admin kubeconfig (system:masters) of the session's control plane."""
    return control_plane.kubeconfig


@pytest.fixture(scope="session")
def kube(kubeconfig: Path) -> Iterator[KubeClient]:
    client = connect(kubeconfig, qps=0, burst=0, timeout=30)
    yield client
    client.close()


@pytest.fixture
def namespace(kube: KubeClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of its own for each test (with the `default` ServiceAccount pods need), deleted after."""
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{stem}-{uuid.uuid4().hex[:5]}"
    create(kube, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    # The service-account controller (controller-manager) would make it; without it, pod admission needs it.
    try:
        create(kube, f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}})
    except KubeApiError as error:
        if error.status != 409:
            raise
    yield name
    try:
        kube.request("DELETE", f"/api/v1/namespaces/{name}")
    except KubeApiError as error:
        if error.status != 404:
            raise
