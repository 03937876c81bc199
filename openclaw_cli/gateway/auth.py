"""Shared-secret auth of `connect` (token or password), compared in constant time.

Both sides are hashed before `hmac.compare_digest`, so neither the content nor the length of the
configured secret leaks through timing. Mode `none` (loopback only, enforced by `gateway run`)
accepts any connect, with or without `auth`.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from openclaw_cli.gateway import protocol

MODES = ("token", "password", "none")


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


def secrets_equal(given: str, expected: str) -> bool:
    return hmac.compare_digest(_digest(given), _digest(expected))


@dataclass(frozen=True)
class AuthPolicy:
    mode: str  # token | password | none
    secret: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown auth mode {self.mode!r}")
        if self.mode != "none" and not self.secret:
            raise ValueError(f"auth mode {self.mode} needs a secret")

    def check(self, auth: Any) -> str:
        """The hello-ok `auth.method` for a connect's `auth` object, or a `RequestError` raised
        with OpenClaw's codes (no auth at all: NOT_PAIRED; wrong secret: AUTH_*_MISMATCH)."""
        if self.mode == "none":
            return "none"
        if not isinstance(auth, dict):
            raise protocol.device_identity_required()
        given = auth.get(self.mode)
        if not isinstance(given, str) or not given:
            if not any(isinstance(auth.get(k), str) and auth.get(k) for k in ("token", "password")):
                raise protocol.credential_missing(self.mode)
            raise protocol.token_mismatch() if self.mode == "token" else protocol.password_mismatch()
        assert self.secret is not None
        if not secrets_equal(given, self.secret):
            raise protocol.token_mismatch() if self.mode == "token" else protocol.password_mismatch()
        return self.mode
