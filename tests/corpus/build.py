"""Builds tests/corpus/cases.json: the hostile inputs below, each with the commands it is run with.

    python tests/corpus/build.py          # add new cases, recording what they do now (review the diff!)
    python tests/corpus/build.py --show   # print every case's current result, change nothing

Existing cases keep their reviewed expectations; a new case is recorded with the exit code and a
message fragment it produces now, which must be read and judged before it is committed (the
expectation is the *right* behaviour: typed error, documented exit code, nothing lost).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import corpus_support as cs  # noqa: E402


def hx(b: bytes) -> str:
    return b.hex()


STORE_CMDS = [
    ["sessions", "--json"],
    ["status", "--json", "--no-probe"],
    ["sessions", "cleanup", "--dry-run", "--json"],
    ["doctor", "--session-sqlite", "dry-run", "--json"],
    ["doctor", "--session-sqlite", "import", "--json"],
]
STORE_CMDS_SHORT = [["sessions", "--json"], ["doctor", "--session-sqlite", "import", "--json"]]
LINE_CMDS = [
    ["sessions", "tail", "--session-key", "{key}", "--json"],
    ["doctor", "--session-sqlite", "import", "--json"],
    ["compact", "{key}", "--dry-run", "--json", "--tokenizer", "estimate"],
]
CONFIG_CMDS = [
    ["sessions", "--json"],
    ["status", "--json", "--no-probe"],
    ["sessions", "cleanup", "--dry-run", "--json"],
]
DB_CMDS = [
    ["sessions", "--json"],
    ["status", "--json", "--no-probe"],
    ["doctor", "--session-sqlite", "inspect", "--json"],
    ["doctor", "--session-sqlite", "dry-run", "--json"],
    ["doctor", "--session-sqlite", "import", "--json"],
]
FS_CMDS = [
    ["sessions", "--json"],
    ["status", "--json", "--no-probe"],
    ["doctor", "--session-sqlite", "import", "--json"],
]

deep = "[" * 5000 + "]" * 5000
inputs: list[tuple[str, dict, list[list[str]]]] = []


def add(name: str, setup: dict, cmds: list[list[str]]) -> None:
    inputs.append((name, setup, cmds))


# sessions.json as a whole
add("store-bom", {"store_prefix_hex": "efbbbf"}, STORE_CMDS)
add(
    "store-invalid-utf8",
    {"store_hex": hx(b'{"agent:main:main": {"sessionId": "abc", "label": "\xff\xfe"}}')},
    STORE_CMDS,
)
add("store-not-json", {"store_text": "this is not json"}, STORE_CMDS)
add("store-empty", {"store_text": ""}, STORE_CMDS)
add("store-array", {"store_text": "[1, 2, 3]"}, STORE_CMDS)
add("store-null", {"store_text": "null"}, STORE_CMDS_SHORT)
add("store-truncated", {"store_text": '{"agent:main:main": {"sessionId": "abc"'}, STORE_CMDS)
add(
    "store-deep",
    {"store_text": '{"agent:main:main": {"sessionId": "abc", "deep": ' + deep + "}}"},
    STORE_CMDS,
)
add(
    "store-entry-number",
    {"store_text": '{"agent:main:main": 5, "agent:main:x": {"sessionId": "x1"}}'},
    STORE_CMDS_SHORT,
)
add(
    "store-duplicate-keys",
    {"store_text": '{"agent:main:main": {"sessionId": "a1"}, "agent:main:main": {"sessionId": "a2"}}'},
    STORE_CMDS_SHORT,
)
add(
    "store-nul-byte",
    {"store_hex": hx(b'{"agent:main:main": {"sessionId": "abc", "label": "a\x00b"}}')},
    STORE_CMDS_SHORT,
)
add(
    "store-trailing-garbage",
    {"store_text": '{"agent:main:main": {"sessionId": "abc"}} trailing'},
    STORE_CMDS_SHORT,
)
# numbers
for name, lit in [
    ("nan", "NaN"),
    ("infinity", "Infinity"),
    ("1e400", "1e400"),
    ("neg-1e400", "-1e400"),
    ("10pow400", "1" + "0" * 400),
    ("10pow30", "1" + "0" * 30),
    ("neg-zero", "-0"),
    ("1e-400", "1e-400"),
    ("float-1.50", "1.50"),
    ("string", '"yesterday"'),
    ("bool", "true"),
    ("object", "{}"),
    ("array", "[]"),
    ("huge-neg", "-" + "9" * 40),
]:
    add(
        f"updatedAt-{name}",
        {"entry": {"field": "updatedAt", "literal": lit}},
        STORE_CMDS if name in ("1e400", "10pow400", "10pow30", "nan", "string") else STORE_CMDS_SHORT,
    )
add("totalTokens-1e400", {"entry": {"field": "totalTokens", "literal": "1e400"}}, STORE_CMDS_SHORT)
add(
    "contextTokens-10pow30",
    {"entry": {"field": "contextTokens", "literal": "1" + "0" * 30}},
    STORE_CMDS_SHORT,
)
add("compactionCount-neg", {"entry": {"field": "compactionCount", "literal": "-5"}}, STORE_CMDS_SHORT)
# sessionId
add("sessionId-missing", {"entry": {"drop": "sessionId"}}, STORE_CMDS)
add("sessionId-traversal", {"entry": {"field": "sessionId", "literal": '"../../../etc/passwd"'}}, STORE_CMDS)
add("sessionId-empty", {"entry": {"field": "sessionId", "literal": '""'}}, STORE_CMDS_SHORT)
add("sessionId-number", {"entry": {"field": "sessionId", "literal": "5"}}, STORE_CMDS_SHORT)
add("sessionId-nul", {"entry": {"field": "sessionId", "literal": '"ab\\u0000cd"'}}, STORE_CMDS_SHORT)
add("sessionId-long", {"entry": {"field": "sessionId", "literal": json.dumps("a" * 300)}}, STORE_CMDS_SHORT)
add("sessionId-ansi", {"entry": {"field": "sessionId", "literal": '"\\u001b[31mred"'}}, STORE_CMDS_SHORT)
# keys
add("key-empty", {"entry": {"key": '""'}}, STORE_CMDS)
add("key-blank", {"entry": {"key": '"   "'}}, STORE_CMDS_SHORT)
add("key-nul", {"entry": {"key": '"agent:main:x\\u0000y"'}}, STORE_CMDS_SHORT)
add("key-surrogate", {"entry": {"key": '"agent:main:\\ud800"'}}, STORE_CMDS)
add("key-ansi", {"entry": {"key": '"agent:main:\\u001b[2J\\u001b[31mboom"'}}, STORE_CMDS_SHORT)
add("key-long", {"entry": {"key": json.dumps("agent:main:" + "k" * 5000)}}, STORE_CMDS_SHORT)
add("key-bare-cron", {"entry": {"key": '"cron:job9"'}}, STORE_CMDS_SHORT)
add("key-other-agent", {"entry": {"key": '"agent:other:main"'}}, STORE_CMDS_SHORT)
# other fields
add("label-surrogate", {"entry": {"field": "label", "literal": '"\\ud800x"'}}, STORE_CMDS)
add("label-ansi", {"entry": {"field": "label", "literal": '"\\u001b]0;pwned\\u0007title"'}}, STORE_CMDS_SHORT)
add("checkpoints-not-list", {"entry": {"field": "compactionCheckpoints", "literal": '"x"'}}, STORE_CMDS_SHORT)
add(
    "sessionFile-outside",
    {"entry": {"field": "sessionFile", "literal": '"../../../../etc/passwd"'}},
    STORE_CMDS,
)
add("sessionFile-absolute", {"entry": {"field": "sessionFile", "literal": '"/etc/passwd"'}}, STORE_CMDS_SHORT)
add("sessionFile-number", {"entry": {"field": "sessionFile", "literal": "7"}}, STORE_CMDS_SHORT)
add("origin-not-object", {"entry": {"field": "origin", "literal": "[1]"}}, STORE_CMDS_SHORT)

# transcript lines
for name, spec in [
    ("invalid-utf8", {"hex": hx(b'{"type":"message","x":"\xff"}')}),
    ("nul", {"hex": hx(b'{"a":"\x00"}')}),
    ("array", {"text": "[1,2,3]"}),
    ("null", {"text": "null"}),
    ("truncated", {"text": '{"type":"message","id":'}),
    ("1e400", {"text": '{"type":"message","id":"n1","n":1e400}'}),
    ("deep", {"text": '{"a":' + deep + "}"}),
    ("reserved-type", {"text": '{"type":"openclaw-cli.quarantined-line","raw":"x"}'}),
    (
        "header-mismatch",
        {
            "n": 1,
            "text": '{"type":"session","version":3,"id":"someone-else","timestamp":"2026-01-01T00:00:00.000Z"}',
        },
    ),
    (
        "message-bad-content",
        {"text": '{"type":"message","id":"m9","parentId":null,"message":{"role":"user","content":5}}'},
    ),
    (
        "parent-cycle",
        {"text": '{"type":"message","id":"cyc","parentId":"cyc","message":{"role":"user","content":"x"}}'},
    ),
    (
        "huge-timestamp",
        {"text": '{"type":"message","id":"t9","timestamp":1e400,"message":{"role":"user","content":"x"}}'},
    ),
    ("crlf", {"text": '{"type":"message","id":"cr","message":{"role":"user","content":"x"}}\r'}),
]:
    spec = dict(spec)
    spec.setdefault("n", 3)
    add(f"line-{name}", {"line": spec}, LINE_CMDS)
add("transcript-empty", {"transcript_hex": ""}, LINE_CMDS)
add("transcript-binary", {"transcript_hex": hx(bytes(range(256)) * 4)}, LINE_CMDS)
add(
    "line-invalid-utf8-validate",
    {"line": {"n": 3, "hex": hx(b'{"x":"\xff"}')}},
    [["doctor", "--session-sqlite", "validate", "--json"]],
)

# config
for name, text in [
    ("not-json5", "{{{ nope"),
    ("bom", "\ufeff{}"),
    ("array", "[1]"),
    ("null", "null"),
    ("pruneAfter-words", '{"session":{"maintenance":{"pruneAfter":"thirty days"}}}'),
    ("maxEntries-neg", '{"session":{"maintenance":{"maxEntries":-1}}}'),
    ("maxEntries-1e400", '{"session":{"maintenance":{"maxEntries":1e400}}}'),
    ("maxEntries-10pow30", '{"session":{"maintenance":{"maxEntries":1' + "0" * 30 + "}}}"),
    ("maxDiskBytes-potatoes", '{"session":{"maintenance":{"maxDiskBytes":"2 potatoes"}}}'),
    ("mode-bogus", '{"session":{"maintenance":{"mode":"sometimes"}}}'),
    ("agents-list-not-list", '{"agents":{"list":"main"}}'),
    ("agent-id-traversal", '{"agents":{"list":[{"id":"../../x"}]}}'),
    ("lock-timeout-neg", '{"session":{"writeLock":{"acquireTimeoutMs":-5}}}'),
    ("lock-timeout-huge", '{"session":{"writeLock":{"acquireTimeoutMs":1e20}}}'),
    ("deep", '{"a":' + deep + "}"),
    ("reserve-tokens-string", '{"agents":{"defaults":{"compaction":{"reserveTokens":"lots"}}}}'),
]:
    add(f"config-{name}", {"config_text": text}, CONFIG_CMDS)
add("config-invalid-utf8", {"config_hex": hx(b'{"session": "\xff"}')}, CONFIG_CMDS)

# databases
for kind in [
    "garbage",
    "empty",
    "foreign-app",
    "unrelated-table",
    "newer-schema",
    "truncated-ours",
    "directory",
]:
    add(f"db-{kind}", {"db": kind}, DB_CMDS)
# filesystem shapes
for kind in [
    "sessions-loop",
    "store-dir",
    "store-symlink-out",
    "transcript-symlink-out",
    "agents-file",
    "store-fifo",
    "lock-stale-dead",
    "lock-garbage",
]:
    add(
        f"fs-{kind}",
        {"fs": kind},
        FS_CMDS + ([["sessions", "cleanup", "--enforce", "--json"]] if kind.startswith("lock") else []),
    )

# command-line arguments
args = [
    ["sessions", "--agent", "main/../../..", "--json"],
    ["sessions", "--agent", "\x1b[31mmain", "--json"],
    ["sessions", "--agent", "", "--json"],
    ["sessions", "--agent", "a" * 100, "--json"],
    ["sessions", "--agent", "ghost", "--json"],
    ["sessions", "--limit", "-1", "--json"],
    ["sessions", "--limit", "0", "--json"],
    ["sessions", "--limit", "1e400", "--json"],
    ["sessions", "--limit", "9" * 30, "--json"],
    ["sessions", "--active", "9" * 30, "--json"],
    ["sessions", "--active", "-5", "--json"],
    ["sessions", "tail", "--session-key", "", "--json"],
    ["sessions", "tail", "--session-key", "agent:main:nope", "--json"],
    ["sessions", "tail", "--session-key", "{key}", "--tail", "-1", "--json"],
    ["sessions", "tail", "--session-key", "{key}", "--tail", "9" * 30, "--json"],
    ["sessions", "--store", "/dev/null", "--json"],
    ["sessions", "--store", "/nonexistent/sessions.json", "--json"],
    ["sessions", "--store", "{state}", "--json"],
    ["sessions", "--store", "/etc/passwd", "--json"],
    ["compact", "{key}", "--max-lines", "0", "--json"],
    ["compact", "{key}", "--max-lines", "-1", "--json"],
    ["compact", "{key}", "--max-lines", "9" * 30, "--json"],
    ["compact", "{key}", "--keep-recent-tokens", "-1", "--json"],
    ["compact", "{key}", "--keep-recent-tokens", "9" * 30, "--dry-run", "--json", "--tokenizer", "estimate"],
    ["compact", "{key}", "--tokenizer", "magic", "--json"],
    ["compact", "{key}", "--provider", "evil", "--json"],
    ["compact", "agent:main:nope", "--json"],
    ["compact", "--json"],
    ["doctor", "--session-sqlite", "bogus", "--json"],
    ["doctor", "--session-sqlite", "import", "--session-sqlite-store", "/etc/passwd", "--json"],
    ["doctor", "--session-sqlite", "import", "--session-sqlite-agent", "ghost", "--json"],
    ["doctor", "--session-sqlite", "import", "--session-sqlite-agent", "../../x", "--json"],
    ["doctor", "--session-sqlite-agent", "main", "--json"],
    ["doctor", "--session-sqlite", "dry-run", "--github-issue", "--json"],
    ["sessions", "cleanup", "--active-key", "", "--json"],
    ["sessions", "cleanup", "--dry-run", "--enforce", "--json"],
    ["--profile", "../x", "sessions", "--json"],
    ["agents", "delete", "../x", "--force", "--json"],
    ["agents", "delete", "ghost", "--force", "--json"],
    ["agents", "delete", "main", "--json"],
    ["sessions", "--all-agents", "--agent", "main", "--json"],
    ["status", "--json", "--bogus-flag"],
]
for n, a in enumerate(args):
    inputs.append((f"args-{n:02d}", {}, [a]))

# the same inputs on an imported (SQLite) store
for name, setup, cmds in [
    (
        "sqlite-tail-huge",
        {"imported": True},
        [["sessions", "tail", "--session-key", "{key}", "--tail", "9" * 30, "--json"]],
    ),
    ("sqlite-active-huge", {"imported": True}, [["sessions", "--active", "9" * 30, "--json"]]),
    ("sqlite-limit-huge", {"imported": True}, [["sessions", "--limit", "9" * 30, "--json"]]),
    (
        "sqlite-db-garbage-after-import",
        {"imported": True, "db": "garbage"},
        [
            ["sessions", "--json"],
            ["status", "--json", "--no-probe"],
            ["doctor", "--session-sqlite", "recover", "--json"],
        ],
    ),
    (
        "sqlite-reimport",
        {"imported": True},
        [
            ["doctor", "--session-sqlite", "import", "--json"],
            ["doctor", "--session-sqlite", "validate", "--json"],
        ],
    ),
    (
        "sqlite-compact-max-lines-huge",
        {"imported": True},
        [["compact", "{key}", "--max-lines", "9" * 30, "--json"]],
    ),
]:
    inputs.append((name, setup, cmds))

# what a successful read must show for these inputs (otherwise the count it lists is recorded)
READ_EXPECT = {
    "updatedAt-1e400": '"updatedAt": 1e400',
    "updatedAt-neg-1e400": '"updatedAt": -1e400',
    "updatedAt-10pow400": '"updatedAt": 1' + "0" * 60,
    "updatedAt-huge-neg": '"updatedAt": -1e+40',  # a >64-bit integer reads as its double
    "totalTokens-1e400": '"totalTokens": 1e400',
    "sessionId-missing": "row(s) of",
    "sessionId-traversal": "unsafe sessionId",
    "sessionId-empty": "row(s) of",
    "sessionId-number": "row(s) of",
    "sessionId-nul": "row(s) of",
    "sessionId-long": "row(s) of",
    "store-entry-number": "is not an object",
    "key-empty": '"key": ""',
    "key-blank": '"key": "   "',
    "key-surrogate": '"key": "agent:main:\\ud800"',
    "label-surrogate": '"label": "\\ud800x"',
    "key-ansi": '"key": "agent:main:\\u001b[2J\\u001b[31mboom"',
}


def _label(cmd: list[str]) -> str:
    if cmd[0] == "doctor":
        return "doctor-" + (cmd[2] if len(cmd) > 2 and cmd[1] == "--session-sqlite" else "plain")
    if cmd[:2] == ["sessions", "cleanup"]:
        return "cleanup-" + cmd[2].strip("-")
    if cmd[:2] == ["sessions", "tail"]:
        return "tail"
    return cmd[0]


def all_cases() -> list[dict]:
    cases, seen = [], set()
    for name, setup, cmds in inputs:
        for cmd in cmds:
            cid = name if name.startswith("args") else f"{name}/{_label(cmd)}"
            base, k = cid, 2
            while cid in seen:
                cid, k = f"{base}-{k}", k + 1
            seen.add(cid)
            cases.append({"id": cid, "setup": setup, "cmd": cmd})
    return cases


_PATH = re.compile(r"(/[^\s\"':]+)+")


def fragment(code: int, stdout: str, stderr: str) -> str:
    """A stable piece of what the command said: the error message or the first issue code."""
    text = ""
    try:
        doc = json.loads(stdout) if stdout.strip().startswith("{") else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        text = doc["error"]["message"]
    elif isinstance(doc, dict) and doc.get("targets") is not None:
        codes = [i["code"] for t in doc["targets"] for i in t.get("issues", [])]
        return f'"code": "{codes[0]}"' if codes else f'"mode": "{doc.get("mode")}"'
    elif isinstance(doc, dict):
        if isinstance(doc.get("stores"), list) and doc["stores"] and "kind" in doc["stores"][0]:
            return f'"kind": {json.dumps(doc["stores"][0]["kind"])}'
        for field in ("beforeCount", "count", "dryRun", "compacted"):
            if field in doc:
                return f'"{field}": {json.dumps(doc[field])}'
        return f'"{next(iter(doc))}"'
    else:
        text = next(
            (line[len("Error: ") :] for line in stderr.splitlines() if line.startswith("Error: ")), stdout
        )
    pieces = [p.strip(" .,:()") for p in _PATH.split(text) if p and not p.startswith("/")]
    best = max(pieces, key=len, default="")
    return best[:70].strip()


def run_case(base: Path, work: Path, case: dict) -> tuple[int, str, str]:
    state = cs.prepare(base, work, case.get("setup", {}))
    code, out, err, exc = cs.invoke(cs.command(case, state), state)
    if exc is not None:
        raise exc
    return code, out, err


def make_base(root: Path) -> Path:
    base = root / "base" / "state"
    subprocess.run(
        [
            sys.executable,
            str(ROOT.parent / "shared" / "tools" / "gen_legacy_store.py"),
            str(base),
            "8",
            "0.05",
            "31",
            "--now-ms",
            "1796000000000",
            "--cron-key-style",
            "canonical",
        ],
        check=True,
        capture_output=True,
    )
    tmp = root / "imported"
    shutil.copytree(base.parent, tmp)
    code, *_ = cs.invoke(
        ["doctor", "--session-sqlite", "import", "--session-sqlite-all-agents"], tmp / "state"
    )
    assert code == 0
    shutil.copy(tmp / "state" / cs.DB, base.parent / "ours.sqlite")
    shutil.rmtree(tmp)
    return base


def main() -> int:
    show = "--show" in sys.argv
    existing = {c["id"]: c for c in cs.load_cases()} if cs.CASES.exists() else {}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = make_base(root)
        for n, case in enumerate(all_cases()):
            old = existing.get(case["id"])
            if old is not None and not show:
                out.append(old)
                continue
            code, stdout, stderr = run_case(base, root / f"c{n}", case)
            shutil.rmtree(root / f"c{n}", ignore_errors=True)
            expect = fragment(code, stdout, stderr)
            name = case["id"].split("/")[0]
            if (
                code == 0
                and case["cmd"][0] == "sessions"
                and case["cmd"][1:2] == ["--json"]
                and name in READ_EXPECT
            ):
                expect = READ_EXPECT[name]
            case = {**case, "exit": code, "expect": expect}
            print(f"{case['id']:<48} {code:>3}  {case['expect']}")
            out.append(case)
    if not show:
        cs.CASES.write_text(json.dumps(out, indent=1, ensure_ascii=True) + "\n")
        print(f"{len(out)} cases in {cs.CASES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
