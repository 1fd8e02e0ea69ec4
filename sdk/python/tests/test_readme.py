"""The README's example runs as written, against a tenant of its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable

from conftest import SDK_ROOT, Tenant


def test_the_readme_example_works(new_tenant: Callable[[], Tenant], base_url: str) -> None:
    readme = (SDK_ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install ./sdk/python" in readme
    example = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)[0]
    tenant = new_tenant()  # the example names its resource and plan: a tenant of its own
    env = {**os.environ, "QUOTA_API_KEY": tenant.key, "QUOTA_BASE_URL": base_url}
    done = subprocess.run(
        [sys.executable, "-c", example], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True 900", "420"]
