"""Effective `gateway.*`: port, bind, mode and credentials (env over config where OpenClaw does).

Its own module so that commands which never talk to the gateway do not pay for its class.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from openclaw_cli.config.resolve import (
    _DIGITS,
    DEFAULT_GATEWAY_BIND,
    DEFAULT_GATEWAY_MODE,
    DEFAULT_GATEWAY_PORT,
    ENV_GATEWAY_PASSWORD,
    ENV_GATEWAY_PORT,
    ENV_GATEWAY_TOKEN,
    _model,
)
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class GatewaySettings(FrozenRecord):
    __slots__ = _fields = (
        "port",
        "port_source",
        "bind",
        "mode",
        "auth_mode",
        "token",
        "password",
        "custom_bind_host",
        "tls_enabled",
        "tls_cert_path",
        "tls_key_path",
    )
    _unshown = ("token", "password")
    port: int
    port_source: str  # "env" | "config" | "default"
    bind: str
    mode: str
    auth_mode: str | None  # None: no credential configured
    token: str | None  # (compared, never shown)
    password: str | None  # (compared, never shown)
    custom_bind_host: str | None  # gateway.customBindHost (`--bind custom`)
    tls_enabled: bool  # gateway.tls.{enabled,certPath,keyPath}
    tls_cert_path: str | None
    tls_key_path: str | None

    def __init__(
        self,
        port: int = DEFAULT_GATEWAY_PORT,
        port_source: str = "default",
        bind: str = DEFAULT_GATEWAY_BIND,
        mode: str = DEFAULT_GATEWAY_MODE,
        auth_mode: str | None = None,
        token: str | None = None,
        password: str | None = None,
        custom_bind_host: str | None = None,
        tls_enabled: bool = False,
        tls_cert_path: str | None = None,
        tls_key_path: str | None = None,
    ) -> None:
        self._assign(
            port,
            port_source,
            bind,
            mode,
            auth_mode,
            token,
            password,
            custom_bind_host,
            tls_enabled,
            tls_cert_path,
            tls_key_path,
        )


_ENV_REF = lazy_pattern(globals(), "_ENV_REF", r"\$\{([A-Z_][A-Z0-9_]*)\}")


def _secret(value: Any, env: Mapping[str, str]) -> str | None:
    """A configured secret: a string (with `${VAR}` substituted) or an env secret reference."""
    if isinstance(value, dict):
        if value.get("source") == "env" and isinstance(value.get("id"), str):
            found = env.get(value["id"], "").strip()
            return found or None
        return None  # file/exec/store references are resolved by OpenClaw itself, not by us
    if not isinstance(value, str):
        return None
    missing = False

    def substitute(match: re.Match[str]) -> str:
        nonlocal missing
        found = env.get(match.group(1))
        if found is None:
            missing = True
            return ""
        return found

    text = _ENV_REF.sub(substitute, value).strip()
    return None if missing or not text else text


def gateway_settings(cfg: Any = None, env: Mapping[str, str] | None = None) -> GatewaySettings:
    """Port: OPENCLAW_GATEWAY_PORT (valid 1–65535) over config over 18789. Token/password:
    config first, then OPENCLAW_GATEWAY_TOKEN / OPENCLAW_GATEWAY_PASSWORD."""
    env = os.environ if env is None else env
    g = _model(cfg).gateway
    port, source = DEFAULT_GATEWAY_PORT, "default"
    if g.port is not None:
        port, source = g.port, "config"
    raw_port = (env.get(ENV_GATEWAY_PORT) or "").strip()
    if _DIGITS.fullmatch(raw_port) and 1 <= int(raw_port) <= 65535:
        port, source = int(raw_port), "env"
    token = _secret(g.auth.token, env) or _secret(env.get(ENV_GATEWAY_TOKEN), {})
    password = _secret(g.auth.password, env) or _secret(env.get(ENV_GATEWAY_PASSWORD), {})
    auth_mode = g.auth.mode or ("token" if token else "password" if password else None)
    return GatewaySettings(
        port=port,
        port_source=source,
        bind=g.bind or DEFAULT_GATEWAY_BIND,
        mode=g.mode or DEFAULT_GATEWAY_MODE,
        auth_mode=auth_mode,
        token=token,
        password=password,
        custom_bind_host=(g.custom_bind_host or "").strip() or None,
        tls_enabled=g.tls.enabled is True,
        tls_cert_path=g.tls.cert_path,
        tls_key_path=g.tls.key_path,
    )
