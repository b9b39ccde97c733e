"""The policy files under deploy/ are derived from config/policy.yaml; this module says how.

kustomize reads no file outside a kustomization's directory, so deploy/base keeps a copy of the
documented default policy for its ConfigMap, the dry-run overlay keeps the same policy with
`dryRun: true`, and the make-before-break components (the cluster-wide one and its namespaced
variant) keep it with `evictor.makeBeforeBreak.enabled: true`. Tests compare them with what this module derives; to refresh them after editing
config/policy.yaml, run `.venv/bin/python -m tests.deploy.policy_copies`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_POLICY = ROOT / "config" / "policy.yaml"
BASE_POLICY = ROOT / "deploy" / "base" / "policy.yaml"
DRY_RUN_POLICY = ROOT / "deploy" / "overlays" / "dry-run" / "policy.yaml"
MAKE_BEFORE_BREAK = ROOT / "deploy" / "components" / "make-before-break"
MAKE_BEFORE_BREAK_POLICIES = (MAKE_BEFORE_BREAK / "policy.yaml", MAKE_BEFORE_BREAK / "namespaced" / "policy.yaml")

_DRY_RUN_HEADER = (
    "# config/policy.yaml with dryRun: true (derived by tests/deploy/policy_copies.py; do not edit here).\n"
)


def dry_run_text(default: str) -> str:
    """The default policy with its top-level `dryRun: false` line turned to true."""
    lines = default.splitlines(keepends=True)
    switched = [i for i, line in enumerate(lines) if line.rstrip("\n") == "dryRun: false"]
    if len(switched) != 1:
        raise ValueError(
            f"{DEFAULT_POLICY}: expected exactly one top-level line 'dryRun: false', found {len(switched)}"
        )
    lines[switched[0]] = "dryRun: true\n"
    return _DRY_RUN_HEADER + "".join(lines)


_MAKE_BEFORE_BREAK_HEADER = (
    "# config/policy.yaml with evictor.makeBeforeBreak.enabled: true (derived by tests/deploy/policy_copies.py;\n"
    "# do not edit here).\n"
)


def make_before_break_text(default: str) -> str:
    """The default policy with the `enabled: false` line right under `  makeBeforeBreak:` turned to
    true (the comment after it kept in its column)."""
    lines = default.splitlines(keepends=True)
    found = [i for i, line in enumerate(lines) if line.split("#", 1)[0].rstrip() == "  makeBeforeBreak:"]
    if len(found) != 1 or not lines[found[0] + 1].startswith("    enabled: false"):
        raise ValueError(f"{DEFAULT_POLICY}: expected one line '  makeBeforeBreak:' followed by '    enabled: false'")
    index = found[0] + 1
    lines[index] = lines[index].replace("enabled: false", "enabled: true ", 1)
    return _MAKE_BEFORE_BREAK_HEADER + "".join(lines)


def expected_copies() -> dict[Path, str]:
    default = DEFAULT_POLICY.read_text()
    make_before_break = make_before_break_text(default)
    return {
        BASE_POLICY: default,
        DRY_RUN_POLICY: dry_run_text(default),
        **dict.fromkeys(MAKE_BEFORE_BREAK_POLICIES, make_before_break),
    }


def main() -> int:
    for path, text in expected_copies().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
