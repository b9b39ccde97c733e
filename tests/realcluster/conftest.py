"""Fixtures for the real-cluster tests: an admin client, a namespace per test and a
kube-controller-manager per module on the session's control plane (the `control_plane` fixture in
tests/conftest.py: etcd + kube-apiserver from $KUBEBUILDER_ASSETS, skipped with how to get them when
absent)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from realcluster_support import create

from descheduler.kube import KubeApiError, KubeClient, connect

if TYPE_CHECKING:
    from tests.realcluster.controlplane import ControlPlane


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


@pytest.fixture(scope="module")
def controller_manager(control_plane: ControlPlane) -> Iterator[None]:
    """kube-controller-manager for the module (Deployments, ReplicaSets, the namespace controller)."""
    process = control_plane.start_controller_manager()
    try:
        yield
    finally:
        process.stop()
