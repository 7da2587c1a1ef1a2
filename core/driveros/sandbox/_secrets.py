"""The secret-file deny list: files the agent never reads unless the user allows them.

One rule for every reader: the fence (``read_file``, ``read_bytes``, ``edit``), ``search``
(the files are skipped and named as skipped) and the approval allowlist's file arguments
(through :func:`secret_path_reason`). Names are compared case-folded, so ``.ENV`` on a
case-insensitive filesystem is still ``.env``. See docs/sandbox.md, "Secret files".
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: File names (the last component) that hold secrets: a glob and why.
SECRET_NAMES: tuple[tuple[str, str], ...] = (
    (".env", "an environment file (.env*)"),
    (".env.*", "an environment file (.env*)"),
    (".envrc", "a direnv file"),
    ("*.env", "an environment file (*.env)"),
    ("*.pem", "a PEM key or certificate bundle"),
    ("*.key", "a private key"),
    ("*.p12", "a PKCS#12 key store"),
    ("*.pfx", "a PKCS#12 key store"),
    ("*.jks", "a Java key store"),
    ("*.keystore", "a key store"),
    ("*.ppk", "a PuTTY private key"),
    ("id_rsa*", "an SSH private key"),
    ("id_dsa*", "an SSH private key"),
    ("id_ecdsa*", "an SSH private key"),
    ("id_ed25519*", "an SSH private key"),
    ("id_xmss*", "an SSH private key"),
    (".netrc", "a .netrc (machine passwords)"),
    ("_netrc", "a .netrc (machine passwords)"),
    (".npmrc", "an .npmrc (registry tokens)"),
    (".yarnrc.yml", "a .yarnrc.yml (registry tokens)"),
    (".pypirc", "a .pypirc (index passwords)"),
    (".git-credentials", "a git credential store"),
    (".pgpass", "a PostgreSQL password file"),
    (".my.cnf", "a MySQL option file (passwords)"),
    (".htpasswd", "an htpasswd file"),
    (".dockercfg", "Docker registry credentials"),
    (".terraformrc", "Terraform credentials"),
    ("terraform.rc", "Terraform credentials"),
    ("*.tfvars", "Terraform variables (often credentials)"),
    ("*.tfstate", "Terraform state (holds secrets in clear)"),
    ("*.tfstate.backup", "Terraform state (holds secrets in clear)"),
    ("application_default_credentials.json", "Google Cloud credentials"),
    ("credentials.db", "Google Cloud credentials"),
    ("access_tokens.db", "Google Cloud credentials"),
    ("msal_token_cache.*", "Azure credentials"),
    ("accesstokens.json", "Azure credentials"),
    ("service-account*.json", "a cloud service-account key"),
)

#: Paths (matched against the path's trailing components) that hold secrets.
SECRET_PATHS: tuple[tuple[str, str], ...] = (
    (".aws/credentials", "AWS credentials"),
    (".aws/config", "AWS configuration (may hold credentials)"),
    (".docker/config.json", "Docker registry credentials"),
    (".kube/config", "Kubernetes credentials"),
    (".cargo/credentials", "Cargo registry token"),
    (".cargo/credentials.toml", "Cargo registry token"),
    (".gem/credentials", "RubyGems API key"),
    (".config/gh/hosts.yml", "GitHub CLI token"),
    (".config/hub", "GitHub token"),
    (".azure/*", "Azure credentials"),
    (".config/gcloud/*", "Google Cloud credentials"),
)

#: Directories whose whole content is secret (any depth below them).
SECRET_DIRS: tuple[tuple[str, str], ...] = (
    (".ssh", "an SSH directory"),
    (".gnupg", "a GnuPG directory"),
    ("legacy_credentials", "Google Cloud credentials"),
)

#: Committed templates that are not secrets: ``.env.example`` and friends stay readable.
TEMPLATE_NAMES: tuple[str, ...] = (
    ".env.example",
    ".env.sample",
    ".env.template",
    ".env.dist",
    ".env.defaults",
    "example.env",
    "sample.env",
    "template.env",
    "*.pem.example",
    "*.key.example",
)

#: Public halves of key pairs: never secret.
PUBLIC_SUFFIXES: tuple[str, ...] = (".pub",)


def _components(path: str) -> list[str]:
    normal = posixpath.normpath(path.replace("\\", "/")) if path else "."
    return [p.casefold() for p in normal.split("/") if p not in ("", ".")]


def _is_allowed(parts: Sequence[str], allow: Iterable[str]) -> bool:
    joined = "/".join(parts)
    for pattern in allow:
        folded = pattern.casefold().strip("/")
        if not folded:
            continue
        if fnmatch.fnmatchcase(joined, folded) or fnmatch.fnmatchcase(parts[-1], folded):
            return True
        if "/" in folded and any(
            fnmatch.fnmatchcase("/".join(parts[i:]), folded) for i in range(len(parts))
        ):
            return True
    return False


def _any_of(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regular expression that matches where ``fnmatchcase`` matches any of ``patterns``
    (a path is checked against the whole list at once: thousands of paths at a run's start)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


_TEMPLATES = _any_of(TEMPLATE_NAMES)
_NAMES = _any_of(p for p, _ in SECRET_NAMES)
#: SECRET_PATHS by depth (number of components), each as one expression.
_PATHS = {
    depth: _any_of(p for p, _ in SECRET_PATHS if p.count("/") + 1 == depth)
    for depth in {p.count("/") + 1 for p, _ in SECRET_PATHS}
}


def secret_path_reason(path: str, *, allow: Iterable[str] = ()) -> str | None:
    """Why ``path`` is a secret file the agent must not read, or None when it is not one.

    ``path`` may be workspace-relative or absolute, and may hold ``.`` and ``..`` (it is
    normalized textually; callers that follow symlinks check the resolved path too). ``allow``
    holds the user's overrides: globs matched against the whole path or its last name
    (``".env.test"``, ``"config/*.key"``); a path one of them matches is not a secret.
    """
    parts = _components(path)
    if not parts or parts[-1] == "..":
        return None
    name = parts[-1]
    if any(name.endswith(s) for s in PUBLIC_SUFFIXES) or _TEMPLATES.match(name):
        return None
    reason: str | None = None
    if _NAMES.match(name):  # which one, in the list's order
        reason = next(why for pattern, why in SECRET_NAMES if fnmatch.fnmatchcase(name, pattern))
    if reason is None and any(
        len(parts) >= depth and regex.match("/".join(parts[-depth:]))
        for depth, regex in _PATHS.items()
    ):
        for pattern, why in SECRET_PATHS:
            depth = pattern.count("/") + 1
            if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern):
                reason = why
                break
    if reason is None:
        for directory, why in SECRET_DIRS:
            if directory in parts[:-1]:
                reason = why
                break
    if reason is None or _is_allowed(parts, allow):
        return None
    return f"{reason}; secret files are not read by the agent (deny list, docs/sandbox.md)"


@dataclass(frozen=True)
class SecretFiles:
    """The deny list as one sandbox applies it: the defaults minus the user's ``allow`` globs."""

    allow: tuple[str, ...] = ()

    def reason(self, path: str) -> str | None:
        return secret_path_reason(path, allow=self.allow)
