"""How a provider talks HTTP: the settings every adapter shares, as one value.

The presets (``openaicompat.openai(...)``, ``anthropic.claude(...)``, ``provider_from_env``)
take these as keyword overrides and build an :class:`HTTPSettings`; the adapter classes take
the value itself (``settings=``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from driveros.config import FIRST_BYTE_TIMEOUT_S, IDLE_TIMEOUT_S
from driveros.llm._retry import RetryPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class HTTPSettings:
    """The HTTP settings of one provider (docs/llm.md, *Stalls* and *Timeouts*).

    ``timeout``: seconds for connect, read, write and pool alike (None: the defaults, a
    600 s read backstop). ``retry``: the policy (None: :class:`RetryPolicy`'s defaults).
    ``first_byte_timeout``/``idle_timeout``: a stream's two stall clocks in seconds (None
    turns one off; the provider refuses anything but a positive number or None).
    ``headers``: extra headers sent with every request.
    """

    timeout: float | None = None
    retry: RetryPolicy | None = None
    #: Seconds a stream may wait, after sending the request, for the first byte of the body.
    first_byte_timeout: float | None = FIRST_BYTE_TIMEOUT_S
    #: Seconds a stream may stay silent once it has started (keep-alive comments count).
    idle_timeout: float | None = IDLE_TIMEOUT_S
    headers: Mapping[str, str] | None = None


#: The settings of a provider built without any.
DEFAULT_HTTP = HTTPSettings()
