"""The Gateway's group commit of `sessions.patch` (`ops.lifecycle.sessions_patch_many`): a batch
of requests gives, request by request, the result or error the same requests give one after
another, and leaves the same rows — a label taken earlier in the batch is taken, a refused request
changes nothing and does not undo the others — on both store kinds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.errors import OpenClawError
from tests.lifecycle_support import KEYS, make_templates, rows, use_template

NOW = 1796019218434
NEW_KEY = "agent:main:dashboard:batch-created"


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "patch-batch")


def _ctx():
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    return Context.load(resolve_paths(), clock=lambda: NOW)


def _batch() -> list[dict[str, Any]]:
    return [
        {"key": KEYS["direct"], "label": "shared"},
        {"key": KEYS["other"], "label": "shared"},  # taken by the request before: refused
        {"key": KEYS["main"], "pinned": True},
        {"key": KEYS["group"], "bogus": 1},  # a closed-schema violation
        {"key": KEYS["main"], "archived": True},  # no expectedSessionId: refused
        {"key": NEW_KEY, "label": "created here"},  # an unknown key creates its row
        {"key": KEYS["direct"], "label": None},
        {"key": KEYS["other"], "label": "shared"},  # free again
        {"key": KEYS["group"], "pinned": True, "dryRun": True},
        {"key": KEYS["sub"], "pinned": True},  # a child session cannot be pinned
        {"key": "agent:main:main", "unread": True},
        {"key": "  ", "pinned": True},  # a blank key
    ]


def _normalised(outcome: Any, created: dict[str, Any]) -> Any:
    if isinstance(outcome, OpenClawError):
        return (type(outcome).__name__, outcome.message)
    entry = outcome.get("entry") or {}
    if outcome.get("key") == NEW_KEY:  # fresh uuids: compare everything else
        created.setdefault("ids", (entry.get("sessionId"), entry.get("lifecycleRevision")))
        entry = {k: v for k, v in entry.items() if k not in ("sessionId", "lifecycleRevision")}
    return {**outcome, "entry": entry}


def _state_rows(state: Path) -> dict[str, Any]:
    out = rows(state)
    if NEW_KEY in out:
        out[NEW_KEY] = {k: v for k, v in out[NEW_KEY].items() if k not in ("sessionId", "lifecycleRevision")}
    return out


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_a_batch_is_the_same_requests_one_after_another(
    kind: str, templates: dict[str, Path], state_dir: Path
) -> None:
    from openclaw_cli.ops.lifecycle import sessions_patch, sessions_patch_many

    use_template(templates[kind], state_dir)
    one_by_one = []
    for params in _batch():
        try:
            one_by_one.append(sessions_patch(_ctx(), dict(params)))
        except OpenClawError as exc:
            one_by_one.append(exc)
    expected_rows = _state_rows(state_dir)

    use_template(templates[kind], state_dir)
    together = sessions_patch_many(_ctx(), _batch())
    assert len(together) == len(one_by_one)
    created: dict[str, Any] = {}
    assert [_normalised(o, created) for o in together] == [_normalised(o, created) for o in one_by_one]
    assert _state_rows(state_dir) == expected_rows
    kinds = [type(o).__name__ if isinstance(o, OpenClawError) else "ok" for o in together]
    assert kinds == [
        "ok",
        "PreconditionError",
        "ok",
        "UsageError",
        "PreconditionError",
        "ok",
        "ok",
        "ok",
        "ok",
        "PreconditionError",
        "ok",
        "UsageError",
    ], kinds
    assert (
        rows(state_dir)[KEYS["other"]]["label"] == "shared" and "label" not in rows(state_dir)[KEYS["direct"]]
    )


def test_the_gateway_commits_concurrent_patches_together(templates: dict[str, Path], state_dir: Path) -> None:
    """40 patches sent at once by 8 connections: every one acknowledged, in the store afterwards,
    and fewer write transactions than patches (they were grouped)."""
    import asyncio

    from openclaw_cli.gateway.auth import AuthPolicy
    from openclaw_cli.gateway.server import GatewayServer, ServerOptions
    from openclaw_cli.ops import lifecycle
    from openclaw_cli.paths import resolve_paths
    from tests import gateway_load

    use_template(templates["sqlite"], state_dir)
    keys = [KEYS["main"], KEYS["group"], KEYS["direct"], KEYS["other"]]
    batches: list[int] = []
    original = lifecycle.sessions_patch_many

    def counting(ctx: Any, batch: list[dict[str, Any]]) -> list[Any]:
        batches.append(len(batch))
        return original(ctx, batch)

    async def scenario() -> list[dict[str, Any]]:
        server = GatewayServer(resolve_paths(), ServerOptions(auth=AuthPolicy("token", "t")))
        host, port = await server.start()
        try:
            conns = [await gateway_load._open(f"ws://{host}:{port}", "t") for _ in range(8)]

            async def client(i: int, conn: Any) -> list[dict[str, Any]]:
                out = []
                for n in range(5):
                    out.append(await conn.call("sessions.patch", {"key": keys[i % 4], "label": f"c{i}-{n}"}))
                return out

            results = await asyncio.wait_for(asyncio.gather(*(client(i, c) for i, c in enumerate(conns))), 60)
            for conn in conns:
                await conn.ws.close()
            return [frame for per_client in results for frame in per_client]
        finally:
            await server.stop()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lifecycle, "sessions_patch_many", counting)
        frames = asyncio.run(scenario())
    assert len(frames) == 40 and all(f["ok"] for f in frames), [f for f in frames if not f["ok"]][:3]
    assert sum(batches) == 40 and len(batches) < 40, batches
    final = rows(state_dir)
    for i in range(8):  # each client's last label on its key... unless a later client took the key
        assert any(final[keys[i % 4]].get("label") == f"c{j}-4" for j in range(i % 4, 8, 4))


def test_the_trace_times_every_stage_of_a_batched_patch(
    templates: dict[str, Path], state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`OPENCLAW_GATEWAY_TRACE` (issue 30's instrument): every answered request is a line with its
    stages in order, a batched patch with its batch's size, number and worker-thread times."""
    import asyncio
    import json

    from openclaw_cli.gateway.auth import AuthPolicy
    from openclaw_cli.gateway.server import GatewayServer, ServerOptions
    from openclaw_cli.paths import resolve_paths
    from tests import gateway_load

    use_template(templates["sqlite"], state_dir)
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("OPENCLAW_GATEWAY_TRACE", str(trace))

    async def scenario() -> None:
        server = GatewayServer(resolve_paths(), ServerOptions(auth=AuthPolicy("token", "t")))
        host, port = await server.start()
        try:
            conns = [await gateway_load._open(f"ws://{host}:{port}", "t") for _ in range(5)]
            await asyncio.gather(
                *(
                    c.call("sessions.patch", {"key": KEYS["main"], "label": f"t{i}"})
                    for i, c in enumerate(conns[1:])
                ),
                conns[0].call("sessions.list", {"limit": 5}),
            )
            for conn in conns:
                await conn.ws.close()
        finally:
            await server.stop()

    asyncio.run(scenario())
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    patches = [r for r in records if r["k"] == "req" and r["m"] == "sessions.patch"]
    assert len(patches) == 4
    for r in patches:
        stages = [r[s] for s in ("recv", "start", "enq", "held", "tin", "tout", "res", "sent")]
        assert stages == sorted(stages), r
        assert r["n"] >= 1 and r["b"] >= 1 and r["cpu"] >= 0
    assert sum(1 for r in records if r["k"] == "req" and r["m"] == "sessions.list" and "tin" in r) == 1
