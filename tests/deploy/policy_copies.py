"""The policy files under deploy/ are derived from config/policy.yaml; this module says how.

kustomize reads no file outside a kustomization's directory, so deploy/base keeps a copy of the
documented default policy for its ConfigMap, and the dry-run overlay keeps the same policy with
`dryRun: true`. Tests compare them with what this module derives; to refresh them after editing
config/policy.yaml, run `.venv/bin/python -m tests.deploy.policy_copies`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_POLICY = ROOT / "config" / "policy.yaml"
BASE_POLICY = ROOT / "deploy" / "base" / "policy.yaml"
DRY_RUN_POLICY = ROOT / "deploy" / "overlays" / "dry-run" / "policy.yaml"

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


def expected_copies() -> dict[Path, str]:
    default = DEFAULT_POLICY.read_text()
    return {BASE_POLICY: default, DRY_RUN_POLICY: dry_run_text(default)}


def main() -> int:
    for path, text in expected_copies().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
