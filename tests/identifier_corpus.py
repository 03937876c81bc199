"""A generated corpus for the identifier-preservation tests: long pi-format sessions with identifiers
of every §4.13 class planted in chosen turns, in user text, assistant text and tool output, among
filler turns (prose, tool calls, code-like tool output). Deterministic per seed; every planted
value is unique to its turn and place, so a test can tell which part of the session it came from."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.session_generator import GeneratedSession

PLACES = ("user", "assistant", "tool")
_WORDS = str.split(
    "session store budget archive summary context worker queue schema index cache stream review "
    "deploy branch config gateway router ledger parser bridge handler sentinel harbor meadow"
)
_CODE = (
    "def handle(request):",
    "    return render(request)",
    "for item in items:",
    "    total += item.size",
    "if not ok:",
    "    raise RuntimeError('failed')",
    "class Worker(Base):",
    "    timeout = config.timeout",
    "# keep the public API stable",
    "log.info('processed rows')",
)


def letters(n: int) -> str:
    """A digit-free name for n (hostnames and file names without digits)."""
    out = ""
    n += 26 * 27
    while n:
        n, r = divmod(n, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[r] + out
    return out


def planted_values(tag: int, rng: random.Random, *, prose: bool) -> dict[str, str]:
    """One identifier of each class for `tag` (unique per turn and place); month-name dates and
    numbers with units only in prose (they span tokens)."""
    d, m = tag % 28 + 1, tag % 12 + 1
    values = {
        "url": f"https://tickets.example.test/browse/OPS-{tag}?focus=comments",
        "posix-path": f"/srv/app{tag}/config/settings.toml",
        "home-path": f"~/work/svc{tag}/notes",
        "relative-path": f"src/svc{tag}/handler.go",
        "windows-path": f"C:\\Users\\ops{tag}\\Desktop\\notes.txt",
        "file-name": f"{letters(tag)}-rollout.yaml",
        "host-port": f"db{tag}.internal:{5000 + tag % 4000}",
        "hostname": f"{letters(tag)}.example.com",
        "ipv4": f"10.{tag // 256 % 256}.{tag % 256}.7",
        "ipv6": f"fd00::{tag:x}:1",
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "hex-hash": f"{rng.getrandbits(160):040x}",
        "id-with-digits": f"OPS-{880000 + tag}",
        "snake-id": f"build_{tag}",
        "kebab-date-id": f"release-train-{letters(tag)}-2026-03-{d:02d}",
        "iso-date": f"2027-{m:02d}-{d:02d}",
        "iso-datetime": f"2026-04-{d:02d}T{tag % 24:02d}:{tag % 60:02d}:00Z",
        "numeric-date": f"{d:02d}/{m:02d}/2025",
        "time": f"{tag % 24:02d}:{tag % 60:02d}:{(tag * 7) % 60:02d}",
        "version": f"v3.{tag}.7",
        "email": f"oncall{tag}@example.test",
    }
    if prose:
        values["month-date"] = f"{('March', 'July', 'October')[tag % 3]} {d}, {1990 + tag % 30}"
    return values


@dataclass
class Planted:
    value: str
    kind: str
    place: str  # user | assistant | tool
    turn: int
    entry_id: str


@dataclass
class Corpus:
    session: GeneratedSession
    planted: list[Planted] = field(default_factory=list)

    def in_entries(self, entry_ids: set[str], place: str | None = None) -> list[Planted]:
        return [p for p in self.planted if p.entry_id in entry_ids and (place is None or p.place == place)]


class _Builder:
    def __init__(self, seed: int, parent: str | None, start: datetime, first_id: int):
        self.rng = random.Random(seed)
        self.parent = parent
        self.now = start
        self.next_id = first_id

    def entry(self, message: dict[str, Any]) -> dict[str, Any]:
        self.now += timedelta(seconds=self.rng.randint(1, 90))
        ident = f"{self.next_id:08x}"
        self.next_id += 1
        message["timestamp"] = int(self.now.timestamp() * 1000)
        entry = {
            "type": "message",
            "id": ident,
            "parentId": self.parent,
            "timestamp": self.now.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "message": message,
        }
        self.parent = ident
        return entry

    def prose(self, words: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(words)).capitalize() + "."

    def code(self, lines: int) -> str:
        return "\n".join(self.rng.choice(_CODE) for _ in range(lines))


def _embed_prose(values: list[str], rng: random.Random) -> str:
    forms = ("{v}", "({v})", "`{v}`", "**{v}**", "'{v}'", "{v},", "{v}.", "[{v}]")
    return " ".join(f"{rng.choice(_WORDS)} {rng.choice(forms).format(v=v)}" for v in values)


def _embed_tool(values: list[str], rng: random.Random) -> str:
    forms = (
        '{{"ref": "{v}", "ok": true}}',
        "INFO resolved {v}",
        "  value = {v}",
        "- {v}",
        "<item>{v}</item>",
    )
    return "\n".join(rng.choice(forms).format(v=v) for v in values)


def generate_corpus(
    seed: int,
    *,
    turns: int,
    plant_turns: dict[int, int],
    filler_words: int = 120,
    tool_lines: int = 40,
    parent: str | None = None,
    start: datetime | None = None,
    first_id: int = 0x10000000,
    session_id: str | None = None,
) -> Corpus:
    """`turns` turns; `plant_turns` maps a turn number to a tag base: that turn plants one
    identifier of every class in its user text, its assistant text and its tool output (tags
    base, base+1, base+2). `parent` chains the first entry (appending after a compaction)."""
    b = _Builder(seed, parent, start or datetime(2026, 10, 1, 9, 0, tzinfo=UTC), first_id)
    sid = session_id or str(uuid.UUID(int=b.rng.getrandbits(128), version=4))
    header = {
        "type": "session",
        "version": 3,
        "id": sid,
        "timestamp": b.now.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "cwd": "/home/user/.openclaw/workspace",
    }
    corpus = Corpus(GeneratedSession(header, []))
    out = corpus.session.entries
    for turn in range(turns):
        base = plant_turns.get(turn)
        planted: dict[str, dict[str, str]] = {}
        if base is not None:
            for k, place in enumerate(PLACES):
                planted[place] = planted_values(base + k, b.rng, prose=place != "tool")
        user_text = f"Turn {turn}: {b.prose(filler_words // 4)}"
        if "user" in planted:
            user_text += " Please keep these in mind: " + _embed_prose(list(planted["user"].values()), b.rng)
        user = b.entry({"role": "user", "content": [{"type": "text", "text": user_text}]})
        out.append(user)
        call = f"call_{b.rng.getrandbits(48):012x}"
        assistant_call = b.entry(
            {
                "role": "assistant",
                "stopReason": "toolUse",
                "content": [
                    {"type": "text", "text": b.prose(20)},
                    {"type": "toolCall", "id": call, "name": "exec", "arguments": {"command": "make check"}},
                ],
            }
        )
        out.append(assistant_call)
        tool_text = b.code(tool_lines)
        if "tool" in planted:
            tool_text += "\n" + _embed_tool(list(planted["tool"].values()), b.rng) + "\n" + b.code(5)
        tool = b.entry(
            {
                "role": "toolResult",
                "toolCallId": call,
                "toolName": "exec",
                "content": [{"type": "text", "text": tool_text}],
                "isError": False,
            }
        )
        out.append(tool)
        reply = b.prose(filler_words)
        if "assistant" in planted:
            reply += " For the record: " + _embed_prose(list(planted["assistant"].values()), b.rng)
        final = b.entry(
            {"role": "assistant", "stopReason": "stop", "content": [{"type": "text", "text": reply}]}
        )
        out.append(final)
        for place, entry in (("user", user), ("assistant", final), ("tool", tool)):
            for kind, value in planted.get(place, {}).items():
                corpus.planted.append(Planted(value, kind, place, turn, entry["id"]))
    return corpus
