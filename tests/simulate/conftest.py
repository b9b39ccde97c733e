"""One run of `descheduler simulate` on the built-in demo, shared by the tests of its outcome and its page."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def simulate(tmp_path_factory: pytest.TempPathFactory, *args: str) -> tuple[dict[str, Any], Path, str]:
    """`descheduler simulate ARGS` into a fresh report directory: report.json, the directory, stdout."""
    report = tmp_path_factory.mktemp("report")
    result = subprocess.run(
        [sys.executable, "-m", "descheduler", "simulate", *args, "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads((report / "report.json").read_text()), report, result.stdout


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, str]:
    """The demo's report.json, its report directory and the command's stdout."""
    return simulate(tmp_path_factory)
