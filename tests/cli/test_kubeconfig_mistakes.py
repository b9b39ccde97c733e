"""A kubeconfig that is not one, or names no usable context: one message naming the file, exit 1, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import POLICY, RANDOM_TEXT, assert_one_clear_error, cli

NO_CURRENT = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: dev, context: {cluster: c, user: u}}, {name: prod, context: {cluster: c, user: u}}]
"""


@pytest.mark.parametrize(
    ("case", "content", "expected"),
    [
        ("random_text", RANDOM_TEXT, "not a kubeconfig: expected a mapping with clusters, contexts, users"),
        ("empty", "", "empty file, not a kubeconfig"),
        ("malformed_yaml", "clusters: [\n", "not a kubeconfig: malformed YAML at line"),
        ("no_current_context", NO_CURRENT, "no current-context set: give --context NAME (contexts: dev, prod)"),
        (
            "unknown_current_context",
            NO_CURRENT + "current-context: staging\n",
            "current-context 'staging' is not one of its contexts (contexts: dev, prod)",
        ),
        (
            "entries_without_names",
            "clusters: [{cluster: {}}]\n",
            "clusters: must be a list of entries, each with a name",
        ),
    ],
)
def test_plan_names_the_kubeconfig_and_what_is_wrong_with_it(
    tmp_path: Path, user_env: dict[str, str], case: str, content: str, expected: str
) -> None:
    config = tmp_path / f"{case}.yaml"
    config.write_text(content)
    result = cli("plan", "--kubeconfig", str(config), env=user_env)
    assert_one_clear_error(result, 1, f"kubeconfig {config}: {expected}")


@pytest.mark.parametrize(
    "command",
    [["snapshot", "save", "SCRATCH/out.yaml"], ["run", "--policy", str(POLICY)]],
    ids=["snapshot-save", "run"],
)
def test_every_command_that_reads_a_kubeconfig_refuses_random_text(
    tmp_path: Path, user_env: dict[str, str], command: list[str]
) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(RANDOM_TEXT)
    args = [a.replace("SCRATCH", str(tmp_path)) for a in command]
    result = cli(*args, "--kubeconfig", str(config), env=user_env)
    assert_one_clear_error(result, 1, f"kubeconfig {config}: not a kubeconfig")
    assert not (tmp_path / "out.yaml").exists()


def test_a_kubeconfig_that_does_not_exist_is_named(tmp_path: Path, user_env: dict[str, str]) -> None:
    result = cli("plan", "--kubeconfig", str(tmp_path / "nope"), env=user_env)
    assert_one_clear_error(result, 1, str(tmp_path / "nope"), "no such kubeconfig file")


def test_a_directory_given_as_kubeconfig_is_named(tmp_path: Path, user_env: dict[str, str]) -> None:
    result = cli("plan", "--kubeconfig", str(tmp_path), env=user_env)
    assert_one_clear_error(result, 1, f"kubeconfig {tmp_path}: cannot read: Is a directory")


def test_an_unknown_context_lists_the_ones_there_are(tmp_path: Path, user_env: dict[str, str]) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(NO_CURRENT + "current-context: dev\n")
    result = cli("plan", "--kubeconfig", str(config), "--context", "staging", env=user_env)
    assert_one_clear_error(
        result, 1, f"kubeconfig {config}: no context 'staging' in this kubeconfig (contexts: dev, prod)"
    )
