"""`archiving._key_shape` (the key predicates inline, issue 30) gives every key the verdicts of the
predicates themselves (`_key_shape_parts`): model-run probe, synthetic, dashboard, protected by
the key — over the bench's key shapes and a seeded spread of odd ones (case, whitespace, empty
parts, newlines, non-ASCII case folding, thread/topic markers, probe-like keys)."""

from __future__ import annotations

import itertools
import random

from openclaw_cli.maintenance.archiving import _key_shape, _key_shape_parts

UUID = "21bade02-6a4c-4c1e-9d2b-0123456789ab"
HEADS = [
    "agent:main:",
    "AGENT:Main:",
    " agent: x :",
    "agent::",
    "agent:main",
    "agent:main::",
    "agents:main:",
    "",
]
PARTS = [
    "telegram", "discord", "direct", "dm", "group", "channel", "topic", "thread", "cron", "job-1", "run",
    "subagent", "acp", "hook", "node", "heartbeat", "dashboard", "explicit", f"model-run-{UUID}", "main",
    "global", "acct", "-1007", "42", " ", "", "\n", "İ", "Ǆ", "x\n", "Telegram", "DIRECT", "Thread",
]  # fmt: skip


def _keys() -> list[str]:
    keys = [
        "global",
        " Global ",
        "main",
        "agent:main:main",
        "agent:main:telegram:direct:123",
        "agent:main:telegram:group:-1007",
        "agent:main:cron:job-1",
        "agent:main:discord:channel:99",
        f"agent:main:subagent:{UUID}",
        f"agent:main:dashboard:{UUID}",
        f"agent:main:explicit:model-run-{UUID}",
        f"AGENT:MAIN:EXPLICIT:MODEL-RUN-{UUID.upper()}",
        f"agent:main:explicit:model-run-{UUID}:x",
        "agent:main:telegram:direct:5:topic:7",
        "agent:main:telegram:dm:5:topic:",
        "agent:main:slack:c1:thread:",
        "agent:main:slack:c1:thread: ",
        "agent:main:slack:c1:thread:t1",
        "direct:42",
        "direct:",
        "telegram:group:1\n",
        "agent:main:heartbeat",
        "agent:main:x:heartbeat:y",
    ]
    for head, a, b in itertools.product(HEADS, PARTS, PARTS):
        keys.append(f"{head}{a}:{b}")
    rng = random.Random(30)
    for _ in range(20000):
        parts = [rng.choice(PARTS) for _ in range(rng.randint(1, 6))]
        keys.append(rng.choice(HEADS) + ":".join(parts) + rng.choice(["", " ", ":", "\n"]))
    return keys


def test_the_inline_key_shape_is_the_predicates_verdicts():
    keys = _keys()
    differ = [k for k in keys if _key_shape(k) != _key_shape_parts(k)]
    assert differ == []
    assert len({_key_shape(k) for k in keys}) >= 5  # (every verdict occurs: the comparison is not vacuous)
