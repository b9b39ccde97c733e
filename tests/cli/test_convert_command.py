"""`descheduler policy convert` and `policy validate` as a script sees them: exit codes, stderr, files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from descheduler.convert import EXIT_LEFT_OUT
from tests.cli.cli_support import assert_one_clear_error, cli

THRESHOLDS = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}


def upstream_policy(balance: list[str], deschedule: Sequence[str] = ()) -> dict[str, object]:
    plugins: dict[str, object] = {"balance": {"enabled": balance}}
    if deschedule:
        plugins["deschedule"] = {"enabled": list(deschedule)}
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [
            {"name": "p", "pluginConfig": [{"name": "LowNodeUtilization", "args": THRESHOLDS}], "plugins": plugins}
        ],
    }


def config_map(data: dict[str, object]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "descheduler", "namespace": "kube-system"},
        "data": {key: yaml.safe_dump(value) for key, value in data.items()},
    }


def write(tmp_path: Path, document: object) -> Path:
    file = tmp_path / "peer.yaml"
    file.write_text(yaml.safe_dump(document))
    return file


def test_everything_converted_exits_0_and_says_nothing(tmp_path: Path) -> None:
    result = cli("policy", "convert", str(write(tmp_path, upstream_policy(["LowNodeUtilization"]))))
    assert (result.returncode, result.stderr) == (0, "")
    assert yaml.safe_load(result.stdout)["strategies"][0]["name"] == "LowNodeLoad"


def test_plugins_left_out_exit_3_list_them_on_stderr_and_the_policy_is_still_written(tmp_path: Path) -> None:
    peer = write(tmp_path, upstream_policy(["RemoveDuplicates", "LowNodeUtilization"], ["PodLifeTime"]))
    out = tmp_path / "policy.yaml"
    result = cli("policy", "convert", str(peer), "-o", str(out))
    assert result.returncode == EXIT_LEFT_OUT == 3
    assert result.stderr.splitlines()[1:] == [
        f"{peer}: 2 plugin(s) left out, not converted: keep them running in the upstream descheduler, which can "
        "run beside this one, with LowNodeUtilization removed from profiles[0].plugins.balance.enabled:",
        "  - profiles[0].plugins.balance.enabled[0]: RemoveDuplicates (balance)",
        "  - profiles[0].plugins.deschedule.enabled[0]: PodLifeTime (deschedule)",
    ]
    assert cli("policy", "validate", str(out)).returncode == 0
    assert "# - profiles[0].plugins.deschedule.enabled[0]: PodLifeTime (deschedule)" in out.read_text()


def test_a_configmap_is_read_at_its_policy_key_and_the_header_names_it(tmp_path: Path) -> None:
    peer = write(tmp_path, config_map({"policy.yaml": upstream_policy(["LowNodeUtilization"])}))
    result = cli("policy", "convert", str(peer))
    assert result.returncode == 0, result.stderr
    assert "in ConfigMap kube-system/descheduler, data key policy.yaml" in " ".join(result.stdout.splitlines()[:3])


def test_several_keys_name_the_others_on_stderr_and_key_picks_one(tmp_path: Path) -> None:
    policy = upstream_policy(["LowNodeUtilization"])
    peer = write(tmp_path, config_map({"a.yaml": policy, "b.yaml": policy}))
    first = cli("policy", "convert", str(peer))
    assert first.returncode == 0
    assert first.stderr == (
        f"{peer}: also holds a configuration at ConfigMap kube-system/descheduler, data key b.yaml, "
        "not converted (choose it with --key)\n"
    )
    chosen = cli("policy", "convert", str(peer), "--key", "b.yaml")
    assert (chosen.returncode, chosen.stderr) == (0, "")
    assert "data key b.yaml" in " ".join(chosen.stdout.splitlines()[:3])


@pytest.mark.parametrize("command", ["convert", "validate"])
def test_a_binary_file_is_not_a_text_file(tmp_path: Path, command: str) -> None:
    file = tmp_path / "policy.yaml"
    file.write_bytes(b"\x89PNG\r\n\x1a\n\xff\x00\x00\rIHDR")
    result = cli("policy", command, str(file))
    assert_one_clear_error(result, 1, "not a text file")
    assert "codec" not in result.stderr


def test_validate_on_a_peers_file_names_policy_convert(tmp_path: Path) -> None:
    peer = write(tmp_path, upstream_policy(["LowNodeUtilization"]))
    result = cli("policy", "validate", str(peer))
    assert_one_clear_error(
        result,
        1,
        "this is an upstream kubernetes-sigs/descheduler policy (descheduler/v1alpha2), not our policy: "
        f"convert it with `descheduler policy convert {peer}`",
    )
    assert result.stderr.count("\n  - ") == 1  # one message, not a list of field errors


def test_convert_names_the_unknown_key_inside_evictable_namespaces(tmp_path: Path) -> None:
    policy = upstream_policy(["LowNodeUtilization"])
    policy["profiles"][0]["pluginConfig"][0]["args"]["evictableNamespaces"] = {"exclude": ["a"], "includ": ["b"]}  # type: ignore[index]
    result = cli("policy", "convert", str(write(tmp_path, policy)))
    assert_one_clear_error(
        result, 1, "profiles[0].pluginConfig[0].args.evictableNamespaces.includ: unknown field; did you mean include?"
    )


def test_convert_suggests_the_nearest_field_for_a_typo_in_the_peers_file(tmp_path: Path) -> None:
    policy = upstream_policy(["LowNodeUtilization"])
    policy["profiles"][0]["pluginConfig"][0]["args"]["targetThreshold"] = {"cpu": 60}  # type: ignore[index]
    result = cli("policy", "convert", str(write(tmp_path, policy)))
    assert_one_clear_error(
        result, 1, "profiles[0].pluginConfig[0].args.targetThreshold: unknown field; did you mean targetThresholds?"
    )


def test_help_documents_the_exit_codes() -> None:
    result = cli("policy", "convert", "--help")
    text = " ".join(result.stdout.split())
    assert "0 converted, nothing left out; 3 converted and written, with other plugins left out" in text
