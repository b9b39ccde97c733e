"""The kubeconfig is read once: `--kubeconfig <(…)` (a pipe) works, and merged files keep their own
directory for relative certificate paths."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from descheduler.kube.client import load_configuration


def kubeconfig(server: str, name: str = "c", **cluster: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, **cluster}}],
        "users": [{"name": name, "user": {"token": "t"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_kubeconfig_on_a_pipe_is_read_once(tmp_path: Path) -> None:
    pipe = tmp_path / "kubeconfig"
    os.mkfifo(pipe)
    # The shell's <(…) writes once; a second open would wait for a writer that never comes.
    writer = threading.Thread(target=pipe.write_text, args=(yaml.safe_dump(kubeconfig("https://pipe.example:6443")),))
    writer.start()
    configuration = k8s.Configuration()
    done: list[str] = []
    reader = threading.Thread(target=lambda: done.append(load_configuration(configuration, pipe, None)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # unblock it, so the test fails rather than hangs
        with open(pipe, "w"):
            pass
        pytest.fail("the kubeconfig pipe was opened a second time")
    writer.join(timeout=5)
    assert done == [str(pipe)]
    assert configuration.host == "https://pipe.example:6443"


def test_merged_files_resolve_relative_certificates_against_their_own_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (second / "ca.crt").write_text("not checked here")
    only_users = {
        "apiVersion": "v1",
        "kind": "Config",
        "users": [{"name": "other", "user": {}}],
        "current-context": "c",
    }
    (first / "config").write_text(yaml.safe_dump(only_users))
    (second / "config").write_text(
        yaml.safe_dump(kubeconfig("https://two.example", "c", **{"certificate-authority": "ca.crt"}))
    )
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first / "config"), str(second / "config")]))
    configuration = k8s.Configuration()
    load_configuration(configuration, None, None)
    assert configuration.host == "https://two.example"
    assert configuration.ssl_ca_cert == str(second / "ca.crt")
