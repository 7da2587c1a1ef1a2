"""Row 10 of issue 13 (the file half): the agent does not read secret files.

A hostile repository (or a careless one) holds ``.env``, keys and cloud credentials; the model
asks to read, edit or search them, directly, under another case or through a symlink.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox, PathEscapeError, SecretFileError, secret_path_reason

SECRET_VALUE = "sk-live-0123456789abcdefghij"

SECRET_FILES = {
    ".env": f"OPENAI_API_KEY={SECRET_VALUE}\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n",
    ".env.local": f"TOKEN={SECRET_VALUE}\n",
    "prod.env": f"TOKEN={SECRET_VALUE}\n",
    ".ENV": f"TOKEN={SECRET_VALUE}\n",
    "deploy/server.key": f"{SECRET_VALUE}\n",
    "certs/site.pem": f"{SECRET_VALUE}\n",
    "keys/id_ed25519": f"{SECRET_VALUE}\n",
    "home/.ssh/config_backup": f"{SECRET_VALUE}\n",
    ".netrc": f"machine x login u password {SECRET_VALUE}\n",
    ".npmrc": f"//registry.npmjs.org/:_authToken={SECRET_VALUE}\n",
    ".pypirc": f"password = {SECRET_VALUE}\n",
    ".aws/credentials": f"aws_secret_access_key = {SECRET_VALUE}\n",
    ".docker/config.json": f'{{"auths": {{"x": {{"auth": "{SECRET_VALUE}"}}}}}}\n',
    ".config/gcloud/application_default_credentials.json": f"{SECRET_VALUE}\n",
    ".azure/msal_token_cache.json": f"{SECRET_VALUE}\n",
}

NOT_SECRET = {
    ".env.example": "OPENAI_API_KEY=your-key-here\n",
    "keys/id_ed25519.pub": "ssh-ed25519 AAAA public\n",
    "src/id_utils.py": "def ident(): return 1\n",
    "docs/environment.md": "set OPENAI_API_KEY in your shell\n",
    "src/keyboard.py": "KEYS = 1\n",
}


def test_secret_path_reason_names_the_deny_list() -> None:
    for path in SECRET_FILES:
        assert secret_path_reason(path) is not None, path
        assert secret_path_reason("/abs/ws/" + path) is not None, path
        assert secret_path_reason("./x/../" + path) is not None, path
    for path in NOT_SECRET:
        assert secret_path_reason(path) is None, path
    assert secret_path_reason(".Env.Production") is not None
    assert secret_path_reason(".env", allow=[".env"]) is None
    assert secret_path_reason("deploy/server.key", allow=["deploy/*.key"]) is None
    assert secret_path_reason("other/server.key", allow=["deploy/*.key"]) is not None


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for rel, text in {**SECRET_FILES, **NOT_SECRET}.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (ws / "notes.txt").symlink_to(".env")
    (ws / "linked").symlink_to(".aws")
    (ws / "README.md").write_text("nothing to see\n")
    return ws


async def test_sandbox_secrets_read_and_edit_refused(hostile: Path) -> None:
    async with LocalSandbox(hostile) as sandbox:
        for path in [*SECRET_FILES, "notes.txt", "linked/credentials", "./.aws/credentials"]:
            with pytest.raises(SecretFileError):
                await sandbox.read_file(path)
            with pytest.raises(SecretFileError):
                await sandbox.read_bytes(path)
            # edit would be an oracle ("old string not found"): refused before reading
            with pytest.raises((SecretFileError, PathEscapeError)):  # links: never edited
                await sandbox.edit(path, "sk-live-0", "x")
        for path, text in NOT_SECRET.items():
            assert await sandbox.read_file(path) == text


async def test_sandbox_secrets_search_skips_and_reports(hostile: Path) -> None:
    async with LocalSandbox(hostile, base_env={"PATH": "/usr/bin:/bin"}) as with_rg:
        for where in (".", ".aws", "deploy", "keys", "certs", "linked"):
            found = await with_rg.search("sk-live|secret", path=where)
            assert all(SECRET_VALUE not in m.text for m in found), (where, found)
            assert all(secret_path_reason(m.path) is None for m in found)
        # every secret file ripgrep would have opened is named, match or not
        everything = await with_rg.search("zzz-no-such-text")
        assert {"deploy/server.key", "certs/site.pem", "keys/id_ed25519", "prod.env"} <= set(
            everything.skipped
        )
        assert "keys/id_ed25519.pub" not in everything.skipped
        in_aws = await with_rg.search("aws", path=".aws")
        assert in_aws.skipped == (".aws/credentials",) and not list(in_aws)
    async with LocalSandbox(hostile, base_env={"PATH": "/nonexistent"}) as fallback:
        for where in (".", ".aws", "deploy", "keys"):
            found = await fallback.search("sk-live", path=where)
            assert all(SECRET_VALUE not in m.text for m in found), (where, found)
        assert "deploy/server.key" in (await fallback.search("x")).skipped


async def test_sandbox_secrets_user_override(hostile: Path) -> None:
    async with LocalSandbox(hostile, allow_secret_files=["deploy/*.key", ".env.local"]) as box:
        assert SECRET_VALUE in await box.read_file("deploy/server.key")
        assert SECRET_VALUE in await box.read_file(".env.local")
        with pytest.raises(SecretFileError):
            await box.read_file(".env")
