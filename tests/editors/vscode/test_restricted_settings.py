"""Issue 27 row 6: a repository's ``.vscode/settings.json`` cannot loosen driveros in Restricted
Mode. Every VS Code setting whose name says it chooses the tier, runtime, network, approval,
untrusted mode, provider, model, an endpoint, memory or the cost cap is in
``restrictedConfigurations`` (or can only be set by the user: ``machine``/``application``
scope); the list is derived from the names, so a new setting is caught. docs/vscode.md says
which settings a workspace may set, in agreement with package.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "editors" / "vscode" / "package.json"
DOC = ROOT / "docs" / "vscode.md"

#: Words in a setting's name that mean a workspace must not choose it.
GUARDED = {
    "sandbox",
    "tier",
    "runtime",
    "network",
    "approval",
    "approve",
    "untrusted",
    "trust",
    "trusted",
    "provider",
    "model",
    "endpoint",
    "url",
    "host",
    "base",
    "key",
    "memory",
    "cost",
    "path",
}
USER_ONLY_SCOPES = {"machine", "application"}


def _words(name: str) -> set[str]:
    """``driveros.approvalTimeoutS`` -> {approval, timeout, s}."""
    tail = name.removeprefix("driveros.")
    return {w.lower() for w in re.findall(r"[a-z]+|[A-Z][a-z]*", tail)}


def _manifest() -> tuple[dict[str, dict[str, object]], list[str]]:
    pkg = json.loads(PACKAGE.read_text(encoding="utf-8"))
    props = pkg["contributes"]["configuration"]["properties"]
    restricted = pkg["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    return props, restricted


def test_every_setting_that_loosens_driveros_is_restricted_or_user_only() -> None:
    props, restricted = _manifest()
    guarded = sorted(name for name in props if _words(name) & GUARDED)
    assert "driveros.sandbox" in guarded and "driveros.approval" in guarded  # the rule bites
    loose = [
        name
        for name in guarded
        if name not in restricted and props[name].get("scope") not in USER_ONLY_SCOPES
    ]
    assert loose == [], f"settings a repository could choose in Restricted Mode: {loose}"
    assert set(restricted) <= set(props), "restrictedConfigurations names undeclared settings"


def test_the_issue_rows_settings_are_restricted() -> None:
    _, restricted = _manifest()
    for name in ("sandbox", "untrusted", "network", "approval", "runtime", "provider", "model"):
        assert f"driveros.{name}" in restricted, name


def test_docs_say_which_settings_a_workspace_may_set() -> None:
    props, restricted = _manifest()
    text = DOC.read_text(encoding="utf-8")
    start = text.index("**What a workspace may set.**")
    paragraph = text[start : text.index("\n\n", start)]
    cannot, may = paragraph.split("It may set", 1)
    may = may.split("Keys and endpoints", 1)[0]
    names = re.compile(r"`(driveros\.[A-Za-z.]+)`")
    fix = 'list it in docs/vscode.md, "What a workspace may set"'
    assert set(names.findall(cannot)) == set(restricted), f"restricted settings differ: {fix}"
    unlisted = set(props) - set(restricted) - set(names.findall(may))
    assert not unlisted, f"{sorted(unlisted)}: say whether a workspace may set it ({fix})"
    assert set(names.findall(may)) <= set(props) - set(restricted)
