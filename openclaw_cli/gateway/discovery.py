"""Which Gateway the CLI talks to, with which credentials and how TLS is verified (spec D20),
resolved as OpenClaw 2026.9.6 does:

- URL: `--url` > `OPENCLAW_GATEWAY_URL` > `gateway.remote.url` (when `gateway.mode` is "remote") >
  `ws://127.0.0.1:<port>` (`wss://` with `gateway.tls.enabled`).
- Port: `OPENCLAW_GATEWAY_PORT` (`N`, `host:N`, `[v6]:N`) > `gateway.port` > the port derived from
  the profile (`dev`: 19001, another name: 20000 + FNV-1a(name) % 40000) > 18789.
- Credentials: `--token`/`--password` only, when given. A URL override (`--url`) needs them; with
  `OPENCLAW_GATEWAY_URL`, the env `OPENCLAW_GATEWAY_TOKEN`/`_PASSWORD` also do (config
  credentials are never sent to an overridden URL). Local mode: `gateway.auth.token|password` >
  env > `gateway.remote.token|password` (when no local one is configured). Remote mode:
  `gateway.remote.token` > env token > `gateway.auth.token`; env password > remote > local.
- Plaintext `ws://` is allowed to loopback only; `OPENCLAW_ALLOW_INSECURE_PRIVATE_WS=1` also
  allows private addresses and host names (never a public IP literal).
- `wss://` verification: `gateway.remote.tlsFingerprint` (remote mode, URL from config or env) or,
  for the local loopback Gateway with `gateway.tls.enabled`, the SHA-256 of its certificate file
  (`gateway.tls.certPath`, default `<state>/gateway/tls/gateway-cert.pem`) pins the leaf
  certificate; otherwise the system trust store, plus the CA bundle in `NODE_EXTRA_CA_CERTS`
  (the variable OpenClaw's Node runtime reads) when set, with host-name checking.

Pure: reads only the config, the environment and (for a local TLS pin) one certificate file.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from typing import Any

from openclaw_cli.errors import ConfigError, GatewayCredentialsRequiredError, GatewaySecurityError, UsageError
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import FrozenRecord

DEFAULT_PORT = 18789
DEV_PROFILE_PORT = 19001
ENV_URL = "OPENCLAW_GATEWAY_URL"
ENV_PORT = "OPENCLAW_GATEWAY_PORT"
ENV_TOKEN = "OPENCLAW_GATEWAY_TOKEN"
ENV_PASSWORD = "OPENCLAW_GATEWAY_PASSWORD"
ENV_ALLOW_PRIVATE_WS = "OPENCLAW_ALLOW_INSECURE_PRIVATE_WS"
ENV_EXTRA_CA = "NODE_EXTRA_CA_CERTS"

SOURCE_CLI = "cli --url"
SOURCE_ENV = "env OPENCLAW_GATEWAY_URL"
SOURCE_REMOTE = "config gateway.remote.url"
SOURCE_LOCAL = "local loopback"
SOURCE_REMOTE_MISSING = "missing gateway.remote.url (fallback local)"

_PROFILE_NAME = lazy_pattern(globals(), "_PROFILE_NAME", r"[a-z0-9][a-z0-9_-]{0,63}", re.IGNORECASE)
_HEX_FINGERPRINT = lazy_pattern(globals(), "_HEX_FINGERPRINT", r"[0-9a-f]{64}", re.IGNORECASE)
_COLON_FINGERPRINT = lazy_pattern(
    globals(), "_COLON_FINGERPRINT", r"[0-9a-f]{2}(?::[0-9a-f]{2}){31}", re.IGNORECASE
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")  # Tailscale addresses


class TlsPolicy(FrozenRecord):
    """How a `wss://` server certificate is checked: a pinned leaf (`fingerprint`, SHA-256 hex,
    no host-name check, as OpenClaw) or the trust store plus `ca_file`."""

    __slots__ = _fields = ("fingerprint", "ca_file", "source")
    fingerprint: str | None
    ca_file: str | None
    source: str

    def __init__(
        self, fingerprint: str | None = None, ca_file: str | None = None, source: str = "system trust store"
    ) -> None:
        self._assign(fingerprint, ca_file, source)


class GatewayTarget(FrozenRecord):
    __slots__ = _fields = (
        "url",
        "url_source",
        "mode",
        "config_path",
        "host",
        "port",
        "secure",
        "bind_detail",
        "remote_fallback_note",
        "token",
        "password",
        "auth_mode",
        "url_override",
        "tls",
    )
    _unshown = ("token", "password")
    url: str
    url_source: str
    mode: str  # "local" | "remote": gateway.mode
    config_path: str
    host: str
    port: int
    secure: bool
    bind_detail: str | None
    remote_fallback_note: str | None
    token: str | None  # (compared, never shown)
    password: str | None  # (compared, never shown)
    auth_mode: str | None  # gateway.auth.mode as configured
    url_override: str | None  # "cli" | "env" when the URL was overridden
    tls: TlsPolicy | None

    def __init__(
        self,
        url: str,
        url_source: str,
        mode: str,
        config_path: str,
        host: str,
        port: int,
        secure: bool,
        bind_detail: str | None = None,
        remote_fallback_note: str | None = None,
        token: str | None = None,
        password: str | None = None,
        auth_mode: str | None = None,
        url_override: str | None = None,
        tls: TlsPolicy | None = None,
    ) -> None:
        self._assign(
            url,
            url_source,
            mode,
            config_path,
            host,
            port,
            secure,
            bind_detail,
            remote_fallback_note,
            token,
            password,
            auth_mode,
            url_override,
            tls,
        )

    @property
    def has_credentials(self) -> bool:
        return bool(self.token or self.password)

    @property
    def loopback(self) -> bool:
        return is_loopback_host(self.host)

    def details_message(self) -> str:
        """OpenClaw's connection-details block (the lines under every transport error)."""
        lines = [f"Gateway target: {self.url}", f"Source: {self.url_source}", f"Config: {self.config_path}"]
        if self.bind_detail:
            lines.append(self.bind_detail)
        if self.remote_fallback_note:
            lines.append(self.remote_fallback_note)
        return "\n".join(lines)

    def gateway_block(self) -> dict[str, Any]:
        """The `gateway {url, urlSource, bindDetail?, remoteFallbackNote?}` of a transport error."""
        block: dict[str, Any] = {"url": self.url, "urlSource": self.url_source}
        if self.bind_detail:
            block["bindDetail"] = self.bind_detail
        if self.remote_fallback_note:
            block["remoteFallbackNote"] = self.remote_fallback_note
        return block

    def credentials_error(self, method: str) -> GatewayCredentialsRequiredError | None:
        """Why `method` cannot be sent with what we hold (None: it can). OpenClaw's two refusals:
        an overridden URL without explicit credentials, and a token/password Gateway without one."""
        if self.has_credentials:
            return None
        if self.url_override:
            hint = (
                "Set OPENCLAW_GATEWAY_TOKEN or OPENCLAW_GATEWAY_PASSWORD alongside OPENCLAW_GATEWAY_URL; config "
                "credentials are intentionally not reused."
                if self.url_override == "env"
                else "For the default local or SSH-tunneled Gateway, remove --url to use the configured target."
            )
            return GatewayCredentialsRequiredError(
                "\n".join(
                    [
                        "gateway url override requires explicit credentials",
                        "Fix: pass --token or --password with --url.",
                        hint,
                        f"Config: {self.config_path}",
                    ]
                )
            )
        if self.auth_mode == "none":
            return None
        return GatewayCredentialsRequiredError(
            "\n".join(
                [
                    f"gateway {method} requires credentials before opening a websocket",
                    "Fix: configure gateway.auth token/password, pair this device, or pass --token/--password.",
                    f"Config: {self.config_path}",
                ]
            )
        )


# ---- small parsers ------------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def parse_port_env(raw: str | None) -> int | None:
    """`OPENCLAW_GATEWAY_PORT` as OpenClaw reads it: `N`, `host:N` or `[v6]:N`, 1–65535."""
    text = (raw or "").strip()
    if not text:
        return None
    digits: str | None = None
    if text.isdigit():
        digits = text
    elif (m := re.fullmatch(r"\[[^\]]+\]:(\d+)", text)) is not None:
        digits = m.group(1)
    elif text.count(":") == 1 and text.index(":") > 0 and text.split(":", 1)[1].isdigit():
        digits = text.split(":", 1)[1]
    if digits is None or not digits.isascii():
        return None
    port = int(digits)
    return port if 1 <= port <= 65535 else None


def profile_port(profile: str | None) -> int | None:
    """The Gateway port a named profile implies (None for no profile / "default" / an invalid name)."""
    name = (profile or "").strip()
    if not name or name.lower() == "default" or not _PROFILE_NAME.fullmatch(name):
        return None
    if name == "dev":
        return DEV_PROFILE_PORT
    h = 2166136261  # FNV-1a, 32 bit, over the UTF-8 bytes
    for byte in name.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return 20000 + h % 40000


def normalize_fingerprint(raw: Any) -> str | None:
    """A SHA-256 certificate fingerprint (`ab12…`, `AB:12:…`, optional `sha256:`) as 64 lowercase
    hex digits; None when it is not one."""
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if text.lower().startswith("sha256:"):
        text = text[7:]
    if _HEX_FINGERPRINT.fullmatch(text):
        return text.lower()
    if _COLON_FINGERPRINT.fullmatch(text):
        return text.replace(":", "").lower()
    return None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def is_loopback_host(host: str) -> bool:
    name = host.lower().rstrip(".")
    if name == "localhost":
        return True
    ip = _ip(name)
    if ip is None:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def plaintext_allowed(host: str, env: Mapping[str, str]) -> bool:
    """`ws://` to `host`: loopback always; with OPENCLAW_ALLOW_INSECURE_PRIVATE_WS=1 also private,
    link-local and Tailscale addresses and host names (a public IP literal never)."""
    if is_loopback_host(host):
        return True
    if env.get(ENV_ALLOW_PRIVATE_WS) != "1":
        return False
    ip = _ip(host)
    if ip is None:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        (ip.is_private or ip.is_link_local or ip in _CGNAT) and not ip.is_multicast and not ip.is_unspecified
    )


def parse_gateway_url(raw: str, *, origin: str) -> tuple[str, str, int, bool]:
    """(url, host, port, secure) of a Gateway URL; `http(s)://` is taken as `ws(s)://`. A bad URL is
    a usage error (a config error when it came from the config file)."""
    from urllib.parse import urlsplit

    def bad(reason: str) -> Exception:
        text = f"Invalid Gateway URL {raw!r} ({origin}): {reason}. Example: ws://127.0.0.1:18789"
        return ConfigError(text) if origin.startswith("config") else UsageError(text)

    text = raw.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise bad(str(exc)) from None
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme.lower(), parts.scheme.lower())
    if scheme not in ("ws", "wss"):
        raise bad("it must start with ws:// or wss://")
    host = parts.hostname or ""
    if not host:
        raise bad("it has no host")
    if any(ch.isspace() for ch in text):
        raise bad("it contains white space")
    if scheme != parts.scheme:
        text = scheme + text[len(parts.scheme) :]
    secure = scheme == "wss"
    return text, host, port or (443 if secure else 80), secure


def _raw_config(config: Any) -> dict[str, Any]:
    raw = getattr(config, "raw", config)
    return raw if isinstance(raw, dict) else {}


def _section(raw: dict[str, Any], *path: str) -> dict[str, Any]:
    node: Any = raw
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _config_text(section: dict[str, Any], key: str, where: str) -> str | None:
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where}.{key}: expected a string, got {type(value).__name__}")
    return value.strip() or None


# ---- resolution ---------------------------------------------------------------------------------


def resolve_port(config: Any, env: Mapping[str, str], profile: str | None) -> int:
    env_port = parse_port_env(env.get(ENV_PORT))
    if env_port is not None:
        return env_port
    model = getattr(config, "model", None)
    configured = getattr(getattr(model, "gateway", None), "port", None)
    if configured is None:
        value = _section(_raw_config(config), "gateway").get("port")
        configured = (
            value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536 else None
        )
    if configured:
        return int(configured)
    return profile_port(profile if profile is not None else env.get("OPENCLAW_PROFILE")) or DEFAULT_PORT


def _credentials(
    raw: dict[str, Any],
    env: Mapping[str, str],
    *,
    remote: bool,
    explicit_token: str | None,
    explicit_password: str | None,
    url_override: str | None,
) -> tuple[str | None, str | None]:
    from openclaw_cli.config.resolve_gateway import _secret

    if explicit_token or explicit_password:
        return explicit_token, explicit_password
    env_token = _secret(env.get(ENV_TOKEN), {})
    env_password = _secret(env.get(ENV_PASSWORD), {})
    if url_override == "cli":
        return None, None
    if url_override == "env":
        return env_token, env_password
    auth = _section(raw, "gateway", "auth")
    rem = _section(raw, "gateway", "remote")
    local_token, local_password = _secret(auth.get("token"), env), _secret(auth.get("password"), env)
    remote_token, remote_password = _secret(rem.get("token"), env), _secret(rem.get("password"), env)
    if remote:
        return (remote_token or env_token or local_token), (env_password or remote_password or local_password)
    token = local_token or env_token or (None if "token" in auth else remote_token)
    password = local_password or env_password or (None if "password" in auth else remote_password)
    return token, password


def _tls_policy(
    raw: dict[str, Any], env: Mapping[str, str], *, url_source: str, remote: bool, state_dir: Any
) -> TlsPolicy:
    if remote and url_source in (SOURCE_REMOTE, SOURCE_ENV):
        pin = _section(raw, "gateway", "remote").get("tlsFingerprint")
        if pin is not None:
            normalized = normalize_fingerprint(pin)
            if normalized is None:
                raise ConfigError(
                    "gateway.remote.tlsFingerprint: expected a SHA-256 certificate fingerprint "
                    "(64 hex digits, colons allowed), for example sha256:AB:CD:…"
                )
            return TlsPolicy(fingerprint=normalized, source="gateway.remote.tlsFingerprint")
    tls = _section(raw, "gateway", "tls")
    if url_source in (SOURCE_LOCAL, SOURCE_REMOTE_MISSING) and tls.get("enabled") is True:
        fingerprint = _certificate_fingerprint(tls.get("certPath"), state_dir)
        if fingerprint:
            return TlsPolicy(fingerprint=fingerprint, source="gateway.tls.certPath")
    ca_file = _text(env.get(ENV_EXTRA_CA))
    return TlsPolicy(
        ca_file=ca_file, source=f"system trust store + {ENV_EXTRA_CA}" if ca_file else "system trust store"
    )


def _certificate_fingerprint(cert_path: Any, state_dir: Any) -> str | None:
    """SHA-256 of the first certificate in the local Gateway's PEM file (None when unreadable)."""
    import hashlib
    import ssl
    from pathlib import Path

    if isinstance(cert_path, str) and cert_path.strip():
        path = Path(os.path.expanduser(cert_path.strip()))
    else:
        path = Path(state_dir) / "gateway" / "tls" / "gateway-cert.pem"
    try:
        text = path.read_text(encoding="ascii", errors="replace")
        begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
        start = text.index(begin)
        der = ssl.PEM_cert_to_DER_cert(text[start : text.index(end, start) + len(end)])
    except (OSError, ValueError):
        return None
    return hashlib.sha256(der).hexdigest()


def discover(
    *,
    paths: Any,
    config: Any,
    url: str | None = None,
    token: str | None = None,
    password: str | None = None,
    env: Mapping[str, str] | None = None,
) -> GatewayTarget:
    """The Gateway target for this state dir and these flags. Raises UsageError/ConfigError for an
    unusable URL and GatewaySecurityError for plaintext to a non-loopback host."""
    env = os.environ if env is None else env
    raw = _raw_config(config)
    gateway = _section(raw, "gateway")
    mode = "remote" if gateway.get("mode") == "remote" else "local"
    config_path = str(getattr(paths, "config_path", ""))
    cli_url, env_url = _text(url), _text(env.get(ENV_URL))
    remote_url = (
        _config_text(_section(raw, "gateway", "remote"), "url", "gateway.remote")
        if mode == "remote"
        else None
    )
    port = resolve_port(config, env, getattr(paths, "profile", None))
    tls_enabled = _section(raw, "gateway", "tls").get("enabled") is True
    local_url = f"{'wss' if tls_enabled else 'ws'}://127.0.0.1:{port}"
    override = "cli" if cli_url else "env" if env_url else None
    chosen = cli_url or env_url or remote_url or local_url
    if cli_url:
        source = SOURCE_CLI
    elif env_url:
        source = SOURCE_ENV
    elif remote_url:
        source = SOURCE_REMOTE
    elif mode == "remote":
        source = SOURCE_REMOTE_MISSING
    else:
        source = SOURCE_LOCAL
    text, host, real_port, secure = parse_gateway_url(chosen, origin=source)
    bind = gateway.get("bind") if isinstance(gateway.get("bind"), str) else "loopback"
    bind_detail = f"Bind: {bind}" if override is None and remote_url is None else None
    fallback_note = (
        (
            "Warn: gateway.mode=remote but gateway.remote.url is missing; set gateway.remote.url or "
            "switch gateway.mode=local."
        )
        if source == SOURCE_REMOTE_MISSING
        else None
    )
    if not secure and not plaintext_allowed(host, env):
        allow = env.get(ENV_ALLOW_PRIVATE_WS) == "1"
        raise GatewaySecurityError(
            "\n".join(
                line
                for line in [
                    f'SECURITY ERROR: Gateway URL "{text}" uses plaintext ws:// to a non-loopback address.',
                    "Both credentials and chat data would be exposed to network interception.",
                    f"Source: {source}",
                    f"Config: {config_path}",
                    "Fix: Use wss:// for remote gateway URLs.",
                    "Safe remote access: keep gateway.bind=loopback and use an SSH tunnel "
                    "(ssh -N -L 18789:127.0.0.1:18789 user@gateway-host), or Tailscale Serve/Funnel.",
                    None
                    if allow
                    else "Break-glass (trusted private networks only): set OPENCLAW_ALLOW_INSECURE_PRIVATE_WS=1",
                ]
                if line
            )
        )
    tok, pw = _credentials(
        raw,
        env,
        remote=mode == "remote",
        explicit_token=_text(token),
        explicit_password=_text(password),
        url_override=override,
    )
    auth_mode = _section(raw, "gateway", "auth").get("mode")
    tls = (
        _tls_policy(
            raw, env, url_source=source, remote=mode == "remote", state_dir=getattr(paths, "state_dir", ".")
        )
        if secure
        else None
    )
    return GatewayTarget(
        url=text,
        url_source=source,
        mode=mode,
        config_path=config_path,
        host=host,
        port=real_port,
        secure=secure,
        bind_detail=bind_detail,
        remote_fallback_note=fallback_note,
        token=tok,
        password=pw,
        auth_mode=auth_mode if isinstance(auth_mode, str) else None,
        url_override=override,
        tls=tls,
    )
