"""driveros.diagnostics sits at the bottom: agent, intel, the CLI and the server build on it."""

from __future__ import annotations

import subprocess
import sys


def test_the_package_imports_no_other_driveros_package() -> None:
    code = (
        "import sys, driveros.diagnostics\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('driveros'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    packages = {m.split(".")[1] for m in out if m.count(".") >= 1}
    # only the package itself and driveros' top-level private modules (_errors, _unicode, ...)
    assert {p for p in packages if not p.startswith("_")} == {"diagnostics"}, out
