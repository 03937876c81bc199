"""Issue 29, findings 5 and 6: the Gateway's secret is not in its command line, and a weak one is
refused.

Before: `gateway run --token <secret>` kept the secret in argv, where `ps` showed it to every local
user and the real OpenClaw CLI's `gateway status --json` printed it (its port listener's
`commandLine`); `--bind lan` started with `--token ' '`, `--password ' '` or `--token a`. Now
`--token-file`/`--password-file` and OPENCLAW_GATEWAY_TOKEN/PASSWORD are the documented ways, the
process renames itself (`openclaw-gateway …`, secrets masked) before it listens, and secrets that
are blank or placeholders are refused everywhere, shorter than 24 characters beyond loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openclaw_cli.cli.gateway_server import MIN_REMOTE_SECRET_CHARS, redacted_argv
from tests.conftest import run_cli
from tests.gateway_server_support import Client, GatewayProcess, connect_params, write_config
from tests.openclaw_db_support import NO_PEER, have_peer, peer

SECRET = "s3cret-token-never-in-argv-0123456789"


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_token_file_serves_and_the_title_names_the_gateway(state_dir: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(SECRET + "\n")
    with (
        GatewayProcess("--auth", "token", "--token-file", str(token_file), token=None) as gw,
        Client(gw.url) as c,
    ):
        assert c.hello(token=SECRET)["ok"] is True
        title = _cmdline(gw.pid)
        assert title.startswith("openclaw-gateway ") and "--token-file" in title
        assert SECRET not in title
    assert not any("can be read by other local users" in line for line in gw.lines)


def test_a_token_on_the_command_line_is_masked_once_running(state_dir: Path) -> None:
    with GatewayProcess(token=SECRET) as gw, Client(gw.url) as c:
        assert c.hello(token=SECRET)["ok"] is True
        title = _cmdline(gw.pid)
        assert SECRET not in title, title
        assert "--token ***" in title
        ps = Path(f"/proc/{gw.pid}/status").read_text()
        assert SECRET not in ps
    assert any("--token on the command line can be read by other local users" in line for line in gw.lines)


def test_token_and_token_file_together_are_a_usage_error(state_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "t").write_text(SECRET)
    proc = run_cli(
        "gateway",
        "run",
        "--allow-unconfigured",
        "--port",
        "0",
        "--token",
        SECRET,
        "--token-file",
        str(tmp_path / "t"),
        timeout=30,
    )
    assert proc.returncode == 2 and "--token and --token-file cannot be used together" in proc.stderr


@pytest.mark.parametrize(
    ("args", "env", "code", "text"),
    [
        (["--bind", "lan", "--token", " "], {}, 3, "gateway auth token: it is blank"),
        (
            ["--bind", "lan", "--auth", "password", "--password", " "],
            {},
            3,
            "gateway auth password: it is blank",
        ),
        (["--bind", "lan", "--token", "a"], {}, 2, "with a 1-character token"),
        (
            ["--bind", "lan", "--auth", "password", "--password", "short-password"],
            {},
            2,
            "with a 14-character password",
        ),
        (
            ["--bind", "lan"],
            {"OPENCLAW_GATEWAY_TOKEN": "x" * (MIN_REMOTE_SECRET_CHARS - 1)},
            2,
            "23-character token",
        ),
        (["--token", "undefined"], {}, 3, "literal string undefined/null"),  # loopback too, as OpenClaw
        (["--token", "change-me-to-a-long-random-token"], {}, 3, "published example placeholder"),
    ],
)
def test_weak_secrets_are_refused(state_dir: Path, args: list[str], env: dict, code: int, text: str) -> None:
    write_config(state_dir, {"gateway": {"mode": "local"}})
    proc = run_cli("gateway", "run", "--port", "0", *args, env=env, timeout=30)
    assert proc.returncode == code, proc.stderr
    assert text in proc.stderr
    assert "listening on" not in proc.stderr


def test_redacted_argv() -> None:
    assert redacted_argv(["--port", "1", "--token", "abc", "--password=def", "--token-file", "/x"]) == [
        "--port",
        "1",
        "--token",
        "***",
        "--password=***",
        "--token-file",
        "/x",
    ]


@pytest.mark.peer
@pytest.mark.skipif(not have_peer(), reason=NO_PEER)
def test_the_real_cli_gateway_status_does_not_print_our_token(state_dir: Path, tmp_path: Path) -> None:
    with GatewayProcess(token=SECRET) as gw, Client(gw.url) as c:
        assert c.request("connect", connect_params(SECRET))["ok"] is True
        port = int(gw.url.rsplit(":", 1)[1])
        root = tmp_path / "peer"
        config = root / "home" / ".openclaw" / "openclaw.json"
        config.parent.mkdir(parents=True)
        config.write_text(
            json.dumps(
                {"gateway": {"mode": "local", "port": port, "auth": {"mode": "token", "token": SECRET}}}
            )
        )
        proc = peer(root, "gateway", "status", "--json", timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        doc = json.loads(proc.stdout)
        listeners = doc["port"]["listeners"]
        assert [entry["pid"] for entry in listeners] == [gw.pid]
        assert listeners[0]["commandLine"].startswith("openclaw-gateway")
        assert SECRET not in proc.stdout
        assert SECRET not in json.dumps(listeners)
