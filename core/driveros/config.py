"""The one place that reads the process environment and the files that configure providers.

Everything else receives an :class:`Environment` value. Sources, weakest first:

1. the user's config file, ``$XDG_CONFIG_HOME/driveros/env`` (``~/.config/driveros/env``),
   ``.env`` syntax;
2. the workspace's ``.env``, only when the user trusts the workspace (``driveros trust``);
3. the real environment variables;
4. flags, applied by the caller (``--provider``, ``--model``).

Every key and endpoint remembers its source, and a key is never sent to an endpoint from a
different source: such a provider carries an ``endpoint_conflict`` and building it fails with
a setup error (docs/security.md, "A repository's `.env` redirects the provider endpoint and
receives the user's key"). Nothing from any ``.env`` reaches the environment of a command:
:attr:`Environment.process_env` is the real process environment only.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from driveros._errors import ConfigError
from driveros._paths import user_config_dir

log = logging.getLogger(__name__)

ProviderName = Literal["openai", "openrouter", "xai", "ollama", "anthropic"]
#: Where a run's tools execute, and the container runtime of the docker tier (docs/sandbox.md).
SandboxKind = Literal["local", "docker"]
ContainerRuntime = Literal["runc", "runsc"]
#: The ``--approve`` modes a run accepts; ``interactive`` is ``ask`` on /dev/tty (an alias).
ApproveMode = Literal["ask", "interactive", "policy", "never"]
#: The run limits every front end starts from (``driveros.runs.RunOptions``; the agent's own
#: ``AgentConfig`` defaults to them too): model turns and wall-clock seconds per run.
MAX_ITERATIONS = 30
MAX_WALL_S = 900.0
#: Seconds a model's stream may wait for its first byte, and stay silent once started, before
#: the provider gives up (driveros.llm's defaults).
FIRST_BYTE_TIMEOUT_S = 60.0
IDLE_TIMEOUT_S = 60.0
#: Seconds an ``ask`` approval question waits for an answer before it counts as a denial.
ASK_TIMEOUT_S = 300.0
#: Where a setting came from, weakest first (see the module docstring).
Source = Literal["user", "workspace", "environment", "flag"]

#: The environment switches: every ``DRIVEROS_*`` variable driveros reads is named here and
#: read by this module only (:func:`switches`, :func:`load_environment`); the rest of driveros
#: receives the values. ``DRIVEROS_DIAGNOSTICS``, ``DRIVEROS_MEMORY_PATH`` and
#: ``DRIVEROS_CORPUS`` are configuration (user config file, a trusted workspace's ``.env``, the
#: environment); the others are read from the real process environment only, never a ``.env``.
DIAGNOSTICS_VAR = "DRIVEROS_DIAGNOSTICS"
MEMORY_PATH_VAR = "DRIVEROS_MEMORY_PATH"
CORPUS_VAR = "DRIVEROS_CORPUS"
STATE_DIR_VAR = "DRIVEROS_STATE_DIR"
SCRATCH_STRATEGY_VAR = "DRIVEROS_SCRATCH_STRATEGY"
SCRATCH_MAX_FILE_SIZE_VAR = "DRIVEROS_SCRATCH_MAX_FILE_SIZE"

#: The documented order in which ``Registry.from_env()`` adds providers.
PROVIDER_ORDER: tuple[ProviderName, ...] = ("anthropic", "openai", "openrouter", "xai", "ollama")

KEY_VARS: dict[ProviderName, str | None] = {
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "X_AI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "ollama": None,
}
MODEL_VARS: dict[ProviderName, str] = {
    "openai": "OPENAI_MODEL",
    "openrouter": "OPENROUTER_MODEL",
    "xai": "XAI_MODEL",
    "anthropic": "ANTHROPIC_MODEL",
    "ollama": "OLLAMA_MODEL",
}
URL_VARS: dict[ProviderName, str] = {
    "openai": "OPENAI_BASE_URL",
    "openrouter": "OPENROUTER_BASE_URL",
    "xai": "XAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "ollama": "OLLAMA_HOST",
}
#: Extra names whose values are secrets wherever they appear (redacted from events and logs).
SECRET_NAME_HINTS: tuple[str, ...] = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
#: The user's provider settings file inside the user's driveros config directory.
USER_ENV_FILE = "env"
#: A ``.env`` bigger than this is not read (it is not a configuration file).
_MAX_DOTENV_BYTES = 1 << 20
_DEFAULT_GITHUB_API = "https://api.github.com"


class ProviderEnv(BaseModel):
    """What the configuration says about one provider, and where each part came from."""

    model_config = ConfigDict(frozen=True)

    name: ProviderName
    api_key: SecretStr | None = None
    model: str | None = None
    #: The endpoint; None when unset or when it came from another source than the key.
    base_url: str | None = None
    key_source: Source | None = None
    url_source: Source | None = None
    #: Why a configured endpoint was not paired with the key (a setup error when used).
    endpoint_conflict: str | None = None

    @property
    def key_var(self) -> str | None:
        return KEY_VARS[self.name]

    @property
    def configured(self) -> bool:
        """Usable without more settings: its key is set (Ollama, keyless: its endpoint)."""
        return self.api_key is not None or (self.name == "ollama" and bool(self.base_url))


class Environment(BaseModel):
    """A frozen snapshot of the configuration-relevant environment."""

    model_config = ConfigDict(frozen=True)

    providers: dict[str, ProviderEnv] = Field(default_factory=dict)
    embed_model: str | None = None
    memory_path: str | None = None
    #: The dogfood corpus file (DRIVEROS_CORPUS); default: .driveros/corpus.jsonl in the repo.
    corpus_path: str | None = None
    #: GitHub access for ``driveros issue-bot --github`` (GITHUB_TOKEN, GITHUB_API_URL).
    github_token: SecretStr | None = None
    github_api_url: str = _DEFAULT_GITHUB_API
    secrets: tuple[SecretStr, ...] = ()
    #: Whether the workspace's ``.env`` was read as configuration (the workspace is trusted).
    workspace_trusted: bool = False
    #: Things the user should know about the configuration (printed by the CLI, logged).
    warnings: tuple[str, ...] = ()
    #: Every configuration variable, merged over the sources (for :meth:`get`).
    raw: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)
    #: The real process environment, without anything read from a file: what commands may
    #: start from (the sandbox narrows it further).
    process_env: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)

    def provider(self, name: str) -> ProviderEnv:
        if name not in KEY_VARS:
            raise ConfigError(
                f"unknown provider {name!r}; choose one of {', '.join(PROVIDER_ORDER)}",
                provider=name,
            )
        return self.providers.get(name) or ProviderEnv(name=name)

    def secret_values(self) -> list[str]:
        """Every secret value seen in the environment (for redaction), longest first."""
        values = {s.get_secret_value() for s in self.secrets}
        return sorted((v for v in values if len(v) >= 6), key=len, reverse=True)

    def get(self, name: str, default: str | None = None) -> str | None:
        """A raw variable, for the few settings that have no typed field yet."""
        return self.raw.get(name, default)

    @property
    def diagnostics_on(self) -> bool:
        """Whether runs may use the build-diagnostics feed: ``DRIVEROS_DIAGNOSTICS=off`` (or
        0/false/no) turns it off for every front end (CLI, language server, ACP)."""
        return _switched_on(self.raw.get(DIAGNOSTICS_VAR))


def _switched_on(value: str | None) -> bool:
    """An on/off switch: unset or empty is on; ``0``, ``off``, ``false``, ``no`` are off."""
    return (value or "on").strip().lower() not in ("0", "off", "false", "no")


class Switches(BaseModel):
    """The process-wide ``DRIVEROS_*`` switches of the real environment (never of a
    ``.env``): values as given, stripped; empty when unset. Their meaning belongs to the code
    that uses them (the state directory, the scratch copies)."""

    model_config = ConfigDict(frozen=True)

    #: ``DRIVEROS_STATE_DIR``: where driveros keeps its state (``driveros.state.state_dir``).
    state_dir: str = ""
    #: ``DRIVEROS_SCRATCH_STRATEGY``, lower-cased: how scratch copies are made (docs/scratch.md).
    scratch_strategy: str = ""
    #: ``DRIVEROS_SCRATCH_MAX_FILE_SIZE``: untracked files above it stay out of scratch copies.
    scratch_max_file_size: str = ""


def switches(environ: Mapping[str, str] | None = None) -> Switches:
    """The switches of ``environ``, the real environment (default: ``os.environ``, read now)."""
    env = os.environ if environ is None else environ
    return Switches(
        state_dir=env.get(STATE_DIR_VAR, "").strip(),
        scratch_strategy=env.get(SCRATCH_STRATEGY_VAR, "").strip().lower(),
        scratch_max_file_size=env.get(SCRATCH_MAX_FILE_SIZE_VAR, "").strip(),
    )


def user_env_file(environ: Mapping[str, str] | None = None) -> Path:
    """The user's provider settings file (``.env`` syntax)."""
    return user_config_dir(environ) / USER_ENV_FILE


def source_label(source: Source, *, workspace: Path | None = None) -> str:
    """How a source is named in messages."""
    match source:
        case "user":
            return "the user config file"
        case "workspace":
            return f"the workspace .env ({workspace / '.env'})" if workspace else "a workspace .env"
        case "environment":
            return "the environment"
        case "flag":
            return "a flag"


def _read_dotenv(path: Path, *, follow_symlinks: bool) -> dict[str, str]:
    """A ``.env`` file's assignments; {} when it is absent, not a regular file, or too big."""
    try:
        info = path.stat() if follow_symlinks else path.lstat()
    except OSError:
        return {}
    if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_DOTENV_BYTES:
        return {}
    from dotenv import dotenv_values  # lazy: keeps `import driveros` cheap

    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("cannot read %s: %s", path, exc)
        return {}
    return {k: v for k, v in values.items() if v is not None}


def _owned_and_private(path: Path) -> bool:
    """Whether ``path`` belongs to this user and nobody else may write it (or its directory)."""
    try:
        for node in (path.resolve(), path.resolve().parent):
            info = node.stat()
            if info.st_uid != os.getuid() or info.st_mode & 0o022:
                return False
    except OSError:
        return False
    return True


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(hint in upper for hint in SECRET_NAME_HINTS)


class _Layers:
    """The configuration sources, strongest last; a lookup remembers the source."""

    def __init__(self, layers: list[tuple[Source, Mapping[str, str]]]) -> None:
        self._layers = layers

    def find(self, name: str) -> tuple[str | None, Source | None]:
        for source, values in reversed(self._layers):
            value = values.get(name)
            if value:
                return value, source
        return None, None

    def merged(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for _source, values in self._layers:
            out.update({k: v for k, v in values.items() if v})
        return out


def _provider(name: ProviderName, layers: _Layers, workspace: Path) -> ProviderEnv:
    key_var = KEY_VARS[name]
    key, key_source = layers.find(key_var) if key_var else (None, None)
    url, url_source = layers.find(URL_VARS[name])
    model, _ = layers.find(MODEL_VARS[name])
    conflict = None
    if key and url and key_source != url_source:
        assert key_var is not None and key_source is not None and url_source is not None
        conflict = (
            f"{URL_VARS[name]} comes from {source_label(url_source, workspace=workspace)} but "
            f"{key_var} from {source_label(key_source, workspace=workspace)}: driveros never "
            "sends a key to an endpoint set somewhere else. Set both in the same place, or "
            f"remove {URL_VARS[name]} from {source_label(url_source, workspace=workspace)}"
        )
        url = None
    return ProviderEnv(
        name=name,
        api_key=SecretStr(key) if key else None,
        model=model,
        base_url=url,
        key_source=key_source if key else None,
        url_source=url_source if url else None,
        endpoint_conflict=conflict,
    )


def load_environment(
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    trusted: bool | None = None,
    user_file: Path | None = None,
) -> Environment:
    """The configuration for work in the workspace ``cwd`` (default: the working directory).

    ``environ`` is the real environment (default: ``os.environ``); ``trusted`` says whether
    the workspace's ``.env`` is configuration (None: ask the user's trust store);
    ``user_file`` replaces the user's config file (default: :func:`user_env_file`).
    """
    real = dict(os.environ if environ is None else environ)
    workspace = (Path.cwd() if cwd is None else cwd).absolute()
    if trusted is None:
        from driveros.trust import TrustStore

        trusted = TrustStore.default(real).is_trusted(workspace)
    warnings: list[str] = []
    settings_file = user_file or user_env_file(real)
    user_values = _read_dotenv(settings_file, follow_symlinks=True)
    if user_values and not _owned_and_private(settings_file):
        warnings.append(
            f"{settings_file} is ignored: it is writable by someone else or not yours "
            f"(chmod 600 {settings_file})"
        )
        user_values = {}
    # An untrusted workspace's .env is read for redaction only, never as configuration.
    dotenv = _read_dotenv(workspace / ".env", follow_symlinks=trusted)
    sources: list[tuple[Source, Mapping[str, str]]] = [("user", user_values)]
    if trusted:
        sources.append(("workspace", dotenv))
    sources.append(("environment", real))
    layers = _Layers(sources)
    providers = {name: _provider(name, layers, workspace) for name in PROVIDER_ORDER}
    token, token_source = layers.find("GITHUB_TOKEN")
    api_url, api_source = layers.find("GITHUB_API_URL")
    if token and api_url and token_source != api_source:
        assert token_source is not None and api_source is not None
        warnings.append(
            f"GITHUB_API_URL from {source_label(api_source, workspace=workspace)} ignored: "
            f"GITHUB_TOKEN comes from {source_label(token_source, workspace=workspace)}"
        )
        api_url = None
    if dotenv and not trusted and any(_is_config_name(k) for k in dotenv):
        warnings.append(
            f"{workspace / '.env'} is not read: the workspace is not trusted "
            f"(`driveros trust {workspace}` trusts it; keys can also live in the environment "
            f"or in {settings_file})"
        )
    secret_sources = (user_values, dotenv, real)
    secrets = tuple(
        SecretStr(v)
        for values in secret_sources
        for k, v in values.items()
        if v and is_secret_name(k)
    )
    merged = layers.merged()
    return Environment(
        providers=providers,
        embed_model=layers.find("MNEME_EMBED_MODEL")[0],
        memory_path=layers.find(MEMORY_PATH_VAR)[0],
        corpus_path=layers.find(CORPUS_VAR)[0],
        github_token=SecretStr(token) if token else None,
        github_api_url=api_url or _DEFAULT_GITHUB_API,
        secrets=secrets,
        workspace_trusted=trusted,
        warnings=tuple(warnings),
        raw=merged,
        process_env=real,
    )


def _is_config_name(name: str) -> bool:
    names = {v for v in KEY_VARS.values() if v} | set(URL_VARS.values()) | set(MODEL_VARS.values())
    return name in names or name.startswith(("DRIVEROS_", "MNEME_", "GITHUB_"))
