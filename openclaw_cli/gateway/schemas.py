"""The closed param schema of `connect`, the one frame the Gateway validates itself (every method's
schema is its row's in the method table: `ops/params.py`, `ops/methods.py`)."""

from __future__ import annotations

from typing import Any

from openclaw_cli.gateway.protocol import CLIENT_IDS, CLIENT_MODES
from openclaw_cli.ops.params import Arr, Bool, Enum, Int, NonEmpty, Obj, Rec, Str, Unknown, validate

_AUTH = Obj(
    {
        name: Str()
        for name in (
            "token",
            "bootstrapToken",
            "deviceToken",
            "password",
            "approvalRuntimeToken",
            "agentRuntimeIdentityToken",
        )
    }
)
CONNECT = Obj(
    {
        "minProtocol": Int(minimum=1),
        "maxProtocol": Int(minimum=1),
        "client": Obj(
            {
                "id": Enum(CLIENT_IDS),
                "displayName": NonEmpty,
                "version": NonEmpty,
                "buildId": Str(min_len=1, max_len=96),
                "platform": NonEmpty,
                "deviceFamily": NonEmpty,
                "modelIdentifier": NonEmpty,
                "timeZone": Str(min_len=1, max_len=64),
                "mode": Enum(CLIENT_MODES),
                "instanceId": NonEmpty,
            },
            required=("id", "version", "platform", "mode"),
        ),
        "caps": Arr(NonEmpty),
        "commands": Arr(NonEmpty),
        "computerUse": Unknown(),
        "workerRuns": Unknown(),
        "permissions": Rec(Bool()),
        "pathEnv": Str(),
        "role": NonEmpty,
        "scopes": Arr(NonEmpty),
        "modelCatalog": Unknown(),
        "device": Obj(
            {
                "id": NonEmpty,
                "publicKey": NonEmpty,
                "signature": NonEmpty,
                "signedAt": Int(minimum=0),
                "nonce": NonEmpty,
            },
            required=("id", "publicKey", "signature", "signedAt", "nonce"),
        ),
        "auth": _AUTH,
        "locale": Str(),
        "userAgent": Str(),
    },
    required=("minProtocol", "maxProtocol", "client"),
)


def check_connect(params: Any) -> str | None:
    error = validate(CONNECT, params)
    return f"invalid connect params: {error}" if error else None
