"""Paths and small helpers shared by the deploy tests."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .kustomize import iter_kustomizations, render

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "base"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
NAMESPACE = "descheduler-system"
KUBERNETES_VERSIONS = ("1.31", "1.37")  # the oldest we support and the newest kubernetes-validate knows


def kustomization_kind(directory: Path) -> str:
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        if (directory / name).is_file():
            data = yaml.safe_load((directory / name).read_text()) or {}
            return str(data.get("kind", "Kustomization"))
    raise FileNotFoundError(directory)


def deploy_targets() -> list[Path]:
    """Every buildable kustomization under deploy/ (components are built through the overlays using them)."""
    return [d for d in iter_kustomizations(DEPLOY) if kustomization_kind(d) == "Kustomization"]


def controller_targets() -> list[Path]:
    """The kustomizations that install the controller (not, say, the CRDs alone)."""
    return [
        d
        for d in deploy_targets()
        if any(o["kind"] == "Deployment" and o["metadata"]["name"] == "descheduler" for o in rendered(d))
    ]


def target_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@cache
def rendered(directory: Path) -> tuple[dict[str, Any], ...]:
    return tuple(render(directory))


def find(
    objects: tuple[dict[str, Any], ...] | list[dict[str, Any]], kind: str, name: str | None = None
) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def kubectl_kustomize(directory: Path) -> list[dict[str, Any]] | None:
    """`kubectl kustomize DIR` (kustomize v5 inside kubectl), or None when kubectl is not installed."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    done = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory} failed: {done.stderr.strip()}")
    return [d for d in yaml.safe_load_all(done.stdout) if d is not None]
