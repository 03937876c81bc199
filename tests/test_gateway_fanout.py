"""The Gateway's `sessions.changed` broadcast (issue 30): a change's payload is encoded once and
each subscribed connection gets its own `seq` spliced in, byte for byte what encoding the whole
event per connection wrote."""

from __future__ import annotations


def test_event_frame_is_the_encoded_event() -> None:
    """A broadcast encodes its payload once and splices each connection's seq: the same bytes as
    encoding the whole event per connection."""
    from openclaw_cli.gateway import protocol
    from openclaw_cli.gateway.server import event_frame
    from openclaw_cli.jsonutil import dumps_bytes

    for payload in (
        {
            "sessionKey": "agent:main:x",
            "reason": "patch",
            "ts": 1,
            "session": {"label": "é ✓ \u2028", "n": 2**70},
        },
        {"reason": "cleanup", "ts": 5},
        {},
    ):
        for seq in (1, 42, 10**12):
            assert event_frame(protocol.EVENT_SESSIONS_CHANGED, dumps_bytes(payload), seq) == dumps_bytes(
                protocol.event(protocol.EVENT_SESSIONS_CHANGED, payload, seq=seq)
            )
