"""Our Gateway's log file (what `logs.tail` pages, `ops/gateway_reads.py`): one JSON object a line
in the fields OpenClaw's log readers parse (`time`, `level`, `subsystem`, `message`), so the real
`openclaw logs` prints our lines as it prints its own. Appended with O_APPEND (one write a line),
never rotated here; a line that cannot be written is dropped (logging must not stop serving)."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from openclaw_cli.fsio import ensure_dir

_PREFIX = re.compile(r"\[([^\]]+)\] ?(.*)", re.S)


class LogFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, text: str, level: str = "info") -> None:
        found = _PREFIX.match(text)
        subsystem, message = (found.group(1), found.group(2)) if found else ("gateway", text)
        record = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),  # as OpenClaw writes it
            "level": level,
            "subsystem": subsystem,
            "message": message,
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        try:
            ensure_dir(self.path.parent)  # 0700 like every directory we create (D6.6)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError:
            pass
