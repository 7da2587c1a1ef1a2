"""driveros.config: sources, weakest first (user file, trusted .env, environment), and a key
never paired with an endpoint from another source."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros import ConfigError
from driveros._paths import user_config_dir
from driveros.config import load_environment
from driveros.llm import Registry, provider_from_env
from driveros.trust import TrustStore


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def write_env(path: Path, **values: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def test_config_untrusted_dotenv_is_not_configuration(ws: Path, tmp_path: Path) -> None:
    write_env(ws / ".env", OPENAI_API_KEY="sk-dotenv-123456", OPENAI_BASE_URL="http://evil")
    env = load_environment(cwd=ws, environ={"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    openai = env.provider("openai")
    assert openai.api_key is None and openai.base_url is None
    assert env.workspace_trusted is False
    assert "sk-dotenv-123456" in env.secret_values()  # still redacted
    assert "OPENAI_API_KEY" not in env.raw and env.process_env == {
        "XDG_CONFIG_HOME": str(tmp_path / "cfg")
    }
    (warning,) = env.warnings
    assert "not trusted" in warning and f"driveros trust {ws}" in warning


def test_config_trusted_dotenv_is_weaker_than_the_environment(ws: Path, tmp_path: Path) -> None:
    write_env(ws / ".env", OPENAI_MODEL="from-dotenv", DRIVEROS_DIAGNOSTICS="off", PATH="/evil")
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "OPENAI_MODEL": "from-env", "PATH": "/bin"}
    TrustStore(user_config_dir(environ)).trust(ws)
    env = load_environment(cwd=ws, environ=environ)
    assert env.workspace_trusted and env.provider("openai").model == "from-env"
    assert env.get("DRIVEROS_DIAGNOSTICS") == "off"
    assert env.process_env == environ  # nothing from the .env reaches commands


def test_config_sources_pair_keys_with_their_own_endpoints(ws: Path, tmp_path: Path) -> None:
    user = write_env(
        tmp_path / "cfg" / "driveros" / "env",
        OPENAI_API_KEY="sk-user-file-1234",
        OPENAI_BASE_URL="http://user-proxy/v1",
        ANTHROPIC_API_KEY="sk-ant-user-1234",
    )
    write_env(ws / ".env", ANTHROPIC_BASE_URL="http://evil/v1", XAI_BASE_URL="http://x/v1")
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "X_AI_API_KEY": "xai-env-123456"}
    env = load_environment(cwd=ws, environ=environ, trusted=True)
    openai = env.provider("openai")
    assert (openai.key_source, openai.url_source, openai.base_url) == (
        "user",
        "user",
        "http://user-proxy/v1",
    )
    assert openai.endpoint_conflict is None
    for name, url_var, key_var, url_from, key_from in (
        ("anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "the workspace .env", "the user"),
        ("xai", "XAI_BASE_URL", "X_AI_API_KEY", "the workspace .env", "the environment"),
    ):
        settings = env.provider(name)
        assert settings.base_url is None  # never handed to anyone with this key
        with pytest.raises(ConfigError) as caught:
            provider_from_env(name, env)
        message = str(caught.value)
        assert f"{url_var} comes from {url_from}" in message
        assert f"{key_var} from {key_from}" in message
    assert user.exists()


async def test_config_registry_leaves_out_a_provider_with_a_foreign_endpoint(
    ws: Path, tmp_path: Path
) -> None:
    write_env(ws / ".env", OPENAI_BASE_URL="http://evil/v1")
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "OPENAI_API_KEY": "sk-env-123456"}
    env = load_environment(cwd=ws, environ=environ, trusted=True)
    registry = await Registry.from_env(env, probe_ollama=False)
    assert "openai" not in registry.names()


def test_config_github_url_from_another_source_is_ignored(ws: Path, tmp_path: Path) -> None:
    write_env(ws / ".env", GITHUB_API_URL="http://evil")
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "GITHUB_TOKEN": "ghp_envtoken123"}
    env = load_environment(cwd=ws, environ=environ, trusted=True)
    assert env.github_api_url == "https://api.github.com"
    assert any("GITHUB_API_URL" in w for w in env.warnings)


def test_config_dotenv_that_is_not_a_small_regular_file_is_skipped(
    ws: Path, tmp_path: Path
) -> None:
    target = write_env(tmp_path / "elsewhere.env", OPENAI_API_KEY="sk-linked-123456")
    (ws / ".env").symlink_to(target)
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    untrusted = load_environment(cwd=ws, environ=environ)
    assert untrusted.secret_values() == []  # not even read when untrusted
    trusted = load_environment(cwd=ws, environ=environ, trusted=True)
    assert trusted.provider("openai").api_key is not None  # the user's own symlink


def test_config_user_file_writable_by_others_is_ignored(ws: Path, tmp_path: Path) -> None:
    user = write_env(tmp_path / "cfg" / "driveros" / "env", OPENAI_API_KEY="sk-user-file-1234")
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    assert load_environment(cwd=ws, environ=environ).provider("openai").api_key is not None
    user.chmod(0o666)
    env = load_environment(cwd=ws, environ=environ)
    assert env.provider("openai").api_key is None
    assert any("is ignored: it is writable by someone else" in w for w in env.warnings)


_SOURCES = ("user", "workspace", "environment", None)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key_from=st.sampled_from(_SOURCES),
    url_from=st.sampled_from(_SOURCES),
    trusted=st.booleans(),
    noise=st.dictionaries(
        st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True).filter(
            lambda k: not k.startswith("OPENAI_")
        ),
        st.from_regex(r"[a-z0-9:/._-]{1,30}", fullmatch=True),
        max_size=5,
    ),
)
def test_config_a_key_only_ever_meets_an_endpoint_from_its_own_source(
    tmp_path_factory: pytest.TempPathFactory,
    key_from: str | None,
    url_from: str | None,
    trusted: bool,
    noise: dict[str, str],
) -> None:
    """Wherever the key and the endpoint are set, the endpoint the provider gets came from the
    key's own source; an untrusted workspace's .env never configures anything, and nothing from
    any file reaches ``process_env``."""
    root = tmp_path_factory.mktemp("prop")
    ws = root / "ws"
    ws.mkdir()
    files: dict[str, dict[str, str]] = {"user": {}, "workspace": dict(noise), "environment": {}}
    if key_from:
        files[key_from]["OPENAI_API_KEY"] = f"sk-{key_from}-123456"
    if url_from:
        files[url_from]["OPENAI_BASE_URL"] = f"http://{url_from}.invalid/v1"
    write_env(root / "cfg" / "driveros" / "env", **files["user"])
    write_env(ws / ".env", **files["workspace"])
    environ = {"XDG_CONFIG_HOME": str(root / "cfg"), **files["environment"]}
    env = load_environment(cwd=ws, environ=environ, trusted=trusted)
    openai = env.provider("openai")
    assert env.process_env == environ
    if not trusted:
        assert not any(v for k, v in env.raw.items() if k in noise and k not in environ)
    if openai.base_url is not None and openai.api_key is not None:
        assert openai.key_source == openai.url_source
    if openai.api_key is not None:
        assert openai.key_source is not None
        assert openai.api_key.get_secret_value() == f"sk-{openai.key_source}-123456"
        assert trusted or openai.key_source != "workspace"
    if openai.base_url is not None:
        assert openai.base_url == f"http://{openai.url_source}.invalid/v1"
        assert trusted or openai.url_source != "workspace"
