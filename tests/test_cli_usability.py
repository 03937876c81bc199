"""A CLI a person enjoys (issue 14): `sessions tail --follow`, shell completion, status text that
says what it knows, config warnings once from every command, `--verbose`, help metavars, table
layout, the cleanup progress count. Both store kinds wherever a store is read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cleanup_support import DAY, cli, cli_json, db_path, entry, make_legacy, make_sqlite, now_ms, write_config

from tests.conftest import run_cli

KINDS = ["legacy", "sqlite"]


def make(kind: str, state: Path, entries: dict, agent: str = "main") -> None:
    (make_legacy if kind == "legacy" else make_sqlite)(state, entries, agent=agent)


def message_line(text: str, n: int) -> str:
    return json.dumps(
        {
            "type": "message",
            "id": f"f{n:07d}",
            "parentId": None,
            "timestamp": "2026-11-02T00:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        }
    )


def append(kind: str, state: Path, key: str, sid: str, lines: list[str]) -> None:
    """Append as a writer would: under OpenClaw's lock (legacy) or in one transaction (SQLite)."""
    if kind == "legacy":
        from openclaw_cli.store.legacy.store import LegacyStore

        store = LegacyStore(state / "agents/main/sessions/sessions.json", "main")
        store.append_transcript(sid, lines)
    else:
        from openclaw_cli.store.sqlite.store import SqliteStore

        with SqliteStore(db_path(state), "main") as store:
            store.append_events(sid, lines, session_key=key)


# ---- sessions tail --follow -------------------------------------------------------------------------------


class Follower:
    """The follower's stdout, read without buffering surprises (raw fd reads, bounded in time)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.fd = proc.stdout.fileno()
        self.seen = ""

    def until(self, needle: str, timeout: float) -> str:
        import select

        start = len(self.seen)
        deadline = time.monotonic() + timeout
        while needle not in self.seen[start:] and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                data = os.read(self.fd, 65536)
                if not data:
                    break
                self.seen += data.decode()
        return self.seen[start:]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "jsonl"])
def test_follow_streams_appended_entries_and_stops(kind: str, json_mode: bool, state_dir: Path):
    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms())})
    args = [
        sys.executable,
        "-m",
        "openclaw_cli",
        "sessions",
        "tail",
        "--follow",
        "--interval",
        "0.1",
        "--tail",
        "2",
    ]
    proc = subprocess.Popen(
        [*args, *(["--json"] if json_mode else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    follower = Follower(proc)
    try:
        first = follower.until("assistant 1 of m1", 30)  # the tail is printed first
        assert "assistant 1 of m1" in first
        append(kind, state_dir, "agent:main:main", "m1", [message_line("appended one", 1)])
        out = follower.until("appended one", 15)
        append(
            kind, state_dir, "agent:main:main", "m1", [message_line(f"burst {i}", 10 + i) for i in range(300)]
        )
        out += follower.until("burst 299", 15)
        assert "appended one" in out and "burst 299" in out
        if json_mode:
            events = [json.loads(line) for line in out.splitlines() if line.strip()]
            bursts = [e for e in events if e.get("type") == "entry" and "burst" in json.dumps(e["entry"])]
            assert len(bursts) == 300  # none lost, none twice, across polls and a window-sized burst
            assert all(
                e["key"] == "agent:main:main" and e["sessionId"] == "m1" for e in events if "type" in e
            )
        else:
            assert out.count("burst ") == 300 and out.count("appended one") == 1
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0  # Ctrl-C is how one stops following
        assert time.monotonic() - started < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("kind", KINDS)
def test_follow_generator_sees_a_new_session_window(kind: str, state_dir: Path):
    """The library loop: a reset moves the row to a new transcript, and following continues there."""
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.sessions import follow_session
    from openclaw_cli.paths import resolve_paths

    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms())})
    steps = iter(
        [
            lambda: append(kind, state_dir, "agent:main:main", "m1", [message_line("before reset", 1)]),
            lambda: make(kind, state_dir, {"agent:main:main": entry("m2", now_ms())}),
            lambda: append(kind, state_dir, "agent:main:main", "m2", [message_line("after reset", 2)]),
        ]
    )

    polls = []

    def sleep(_seconds: float) -> None:
        polls.append(1)
        next(steps, lambda: None)()

    events = []
    for event in follow_session(
        Context.load(resolve_paths()), None, interval_s=0, sleep=sleep, stop=lambda: len(polls) >= 6
    ):  # bounded: six polls
        events.append(event)
    texts = [json.dumps(e.get("entry")) for e in events]
    assert "before reset" in texts[0]
    assert events[1] == {
        "type": "session",
        "key": "agent:main:main",
        "sessionId": "m2",
        "previousSessionId": "m1",
    }
    # the new transcript from its start (nothing of it was shown), then what is appended to it
    assert [e["sessionId"] for e in events[2:]] == ["m2"] * (len(events) - 2)
    assert "after reset" in texts[-1] and sum("after reset" in t for t in texts) == 1


def test_follow_refuses_context_and_a_bad_interval(state_dir: Path):
    make_legacy(state_dir, {"agent:main:main": entry("m1", now_ms())})
    assert cli_json("sessions", "tail", "--follow", "--context", "--json")[0] == 2
    assert cli_json("sessions", "tail", "--follow", "--interval", "0", "--json")[0] == 2


# ---- shell completion ---------------------------------------------------------------------------------------


def complete(words: str, shell: str = "bash") -> list[str]:
    """What the shell's completion function gets back from `openclaw` for the command line `words`
    (the cursor after the last word)."""
    env = dict(os.environ, _OPENCLAW_COMPLETE=f"complete_{shell}")
    if shell == "bash":
        parts = words.split(" ")
        env.update(COMP_WORDS=words, COMP_CWORD=str(len(parts) - 1))
    else:
        env.update(_TYPER_COMPLETE_ARGS=words, _TYPER_COMPLETE_FISH_ACTION="get-args")
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "openclaw")], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    if shell == "zsh":  # _arguments '*: :(("agent\\:main\\:cron" "…"))'
        import re

        return [v.replace("\\\\:", ":") for v in re.findall(r'"((?:[^"\\]|\\.)*)"', proc.stdout)]
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return [line.split(",", 1)[-1] if shell == "bash" else line.split("\t", 1)[0] for line in lines]


@pytest.mark.parametrize("kind", KINDS)
def test_completion_offers_agent_ids_and_session_keys(kind: str, state_dir: Path):
    write_config(state_dir, {"agents": {"list": [{"id": "main", "default": True}, {"id": "work"}]}})
    make(
        kind,
        state_dir,
        {"agent:main:main": entry("m1", now_ms()), "agent:main:cron:nightly": entry("c1", now_ms())},
    )
    make(kind, state_dir, {"agent:work:chat": entry("w1", now_ms())}, agent="work")
    assert complete("openclaw sessions --agent w") == ["work"]
    assert sorted(complete("openclaw sessions tail --agent ")) == ["main", "work"]
    assert sorted(complete("openclaw sessions tail --session-key agent:main:")) == [
        "agent:main:cron:nightly",
        "agent:main:main",
    ]
    assert complete("openclaw sessions tail --agent work --session-key ") == ["agent:work:chat"]
    assert complete("openclaw compact agent:work:") == ["agent:work:chat"]  # the key names its agent
    assert complete("openclaw sessions archive agent:main:cr") == ["agent:main:cron:nightly"]
    assert complete("openclaw agents delete w") == ["work"]
    assert "agent:main:cron:nightly" in complete(
        "openclaw sessions tail --session-key agent:main:c", shell="zsh"
    )
    assert complete("openclaw sessions tail --session-key agent:main:c", shell="fish") == [
        "agent:main:cron:nightly"
    ]


@pytest.mark.skipif(not Path("/bin/bash").exists() and not Path("/usr/bin/bash").exists(), reason="no bash")
def test_installed_bash_completion_completes_in_bash(state_dir: Path, tmp_path: Path):
    """The script `--install-completion bash` writes, sourced by a real bash, completes a key."""
    make_sqlite(
        state_dir,
        {"agent:main:main": entry("m1", now_ms()), "agent:main:cron:nightly": entry("c1", now_ms())},
    )
    home = tmp_path / "completion-home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    exe = Path(sys.executable).parent / "openclaw"
    installed = subprocess.run(
        [str(exe), "--install-completion", "bash"], capture_output=True, text=True, env=env, timeout=60
    )
    assert installed.returncode == 0, installed.stderr
    script = home / ".bash_completions" / "openclaw.sh"
    assert f"source '{script}'" in (home / ".bashrc").read_text()
    probe = (
        f"source '{script}'; COMP_WORDS=(openclaw sessions tail --session-key agent:main:c); COMP_CWORD=4; "
        f"_openclaw_completion '{exe}'; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    done = subprocess.run(
        ["bash", "--norc", "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["agent:main:cron:nightly"]


def test_completion_of_a_broken_store_completes_nothing(state_dir: Path):
    (state_dir / "agents/main/sessions").mkdir(parents=True)
    (state_dir / "agents/main/sessions/sessions.json").write_text("{not json")
    assert complete("openclaw sessions tail --session-key ") == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_the_script(shell: str):
    proc = run_cli("--show-completion", shell, env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "_OPENCLAW_COMPLETE" in proc.stdout
    installed = subprocess.run(
        [str(Path(sys.executable).parent / "openclaw"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert "--install-completion" in installed.stdout and "--show-completion" in installed.stdout


def test_help_loads_neither_completion_values_nor_stores():
    code = (
        "import sys; sys.argv = ['openclaw', '--help']; import openclaw_cli.cli.main as m\n"
        "try:\n    m.app(prog_name='openclaw')\nexcept SystemExit:\n    pass\n"
        "print(sorted(n for n in sys.modules if n.startswith(('openclaw_cli.cli.completion', 'openclaw_cli.ops',"
        " 'openclaw_cli.store', 'rich'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


# ---- status text --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_status_text_says_what_it_knows(kind: str, state_dir: Path):
    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms())})
    text = cli("status", "--no-probe").stdout
    assert f"Config: {state_dir / 'openclaw.json'} (none: defaults)" in text
    assert "Gateway: ws://127.0.0.1:1 not probed (--no-probe)" in text and "not reachable" not in text
    assert "Maintenance (what `openclaw sessions cleanup --enforce` applies):" in text
    probed = cli("status").stdout
    assert "not reachable (connect ECONNREFUSED 127.0.0.1:1)" in probed
    (state_dir / "openclaw.json").write_text("{ not json")
    broken = cli("status", "--no-probe")
    assert broken.returncode == 0
    assert "(INVALID)" in broken.stdout and "  error: " in broken.stdout and "error: :" not in broken.stdout
    assert (
        "applies" not in broken.stdout
        and "Maintenance: not applied while the config is invalid" in broken.stdout
    )
    write_config(state_dir, {"session": {"maintenance": {"pruneAfter": "soon"}}})
    invalid = cli("status", "--no-probe").stdout
    assert '  error: session.maintenance.pruneAfter: "soon" (not a duration' in invalid


def test_next_stale_prune_reads_like_a_time_ahead(state_dir: Path):
    from openclaw_cli.cli.cells import format_time_until, plural

    assert [format_time_until(ms) for ms in (-5, 0, 20_000, 5 * 60_000, 3 * 3_600_000, 3 * DAY)] == [
        "now",
        "now",
        "in under a minute",
        "in 5m",
        "in 3h",
        "in 3d",
    ]
    assert (plural(1, "entry"), plural(2, "entry"), plural(0, "session"), plural(1, "session")) == (
        "1 entry",
        "2 entries",
        "0 sessions",
        "1 session",
    )
    make_legacy(
        state_dir,
        {
            "agent:main:main": entry("m1", now_ms()),
            "agent:main:cron:x": entry("c1", now_ms() - 30 * DAY + 20_000),
        },
    )
    text = cli("status", "--no-probe").stdout
    assert "next stale prune in under a minute" in text and "in just now" not in text


# ---- config warnings, once, from every command --------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("sessions",),
        ("sessions", "--json"),
        ("sessions", "tail"),
        ("sessions", "cleanup", "--dry-run"),
        ("compact", "agent:main:main", "--dry-run", "--tokenizer", "estimate"),
        ("agents", "list"),
        ("doctor",),
        ("status", "--json", "--no-probe"),
        ("sessions", "archive", "agent:main:other", "--dry-run"),
    ],
)
def test_unknown_config_keys_are_warned_once_by_every_command(args: tuple, state_dir: Path):
    write_config(state_dir, {"session": {"maintenance": {"pruneAfter": "30d", "pruneAfterr": "7d"}}})
    make_legacy(
        state_dir, {"agent:main:main": entry("m1", now_ms()), "agent:main:other": entry("o1", now_ms())}
    )
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "pruneAfterr" in line]
    assert lines == ["Config warning: Unknown key session.maintenance.pruneAfterr is ignored."]
    assert "pruneAfterr" not in proc.stdout or args[0] in ("status", "doctor")


def test_status_text_shows_config_warnings_in_its_report(state_dir: Path):
    write_config(state_dir, {"session": {"maintenance": {"pruneAfterr": "7d"}}})
    proc = cli("status", "--no-probe")
    assert "  warning: Unknown key session.maintenance.pruneAfterr is ignored." in proc.stdout
    assert "pruneAfterr" not in proc.stderr  # said once: in the report


# ---- --verbose ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_verbose_logs_the_stores_read(kind: str, state_dir: Path):
    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms())})
    quiet = cli("sessions", "--json")
    assert "[openclaw]" not in quiet.stderr
    loud = cli("sessions", "--verbose", "--json")
    assert json.loads(loud.stdout)["count"] == 1
    assert f"[openclaw] agent main: {kind} store " in loud.stderr and "row(s) read in" in loud.stderr
    assert f"[openclaw] agent main: {kind} store" in cli("status", "--verbose", "--no-probe", "--json").stderr
    assert "[openclaw]" in cli("sessions", "list", "--verbose", "--json").stderr


# ---- help text ----------------------------------------------------------------------------------------------


def _commands():
    import typer.main

    from openclaw_cli.cli.main import app

    def walk(cmd, path):
        yield path, cmd
        for name, sub in (getattr(cmd, "commands", {}) or {}).items():
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), ["openclaw"]))


def test_every_option_has_a_metavar_that_says_what_it_takes():
    """No `--agent <str>` or `--active <str>` (for minutes): every value option names its value,
    and no help text repeats the default Typer already shows (`(default 80). [default: 80]`)."""
    problems = []
    for path, cmd in _commands():
        for p in cmd.params:
            if p.param_type_name != "option" or getattr(p, "is_flag", False) or getattr(p, "hidden", False):
                continue
            if not p.metavar or p.metavar.lower() in ("<str>", "<int>", "<float>", "text", "integer"):
                problems.append(f"{' '.join(path)} {p.opts[0]}: metavar {p.metavar!r}")
            shows_default = p.show_default is not False and p.default not in (None, False, ())
            if shows_default and p.help and "(default" in p.help:
                problems.append(f"{' '.join(path)} {p.opts[0]}: default said twice")
    assert problems == []
    help_text = run_cli("sessions", "tail", "--help").stdout
    assert (
        "--session-key <key>" in help_text and "--tail <count>" in help_text and "[default: 80]" in help_text
    )
    assert "--active <minutes>" in run_cli("sessions", "--help").stdout


# ---- tables -------------------------------------------------------------------------------------------------


def test_table_layout_elides_in_the_middle_and_never_collapses():
    from openclaw_cli.cli.table import Column, elide_middle, render_table

    assert elide_middle("agent:main:telegram:group:123", 16) == "agent:m...up:123"
    assert elide_middle("short", 16) == "short"
    assert elide_middle("漢字漢字漢字漢字", 7) == "漢...字"  # wide characters count two columns
    columns = [
        Column("Kind", min_width=5),
        Column("Key", min_width=12, shrink_order=20),
        Column("Flags", min_width=6, shrink_order=10, drop_below=16),
    ]
    rows = [["direct", "agent:main:" + "x" * 60, "system visibility:shared id:" + "f" * 36]]
    natural = render_table(columns, rows)
    assert len(natural) == 5 and rows[0][1] in natural[3]  # no width: nothing is cut
    fitted = render_table(columns, rows, width=40)
    assert all(len(line) <= 40 for line in fitted)
    assert fitted[-1] == "(Flags hidden to fit; --wide shows all)"
    assert "agent:main:" in fitted[3] and "..." in fitted[3]
    roomy = render_table(columns, rows, width=120)  # room for the whole key and a useful Flags column
    assert all(len(line) <= 120 for line in roomy) and "Flags" in roomy[1] and rows[0][1] in roomy[3]
    assert "system visibili...ffff" in roomy[3]  # the cut is in the middle: both ends stay


# ---- cleanup progress -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_cleanup_progress_counts_removals_not_steps(kind: str, state_dir: Path):
    from openclaw_cli.ops.cleanup import cleanup_stores, options_from_params
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    old = now_ms() - 40 * DAY
    make(
        kind,
        state_dir,
        {f"agent:main:cron:job{i}": entry(f"s{i:03d}", old) for i in range(30)}
        | {"agent:main:main": entry("keep", now_ms())},
    )
    bars: list[dict] = []

    def factory(description: str, total: int):
        bar = {"description": description, "total": total, "done": 0.0}
        bars.append(bar)

        def tick(n: float) -> None:
            bar["done"] += n

        return tick

    ctx = Context.load(resolve_paths(), progress=factory)
    results = cleanup_stores(ctx, options_from_params({"enforce": True}))
    assert results[0].summary["pruned"] == 30
    assert [(b["total"], b["done"]) for b in bars] == [(30, 30)]  # 30 removals count to 30, not 60
