"""The generated modules are current: regenerating them from the served document gives the same
files (models.py, _routes.py), and _sync_client.py is _async_client.py without async."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from conftest import SDK_ROOT

import quota_client

SOURCE = SDK_ROOT / "src" / "quota_client"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", SDK_ROOT / "tools" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def regenerated(base_url: str) -> dict[Path, str]:
    document: dict[str, Any] = httpx.get(f"{base_url}/openapi.json").json()
    files: dict[Path, str] = generator().generated(document)
    return files


@pytest.mark.parametrize("name", ["models.py", "_routes.py", "_sync_client.py"])
def test_generated_file_is_current(regenerated: dict[Path, str], name: str) -> None:
    committed = (SOURCE / name).read_text(encoding="utf-8")
    assert regenerated[SOURCE / name] == committed, (
        f"{name} is stale: run python sdk/python/tools/generate.py --openapi <url>/openapi.json"
    )


def test_the_installed_package_is_the_source_tree() -> None:
    installed = Path(quota_client.__file__).parent
    for source in SOURCE.glob("*.py"):
        assert (installed / source.name).read_text(encoding="utf-8") == source.read_text(
            encoding="utf-8"
        ), f"{source.name}: the venv's install is stale (scripts/lib/python-tools.sh)"
    assert (installed / "py.typed").exists()
