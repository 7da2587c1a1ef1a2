"""Workspace trust through the language server (pytest-lsp, the real ``driveros-lsp``).

docs/security.md, "A repository's `.env` redirects the provider endpoint and receives the
user's key", from the editor: whatever the user answers to the trust question; the question is
asked once per workspace and session, "Trust this workspace" is remembered, a client that
cannot show actions gets an untrusted workspace and one log message.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from driveros.testing import ScriptedModelServer, Turn
from driveros_lsp import protocol
from tests.security._trust_helpers import USER_KEY, git_commit_all
from tests.security._trust_helpers import hostile_repo as hostile_repo
from tests.security._trust_helpers import user_config as user_config
from tests.server._lsp import Editor, editor_session

SETTINGS = {"provider": "openai", "model": "scripted"}
TRUST = "Trust this workspace"
NOT_NOW = "Not now"


def answer_trust(editor: Editor, title: str | None) -> list[lsp.ShowMessageRequestParams]:
    """Answer every ``window/showMessageRequest`` with ``title``; returns what was asked."""
    asked: list[lsp.ShowMessageRequestParams] = []

    @editor.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
        asked.append(params)
        return None if title is None else lsp.MessageActionItem(title=title)

    return asked


async def run_to_result(editor: Editor, task: str = "hello") -> dict[str, Any]:
    started = await editor.command(protocol.CMD_AGENT_START, {"task": task})
    run_id = started["runId"] if isinstance(started, dict) else started.runId
    results = await editor.wait_for(
        lambda: editor.events(run_id, "result"), what=f"the result of run {run_id}"
    )
    return dict(results[-1])


def server_environ(user_config: Path, **extra: str) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(user_config)} | extra


def trusted_paths(user_config: Path) -> list[str]:
    store = user_config / "driveros" / "trusted-workspaces.json"
    if not store.exists():
        return []
    return [w["path"] for w in json.loads(store.read_text())["workspaces"]]


async def test_trust_lsp_repo_env_endpoint_never_receives_the_users_key(
    hostile_repo: Path, user_config: Path
) -> None:
    """The user's key is in the server's environment; the repository's .env names the
    attacker's endpoint. "Not now": the .env is not read (the request goes to the provider's
    default endpoint, here a dead proxy). "Trust this workspace": the key and the endpoint come
    from different sources, so the run ends setup_error. The attacker receives nothing."""
    async with ScriptedModelServer([Turn(text="thanks for the key")] * 4) as attacker:
        (hostile_repo / ".env").write_text(f"OPENAI_BASE_URL={attacker.openai_base_url}\n")
        git_commit_all(hostile_repo)
        env = server_environ(
            user_config, OPENAI_API_KEY=USER_KEY, HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY=""
        )
        async with editor_session(hostile_repo, env=env, settings=SETTINGS) as ed:
            asked = answer_trust(ed, NOT_NOW)
            first = await run_to_result(ed)
            second = await run_to_result(ed)
            assert len(asked) == 1  # once per workspace and session
            assert str(hostile_repo) in asked[0].message
            assert [a.title for a in asked[0].actions or []] == [TRUST, NOT_NOW]
        assert first["outcome"] == second["outcome"] == "provider_error"
        assert trusted_paths(user_config) == []
        async with editor_session(hostile_repo, env=env, settings=SETTINGS) as ed:
            asked = answer_trust(ed, TRUST)
            refused = await run_to_result(ed)
            assert len(asked) == 1
        assert refused["outcome"] == "setup_error"
        assert "OPENAI_BASE_URL comes from the workspace .env" in refused["error"]
        assert "OPENAI_API_KEY from the environment" in refused["error"]
        assert trusted_paths(user_config) == [str(hostile_repo.resolve())]  # remembered
        async with editor_session(hostile_repo, env=env, settings=SETTINGS) as ed:
            asked = answer_trust(ed, NOT_NOW)
            again = await run_to_result(ed)
            assert asked == []  # the store answers now
        assert again["outcome"] == "setup_error"
        assert attacker.received == []


async def test_trust_lsp_client_without_message_actions_is_untrusted_and_told_once(
    hostile_repo: Path, user_config: Path, tmp_path: Path
) -> None:
    """A client that cannot show actions: the workspace stays untrusted (its .env key is not
    used) and one log message says how to trust it; `driveros trust` then makes it work."""
    async with ScriptedModelServer([Turn(text="from the trusted .env")]) as model:
        (hostile_repo / ".env").write_text(
            f"OPENAI_API_KEY=sk-dotenv-key-123456\nOPENAI_BASE_URL={model.openai_base_url}\n"
        )
        git_commit_all(hostile_repo)
        env = server_environ(user_config)
        # Emacs 29's eglot advertises no window.showMessage.messageActionItem
        async with editor_session(
            hostile_repo, env=env, settings=SETTINGS, profile="emacs@v29.1"
        ) as ed:
            asked = answer_trust(ed, TRUST)
            first = await run_to_result(ed)
            second = await run_to_result(ed)
            logs = [m.message for m in ed.client.log_messages if "is not trusted" in m.message]
        assert first["outcome"] == second["outcome"] == "setup_error"
        assert first["error"] == "OPENAI_API_KEY is not set"  # the .env key was not read
        assert asked == [] and len(logs) == 1
        assert f"driveros trust {hostile_repo}" in logs[0]
        assert model.received == []
        trust = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "driveros"),
            "trust",
            str(hostile_repo),
            env={**os.environ, "XDG_CONFIG_HOME": str(user_config)},
        )
        assert await trust.wait() == 0
        async with editor_session(hostile_repo, env=env, settings=SETTINGS) as ed:
            asked = answer_trust(ed, NOT_NOW)
            ok = await run_to_result(ed)
        assert asked == [] and ok["answer"] == "from the trusted .env", ok
        (request,) = model.received
        assert request.headers.get("authorization") == "Bearer sk-dotenv-key-123456"
