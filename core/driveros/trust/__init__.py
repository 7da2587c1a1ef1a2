"""Workspace trust: a workspace is untrusted until the user trusts it.

    store = TrustStore.default()      # $XDG_CONFIG_HOME/driveros/trusted-workspaces.json
    store.trust("~/src/project")      # what `driveros trust` does
    store.is_trusted(path)            # the path or a parent of it is trusted (resolved paths)
    store.revoke(path); store.entries()

What each state allows is documented in docs/security.md ("Workspace trust"): an untrusted
workspace's ``.env``, ``.driveros.toml`` and ``[tool.driveros]`` are input, never
configuration.
"""

from driveros.trust._store import (
    STORE_NAME,
    TrustedWorkspace,
    TrustError,
    TrustStore,
    broad_root,
    real_path,
)

__all__ = [
    "STORE_NAME",
    "TrustError",
    "TrustStore",
    "TrustedWorkspace",
    "broad_root",
    "real_path",
]
