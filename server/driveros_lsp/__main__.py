"""``driveros-lsp``: placeholder entry replaced by the language-server work (issue 6)."""

from __future__ import annotations

import sys


def main() -> None:
    sys.stderr.write("driveros-lsp: not built yet\n")
    sys.exit(1)


if __name__ == "__main__":
    main()
