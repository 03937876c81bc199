"""Gateway discovery (URL, port, credentials, plaintext policy), every branch, as OpenClaw 2026.9.6
resolves them (its connection-details / credentials / paths modules)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from openclaw_cli.errors import (
    ConfigError,
    ExitCode,
    GatewayCredentialsRequiredError,
    GatewaySecurityError,
    UsageError,
)
from openclaw_cli.gateway import discovery as d


def paths(profile: str | None = None, tmp: str = "/state"):
    return SimpleNamespace(config_path="/state/openclaw.json", state_dir=tmp, profile=profile)


def find(config: dict | None = None, env: dict | None = None, *, profile: str | None = None, **flags):
    return d.discover(paths=paths(profile), config=config or {}, env=env or {}, **flags)


# ---- URL and port -------------------------------------------------------------------------------


def test_default_is_local_loopback_18789() -> None:
    t = find()
    assert (t.url, t.url_source, t.mode, t.port, t.secure) == (
        "ws://127.0.0.1:18789",
        "local loopback",
        "local",
        18789,
        False,
    )
    assert t.bind_detail == "Bind: loopback"
    assert (
        t.details_message() == "Gateway target: ws://127.0.0.1:18789\nSource: local loopback\n"
        "Config: /state/openclaw.json\nBind: loopback"
    )


@pytest.mark.parametrize(
    ("raw", "port"),
    [
        ("28789", 28789),
        ("127.0.0.1:28790", 28790),
        ("[::1]:28791", 28791),
        (" 28792 ", 28792),
        ("0", None),
        ("70000", None),
        ("abc", None),
        ("a:b:1", None),
        ("", None),
    ],
)
def test_env_port_forms(raw: str, port: int | None) -> None:
    assert d.parse_port_env(raw) == port
    expected = port or 18789
    assert find(env={"OPENCLAW_GATEWAY_PORT": raw}).port == expected


def test_port_precedence_env_over_config_over_profile() -> None:
    config = {"gateway": {"port": 30001}}
    assert find(config, {"OPENCLAW_GATEWAY_PORT": "30002"}, profile="work").port == 30002
    assert find(config, {}, profile="work").port == 30001
    assert find({}, {}, profile="work").port == 41984  # 20000 + FNV-1a("work") % 40000, as OpenClaw
    assert find({}, {"OPENCLAW_PROFILE": "staging"}).port == 28422
    assert find({}, {}, profile="dev").port == 19001
    assert find({}, {}, profile="default").port == 18789
    assert find({}, {}, profile="bad name!").port == 18789


def test_profile_port_values_match_openclaw() -> None:
    assert [d.profile_port(p) for p in ("work", "staging", "a")] == [41984, 28422, 22220]


def test_tls_enabled_makes_the_local_url_wss() -> None:
    t = find({"gateway": {"port": 30001, "tls": {"enabled": True}}})
    assert t.url == "wss://127.0.0.1:30001" and t.secure and t.tls is not None


def test_url_precedence_cli_over_env_over_remote() -> None:
    config = {"gateway": {"mode": "remote", "remote": {"url": "wss://remote.example:443", "token": "r"}}}
    env = {"OPENCLAW_GATEWAY_URL": "wss://env.example", "OPENCLAW_GATEWAY_TOKEN": "e"}
    t = find(config, env, url="wss://cli.example:9000", token="c")
    assert (t.url, t.url_source, t.url_override, t.port) == (
        "wss://cli.example:9000",
        "cli --url",
        "cli",
        9000,
    )
    assert t.bind_detail is None
    t = find(config, env)
    assert (t.url, t.url_source, t.url_override, t.port) == (
        "wss://env.example",
        "env OPENCLAW_GATEWAY_URL",
        "env",
        443,
    )
    t = find(config, {})
    assert (t.url, t.url_source, t.mode) == (
        "wss://remote.example:443",
        "config gateway.remote.url",
        "remote",
    )


def test_remote_url_is_ignored_in_local_mode() -> None:
    t = find({"gateway": {"remote": {"url": "wss://remote.example"}}})
    assert t.url_source == "local loopback"


def test_remote_mode_without_url_falls_back_to_local_with_a_note() -> None:
    t = find({"gateway": {"mode": "remote"}})
    assert t.url == "ws://127.0.0.1:18789" and t.url_source == "missing gateway.remote.url (fallback local)"
    assert t.remote_fallback_note.startswith("Warn: gateway.mode=remote but gateway.remote.url is missing")
    assert t.gateway_block()["remoteFallbackNote"] == t.remote_fallback_note


def test_http_schemes_are_taken_as_websocket() -> None:
    t = find(url="https://gw.example", token="x")
    assert t.url == "wss://gw.example" and t.port == 443


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ws://", "no host"),
        ("ftp://gw", "ws:// or wss://"),
        ("gw.example:80", "ws:// or wss://"),
        ("ws://127.0.0.1:99999", "Port"),
        ("ws://gw .example:1", "white space"),
    ],
)
def test_bad_cli_url_is_a_usage_error(url: str, reason: str) -> None:
    with pytest.raises(UsageError, match=reason) as info:
        find(url=url, token="x")
    assert info.value.exit_code == ExitCode.USAGE


def test_bad_config_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no host"):
        find({"gateway": {"mode": "remote", "remote": {"url": "wss://"}}})
    with pytest.raises(ConfigError, match="gateway.remote.url: expected a string"):
        find({"gateway": {"mode": "remote", "remote": {"url": 42}}})


# ---- plaintext policy ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.1", "localhost", "[::1]", "[::ffff:127.0.0.1]"])
def test_plaintext_to_loopback_is_allowed(host: str) -> None:
    assert find(url=f"ws://{host}:1234", token="t").host.strip("[]") == host.strip("[]")


@pytest.mark.parametrize(
    "host", ["192.168.1.5", "10.0.0.2", "gw.local", "gateway.example", "8.8.8.8", "[fd00::1]"]
)
def test_plaintext_to_other_hosts_is_refused(host: str) -> None:
    with pytest.raises(GatewaySecurityError, match="plaintext ws:// to a non-loopback") as info:
        find(url=f"ws://{host}:1234", token="t")
    assert info.value.exit_code == ExitCode.REFUSED
    assert "OPENCLAW_ALLOW_INSECURE_PRIVATE_WS=1" in info.value.message


@pytest.mark.parametrize(
    "host", ["192.168.1.5", "10.0.0.2", "100.100.1.1", "gw.local", "gateway.example", "[fd00::1]"]
)
def test_break_glass_allows_private_hosts(host: str) -> None:
    env = {"OPENCLAW_ALLOW_INSECURE_PRIVATE_WS": "1"}
    assert not find(env=env, url=f"ws://{host}:1234", token="t").secure


def test_break_glass_never_allows_a_public_ip() -> None:
    with pytest.raises(GatewaySecurityError):
        find(env={"OPENCLAW_ALLOW_INSECURE_PRIVATE_WS": "1"}, url="ws://8.8.8.8:1234", token="t")
    with pytest.raises(GatewaySecurityError):  # only "1" switches it on
        find(env={"OPENCLAW_ALLOW_INSECURE_PRIVATE_WS": "true"}, url="ws://10.0.0.2:1234", token="t")


def test_plaintext_remote_config_url_is_refused() -> None:
    with pytest.raises(GatewaySecurityError, match="config gateway.remote.url"):
        find({"gateway": {"mode": "remote", "remote": {"url": "ws://10.1.2.3:18789"}}})


# ---- credentials --------------------------------------------------------------------------------


def creds(t: d.GatewayTarget) -> tuple[str | None, str | None]:
    return t.token, t.password


def test_flags_win_and_only_they_are_used() -> None:
    config = {"gateway": {"auth": {"token": "cfg", "password": "cfgpw"}}}
    assert creds(find(config, {"OPENCLAW_GATEWAY_TOKEN": "env"}, token="flag")) == ("flag", None)
    assert creds(find(config, {}, password="flagpw")) == (None, "flagpw")


def test_local_mode_config_then_env_then_remote() -> None:
    env = {"OPENCLAW_GATEWAY_TOKEN": "env", "OPENCLAW_GATEWAY_PASSWORD": "envpw"}
    remote = {"token": "rem", "password": "rempw"}
    assert creds(find({"gateway": {"auth": {"token": "cfg"}, "remote": remote}}, env)) == ("cfg", "envpw")
    assert creds(find({"gateway": {"remote": remote}}, env)) == ("env", "envpw")
    assert creds(find({"gateway": {"remote": remote}}, {})) == ("rem", "rempw")
    # a configured (but unresolvable) local token keeps the remote one out
    assert creds(find({"gateway": {"auth": {"token": "${MISSING}"}, "remote": remote}}, {})) == (
        None,
        "rempw",
    )


def test_remote_mode_remote_token_first_env_password_first() -> None:
    config = {
        "gateway": {
            "mode": "remote",
            "auth": {"token": "loc", "password": "locpw"},
            "remote": {"url": "wss://gw.example", "token": "rem", "password": "rempw"},
        }
    }
    env = {"OPENCLAW_GATEWAY_TOKEN": "env", "OPENCLAW_GATEWAY_PASSWORD": "envpw"}
    assert creds(find(config, env)) == ("rem", "envpw")
    config["gateway"]["remote"] = {"url": "wss://gw.example"}
    assert creds(find(config, env)) == ("env", "envpw")
    assert creds(find(config, {})) == ("loc", "locpw")


def test_secret_references_in_config() -> None:
    env = {"GW_TOKEN": "from-var"}
    assert find({"gateway": {"auth": {"token": "${GW_TOKEN}"}}}, env).token == "from-var"
    assert (
        find(
            {"gateway": {"auth": {"token": {"source": "env", "provider": "default", "id": "GW_TOKEN"}}}}, env
        ).token
        == "from-var"
    )


def test_cli_url_override_never_reuses_config_or_env_credentials() -> None:
    config = {"gateway": {"auth": {"token": "cfg"}}}
    t = find(config, {"OPENCLAW_GATEWAY_TOKEN": "env"}, url="ws://127.0.0.1:4000")
    assert creds(t) == (None, None)
    problem = t.credentials_error("sessions.cleanup")
    assert isinstance(problem, GatewayCredentialsRequiredError)
    assert problem.message.startswith("gateway url override requires explicit credentials")
    assert problem.exit_code == ExitCode.GATEWAY_AUTH
    assert find(config, {}, url="ws://127.0.0.1:4000", token="x").credentials_error("x") is None


def test_env_url_override_uses_env_credentials_only() -> None:
    config = {"gateway": {"auth": {"token": "cfg"}}}
    env = {"OPENCLAW_GATEWAY_URL": "ws://127.0.0.1:4000"}
    t = find(config, env)
    assert creds(t) == (None, None) and "OPENCLAW_GATEWAY_TOKEN" in t.credentials_error("m").message
    assert creds(find(config, {**env, "OPENCLAW_GATEWAY_TOKEN": "env"})) == ("env", None)


def test_missing_credentials_message_is_openclaws() -> None:
    problem = find().credentials_error("sessions.cleanup")
    assert problem.message == (
        "gateway sessions.cleanup requires credentials before opening a websocket\n"
        "Fix: configure gateway.auth token/password, pair this device, or pass "
        "--token/--password.\nConfig: /state/openclaw.json"
    )
    assert problem.to_json()["error"]["type"] == "gateway_credentials_required"
    assert find({"gateway": {"auth": {"mode": "none"}}}).credentials_error("x") is None


# ---- TLS policy ---------------------------------------------------------------------------------


def test_fingerprint_forms() -> None:
    hexed = "ab" * 32
    assert d.normalize_fingerprint(hexed.upper()) == hexed
    assert d.normalize_fingerprint("sha256:" + ":".join(["AB"] * 32)) == hexed
    assert d.normalize_fingerprint("ab:cd") is None and d.normalize_fingerprint(5) is None


def test_remote_fingerprint_applies_to_config_and_env_urls_only() -> None:
    pin = "cd" * 32
    config = {"gateway": {"mode": "remote", "remote": {"url": "wss://gw.example", "tlsFingerprint": pin}}}
    assert find(config).tls.fingerprint == pin
    assert find(config, {"OPENCLAW_GATEWAY_URL": "wss://other.example"}).tls.fingerprint == pin
    assert find(config, url="wss://cli.example", token="t").tls.fingerprint is None


def test_ca_bundle_from_node_extra_ca_certs() -> None:
    t = find(url="wss://gw.example", token="t", env={"NODE_EXTRA_CA_CERTS": "/etc/ca.pem"})
    assert t.tls.ca_file == "/etc/ca.pem" and t.tls.fingerprint is None
    assert find(url="wss://gw.example", token="t").tls.ca_file is None


def test_target_repr_hides_secrets() -> None:
    assert "s3cret" not in repr(find(token="s3cret", password="s3cret"))


def test_settings_repr_hides_secrets_and_equality_still_reads_them() -> None:
    from openclaw_cli.config.resolve_gateway import GatewaySettings

    def settings(token: str) -> GatewaySettings:
        return GatewaySettings(
            1, "env", "loopback", "local", "token", token, "pw-s3cret", None, False, None, None
        )

    assert "s3cret" not in repr(settings("tok-s3cret")) and "port=1" in repr(settings("tok-s3cret"))
    assert settings("a") != settings("b") and settings("a") == settings("a")
