"""Deterministic pi-format transcripts for tests and benchmarks (not used at run time).

`generate_session(seed, turns=..)` or `(seed, target_bytes=..)` builds a linear active branch of
transcript entries like OpenClaw writes them: user / assistant (text + `toolCall` blocks, `usage`,
`stopReason`) / toolResult messages, occasional `model_change`, `custom_message` and failed tool
calls, with identifiers planted in user messages, tool-call arguments and tool output. The planted
values are returned so tests can check what a summary kept.

`python -m tests.session_generator bench [MB]` times plan + summary on a synthetic session.
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from openclaw_cli.jsonutil import dumps_compact

_WORDS = tuple(
    str.split(
        "session transcript compaction gateway store budget token archive cleanup legacy sqlite agent model "
        "reply context summary import telegram slack discord cron alpha beta gamma delta result tool user "
        "assistant config schema index cache stream worker queue retry deploy branch commit review test"
    )
)
_CODE = (
    "def handle_{n}(request):",
    "    return render(request, 'page_{n}.html')",
    "for item in items:",
    "    total += item.size",
    "class Worker{n}(Base):",
    "    timeout = 30",
    "# TODO: tidy up step {n}",
    "if not ok:",
    "    raise RuntimeError('step {n} failed')",
    "    log.info('processed %d rows', count)",
)


@dataclass
class GeneratedSession:
    header: dict[str, Any]
    entries: list[dict[str, Any]]
    user_identifiers: list[str] = field(default_factory=list)  # planted in user messages, in order
    tool_identifiers: list[str] = field(default_factory=list)  # planted in tool calls / tool output
    user_identifiers_by_entry: dict[str, list[str]] = field(default_factory=dict)

    def jsonl(self) -> str:
        return "\n".join(dumps_compact(obj) for obj in [self.header, *self.entries]) + "\n"


class _Gen:
    def __init__(self, seed: int, start: datetime):
        self.rng = random.Random(seed)
        self.now = start
        self.parent: str | None = None
        self.used_ids: set[str] = set()
        self.prose = [
            " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(8, 30))) + "."
            for _ in range(400)
        ]

    def new_id(self) -> str:
        while True:
            value = f"{self.rng.getrandbits(32):08x}"
            if value not in self.used_ids:
                self.used_ids.add(value)
                return value

    def stamp(self) -> tuple[str, int]:
        self.now += timedelta(milliseconds=self.rng.randint(200, 90_000))
        ms = int(self.now.timestamp() * 1000)
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z", ms

    def entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        iso, _ = self.stamp()
        entry = {"type": kind, "id": self.new_id(), "parentId": self.parent, "timestamp": iso, **fields}
        self.parent = entry["id"]
        return entry

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        entry = self.entry("message", message=message)
        message["timestamp"] = int(
            datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp() * 1000
        )
        return entry

    def sentence(self, k: int = 1) -> str:
        return " ".join(self.rng.choice(self.prose) for _ in range(k))

    def code(self, chars: int) -> str:
        lines: list[str] = []
        size = 0
        while size < chars:
            line = self.rng.choice(_CODE).format(n=self.rng.randint(1, 999))
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)


def generate_session(
    seed: int = 1,
    *,
    turns: int | None = None,
    target_bytes: int | None = None,
    tool_output_chars: tuple[int, int] = (200, 6000),
    with_usage: bool = True,
    plant_every: int = 3,
    session_id: str | None = None,
    start: datetime | None = None,
) -> GeneratedSession:
    """A linear session of `turns` turns, or as many as reach `target_bytes` of JSONL."""
    if turns is None and target_bytes is None:
        turns = 20
    g = _Gen(seed, start or datetime(2026, 10, 1, 9, 0, tzinfo=UTC))
    sid = session_id or f"{g.rng.getrandbits(128):032x}"
    sid = f"{sid[:8]}-{sid[8:12]}-4{sid[13:16]}-a{sid[17:20]}-{sid[20:32]}"
    header = {
        "type": "session",
        "version": 3,
        "id": sid,
        "timestamp": g.now.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "cwd": "/home/user/.openclaw/workspace",
    }
    out = GeneratedSession(header, [])
    out.entries.append(g.entry("model_change", provider="openai", modelId="gpt-5.4"))
    out.entries.append(g.entry("thinking_level_change", thinkingLevel="low"))
    size = 0
    context = 3000
    turn = 0
    while (turns is not None and turn < turns) or (turns is None and size < (target_bytes or 0)):
        turn += 1
        planted: list[str] = []
        text = f"turn {turn}: {g.sentence()}"
        if turn % plant_every == 1 or plant_every == 1:
            planted = [
                f"/srv/proj{turn}/src/module_{turn}.py",
                f"https://tickets.example.test/T-{turn}",
                f"{g.rng.getrandbits(64):016x}",
                f"{turn * 3} MB",
            ]
            text += (
                f" Please fix {planted[0]} as described in {planted[1]} (commit {planted[2]}); "
                f"keep the cache under {planted[3]}. You must not touch the public API."
            )
        user = g.message({"role": "user", "content": [{"type": "text", "text": text}]})
        out.entries.append(user)
        if planted:
            out.user_identifiers.extend(planted)
            out.user_identifiers_by_entry[user["id"]] = planted
        if turn % 97 == 0:
            out.entries.append(g.entry("model_change", provider="openai", modelId="gpt-5.4"))
        if turn % 41 == 0:
            out.entries.append(
                g.entry(
                    "custom_message", customType="note", content=f"note {turn}: {g.sentence()}", display=True
                )
            )
        for _ in range(g.rng.choice((0, 1, 1, 2, 3))):
            call_id = f"call_{g.rng.getrandbits(48):012x}"
            tool = g.rng.choice(("read", "read", "edit", "write", "bash"))
            path = f"src/pkg{g.rng.randint(1, 60)}/file_{g.rng.randint(1, 400)}.py"
            args: dict[str, Any] = (
                {"command": f"pytest -q tests/test_{turn}.py"} if tool == "bash" else {"path": path}
            )
            if tool == "edit":
                args.update(oldText="a = 1", newText="a = 2")
            usage_in = context
            context += g.rng.randint(300, 2500)
            assistant: dict[str, Any] = {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": g.sentence()},
                    {"type": "toolCall", "id": call_id, "name": tool, "arguments": args},
                ],
                "api": "openai-responses",
                "provider": "openai",
                "model": "gpt-5.4",
                "stopReason": "toolUse",
            }
            if with_usage:
                assistant["usage"] = {
                    "input": usage_in,
                    "output": 200,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": usage_in + 200,
                }
            out.entries.append(g.message(assistant))
            failed = g.rng.random() < 0.05
            body = g.code(g.rng.randint(*tool_output_chars))
            if g.rng.random() < 0.3:
                marker = f"build-{g.rng.getrandbits(40):010x}"
                out.tool_identifiers.append(marker)
                body += f"\nartifact {marker} stored"
            if failed:
                body = f"Error: command failed with exit code 2\n{body[:300]}"
            out.entries.append(
                g.message(
                    {
                        "role": "toolResult",
                        "toolCallId": call_id,
                        "toolName": tool,
                        "content": [{"type": "text", "text": body}],
                        "isError": failed,
                    }
                )
            )
            out.tool_identifiers.append(call_id)
        reply = g.sentence(g.rng.randint(1, 3))
        if turn % 5 == 0:
            reply += " I decided to use the streaming parser instead of the DOM parser."
        if turn % 7 == 0:
            reply += " Next I will run the full test suite."
        if turn % 3 == 0:
            reply += f" Fixed the failing check in module_{turn}."
        final: dict[str, Any] = {
            "role": "assistant",
            "content": [{"type": "text", "text": reply}],
            "api": "openai-responses",
            "provider": "openai",
            "model": "gpt-5.4",
            "stopReason": "stop",
        }
        if with_usage:
            context += g.rng.randint(100, 600)
            final["usage"] = {
                "input": context,
                "output": 300,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": context + 300,
            }
        out.entries.append(g.message(final))
        if target_bytes is not None:
            size += sum(len(dumps_compact(e)) + 1 for e in out.entries[_last_turn_start(out.entries) :])
    return out


def _last_turn_start(entries: list[dict[str, Any]]) -> int:
    for i in range(len(entries) - 1, -1, -1):
        message = entries[i].get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            return i
    return 0


def bench(megabytes: float = 50.0, seed: int = 7) -> dict[str, float]:
    """Time plan + built-in summary on a synthetic session of `megabytes` MB (JSON parse included)."""
    from openclaw_cli.compaction import plan_compaction, summarize_plan
    from openclaw_cli.compaction.tokens import Tokenizer, get_encoding
    from openclaw_cli.jsonutil import loads

    session = generate_session(seed, target_bytes=int(megabytes * 1_000_000))
    blob = session.jsonl().encode()
    results: dict[str, float] = {"mb": round(len(blob) / 1e6, 1), "entries": len(session.entries)}
    get_encoding()  # the ~0.1 s encoder load is reported separately
    for usage in (True, False):
        for method in ("estimate", "exact"):
            t0 = time.perf_counter()
            entries = [loads(line) for line in blob.splitlines()[1:]]
            if not usage:
                for e in entries:
                    message = e.get("message")
                    if isinstance(message, dict):
                        message.pop("usage", None)
            t1 = time.perf_counter()
            plan = plan_compaction(entries, keep_recent_tokens=20000, tokenizer=Tokenizer(method))  # type: ignore[arg-type]
            t2 = time.perf_counter()
            outcome = summarize_plan(plan)
            t3 = time.perf_counter()
            key = f"{method}{'' if usage else '_no_usage'}"
            results[f"{key}_parse_s"] = round(t1 - t0, 3)
            results[f"{key}_plan_s"] = round(t2 - t1, 3)
            results[f"{key}_summary_s"] = round(t3 - t2, 3)
            results[f"{key}_total_s"] = round(t3 - t0, 3)
            results[f"{key}_compaction_s"] = round(t3 - t1, 3)
            results["summary_chars"] = len(outcome.summary)
    return results


if __name__ == "__main__":  # pragma: no cover - manual benchmark
    if len(sys.argv) >= 2 and sys.argv[1] == "bench":
        mb = float(sys.argv[2]) if len(sys.argv) > 2 else 50.0
        for k, v in bench(mb).items():
            print(f"{k}: {v}")
