"""Policy hot reload: valid changes apply, invalid ones are rejected with every error, the old policy stays."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from descheduler import metrics
from descheduler.controller.reload import PolicyFile
from descheduler.policy import PolicyError

BASE = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {interval}
dryRun: {dry_run}
strategies:
  - name: LowNodeLoad
    args:
      highThresholds: {{cpu: 70}}
      lowThresholds: {{cpu: 40}}
"""


def write(path: Path, interval: str = "60s", dry_run: str = "false") -> None:
    path.write_text(BASE.format(interval=interval, dry_run=dry_run))


def reloads(result: str) -> float:
    return metrics.sample("descheduler_policy_reload_total", {"result": result})


def test_a_valid_change_replaces_the_policy(tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    write(file)
    watched = PolicyFile(file)
    assert watched.policy.interval.total_seconds() == 60
    assert watched.check() is None  # nothing changed
    before = reloads("success")
    write(file, interval="15s")
    new = watched.check()
    assert new is not None and new.interval.total_seconds() == 15
    assert watched.policy is new
    assert reloads("success") == before + 1


def test_an_invalid_change_is_rejected_with_every_error_and_the_old_policy_stays(tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    write(file)
    seen: list[PolicyError] = []
    watched = PolicyFile(file, on_error=seen.append)
    old = watched.policy
    before = reloads("error")
    write(file, interval="-5s", dry_run="maybe")
    assert watched.check() is None
    assert watched.policy is old
    assert len(seen) == 1
    fields = {path for path, _ in seen[0].problems}
    assert fields == {"interval", "dryRun"}
    assert reloads("error") == before + 1
    # The same broken content is reported once, not on every check.
    assert watched.check() is None
    assert len(seen) == 1
    # Fixing it applies the fix.
    write(file, dry_run="true")
    fixed = watched.check()
    assert fixed is not None and fixed.dry_run


def test_a_configmap_style_symlink_swap_is_seen(tmp_path: Path) -> None:
    """The kubelet writes a new ..data directory and swaps the ..data symlink atomically."""
    first, second = tmp_path / "..2026_01" / "policy.yaml", tmp_path / "..2026_02" / "policy.yaml"
    first.parent.mkdir()
    second.parent.mkdir()
    write(first)
    write(second, interval="30s")
    (tmp_path / "..data").symlink_to(first.parent.name)
    (tmp_path / "policy.yaml").symlink_to("..data/policy.yaml")
    watched = PolicyFile(tmp_path / "policy.yaml")
    assert watched.policy.interval.total_seconds() == 60
    (tmp_path / "..data_tmp").symlink_to(second.parent.name)
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")
    new = watched.check()
    assert new is not None and new.interval.total_seconds() == 30


def test_an_unreadable_file_keeps_the_policy(tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    write(file)
    seen: list[PolicyError] = []
    watched = PolicyFile(file, on_error=seen.append)
    file.unlink()
    assert watched.check() is None
    assert watched.policy.interval.total_seconds() == 60
    assert "cannot read the file" in str(seen[0])


def test_an_invalid_policy_at_start_is_an_error(tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    write(file, interval="soon")
    with pytest.raises(PolicyError) as err:
        PolicyFile(file)
    assert "interval" in str(err.value)
