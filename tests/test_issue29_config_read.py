"""Issue 29 finding 8 (config): only a regular file is read as the config (a FIFO hung every
command; a device never ends) and its size is capped with a clear error (an 8 MB JSON5 config took
85-100 s a command); JSON5 syntax gets a lower cap than plain JSON (parsed by a pure-Python parser)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.config.loader import MAX_CONFIG_BYTES, MAX_JSON5_CONFIG_BYTES, load_config
from openclaw_cli.errors import ConfigError, ExitCode


def _run(tmp_path: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "OPENCLAW_STATE_DIR": str(tmp_path / "state"),
        "OPENCLAW_CONFIG_PATH": str(config),
        "HOME": str(tmp_path),
        "OPENCLAW_GATEWAY_PORT": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *args], env=env, capture_output=True, text=True, timeout=60
    )  # before the fix a FIFO config never returned


def test_a_fifo_config_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "openclaw.json"
    os.mkfifo(fifo)
    proc = _run(tmp_path, fifo, "sessions", "list", "--json")
    assert proc.returncode == ExitCode.CONFIG, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "config_error" and "not a regular file (a FIFO)" in error["message"]
    assert str(fifo) in error["message"]


def test_a_device_config_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    dev = tmp_path / "openclaw.json"
    os.mknod(dev, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # a "zero" device: reading it never ends
    with pytest.raises(ConfigError, match="a device"):
        load_config(dev)


def test_a_symlink_to_a_regular_config_is_still_read(tmp_path: Path) -> None:
    real = tmp_path / "real.json5"
    real.write_text("{session: {dmScope: 'main'}} // json5\n")
    link = tmp_path / "openclaw.json"
    link.symlink_to(real)
    assert load_config(link).exists


def test_an_oversized_config_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "openclaw.json"
    with open(big, "w") as fh:  # 8 MB of JSON5, as in the report
        fh.write("{\n  // padding\n  x: [\n")
        row = "    'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',\n"
        fh.write(row * (8 * 1024 * 1024 // len(row)))
        fh.write("  ],\n}\n")
    proc = _run(tmp_path, big, "status", "--json", "--no-probe")
    message = json.loads(proc.stdout)
    text = json.dumps(message)
    assert f"{MAX_CONFIG_BYTES // 1024:,} KiB limit" in text and str(big) in text, text[:500]
    with pytest.raises(ConfigError, match="KiB limit"):
        load_config(big)


def test_json5_over_its_cap_is_refused_with_the_way_out_and_plain_json_of_that_size_reads(
    tmp_path: Path,
) -> None:
    pad = "x" * (MAX_JSON5_CONFIG_BYTES + 1024)
    json5_config = tmp_path / "json5.json"
    json5_config.write_text(
        "{\n  // a comment makes it JSON5\n  session: {dmScope: 'main'},\n  padding: '" + pad + "',\n}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(json5_config)
    assert "plain JSON" in info.value.message and "256 KiB" in info.value.message
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"session": {"dmScope": "main"}, "padding": pad}))
    assert load_config(plain, strict=False).raw["session"] == {"dmScope": "main"}
