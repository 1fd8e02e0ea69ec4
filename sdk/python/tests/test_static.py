"""The package type-checks under mypy --strict and passes ruff (both pinned in
requirements-test.txt); its tests and tools pass ruff too."""

from __future__ import annotations

import subprocess
import sys

from conftest import SDK_ROOT


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=SDK_ROOT, capture_output=True, text=True, timeout=300
    )


def test_mypy_strict() -> None:
    # The cache beside the venv keeps later runs quick.
    cache = f"{sys.prefix}/.mypy_cache"
    done = run("mypy", "--strict", "--cache-dir", cache, "src/quota_client")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff() -> None:
    checked = run("ruff", "check", "--no-cache", "src", "tests", "tools")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    formatted = run("ruff", "format", "--no-cache", "--check", "src", "tests", "tools")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
