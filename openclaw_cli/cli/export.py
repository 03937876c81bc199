"""`openclaw sessions export`: a session's transcript as pi-format JSONL (lines byte-exact),
readable Markdown, or one self-contained HTML page (inline CSS, no scripts; tool calls and
results folded in `<details>`, compaction summaries marked). Streamed: lines come from the store
one at a time (`ops.transcript_export.open_export`) and are written as they come, so memory stays flat for
a transcript of any size. `--output` is written through a temp file and renamed into place (0600).
Stored text never reaches the output with control characters (D6.8), except JSONL, whose lines are
JSON as stored (JSON escapes them).
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from openclaw_cli.errors import UsageError

FORMATS = ("jsonl", "md", "html")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_FLUSH = 1 << 16


def _clean(value: Any) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return _CONTROL.sub("", text)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


# ---- entries as display parts ------------------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def parts_of(obj: dict[str, Any]) -> tuple[str, str, list[tuple[str, str, str]]]:
    """(kind, title, [(part kind, label, text)]) of one transcript entry; part kinds: text,
    thinking, tool-call, tool-result, summary, note. Empty title: not shown."""
    kind = obj.get("type")
    when = _clean(obj.get("timestamp"))
    if kind == "message":
        raw_message = obj.get("message")
        message = raw_message if isinstance(raw_message, dict) else {}
        role = message.get("role") or "message"
        parts: list[tuple[str, str, str]] = []
        if role == "toolResult":
            name = _clean(message.get("toolName") or "tool")
            text = "\n".join(
                _clean(b.get("text")) for b in _blocks(message.get("content")) if b.get("type") == "text"
            )
            flag = " (error)" if message.get("isError") else ""
            return (
                "tool-result",
                f"Tool result · {name}{flag} · {when}",
                [("tool-result", f"{name} result", text)],
            )
        if role == "bashExecution":
            command = _clean(message.get("command"))
            return (
                "tool-result",
                f"Shell · {when}",
                [("tool-call", "command", command), ("tool-result", "output", _clean(message.get("output")))],
            )
        for block in _blocks(message.get("content")):
            btype = block.get("type")
            if btype == "text":
                parts.append(("text", "", _clean(block.get("text"))))
            elif btype == "thinking":
                parts.append(("thinking", "Thinking", _clean(block.get("thinking"))))
            elif btype == "toolCall":
                parts.append(
                    (
                        "tool-call",
                        f"Tool call · {_clean(block.get('name'))}",
                        _clean(_json(block.get("arguments"))),
                    )
                )
            elif btype == "image":
                parts.append(("note", "", f"[image {_clean(block.get('mimeType'))}]"))
        model = _clean(message.get("model")) if role == "assistant" else ""
        title = f"{_clean(role).capitalize()} · {when}" + (f" · {model}" if model else "")
        return _clean(role), title, parts
    if kind == "compaction":
        before = obj.get("tokensBefore")
        title = f"Compaction summary · {when}" + (f" · {before} tokens before" if before is not None else "")
        return "compaction", title, [("summary", "", _clean(obj.get("summary")))]
    if kind == "branch_summary":
        return "compaction", f"Branch summary · {when}", [("summary", "", _clean(obj.get("summary")))]
    if kind == "custom_message":
        content = obj.get("content")
        text = "\n".join(_clean(b.get("text")) for b in _blocks(content) if b.get("type") == "text")
        return "custom", f"{_clean(obj.get('customType') or 'Custom message')} · {when}", [("text", "", text)]
    if kind == "model_change":
        return (
            "note",
            "",
            [("note", "", f"Model: {_clean(obj.get('provider'))}/{_clean(obj.get('modelId'))} · {when}")],
        )
    if kind == "thinking_level_change":
        return "note", "", [("note", "", f"Thinking level: {_clean(obj.get('thinkingLevel'))} · {when}")]
    if kind == "reset":
        return (
            "compaction",
            f"Reset · {when}",
            [("summary", "", _clean(obj.get("summary") or obj.get("reason")))],
        )
    if kind == "label":
        return "note", "", [("note", "", f"Label: {_clean(obj.get('label'))} · {when}")]
    return "note", "", [("note", "", f"{_clean(kind) or 'entry'} entry · {when}")]


# ---- writers ---------------------------------------------------------------------------------------------------


class _Sink:
    def __init__(self, dest: BinaryIO):
        self.dest = dest
        self.buf: list[bytes] = []
        self.size = 0
        self.total = 0

    def write(self, data: str | bytes) -> None:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self.buf.append(raw)
        self.size += len(raw)
        self.total += len(raw)
        if self.size >= _FLUSH:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.dest.write(b"".join(self.buf))
            self.buf.clear()
            self.size = 0


def write_jsonl(lines: Iterator[Any], sink: _Sink, meta: dict[str, Any]) -> int:
    count = 0
    for line in lines:
        sink.write(line.raw.encode("utf-8") + b"\n")
        count += 1
    return count


def _fence(text: str) -> str:
    longest = max((len(m.group()) for m in re.finditer(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def write_markdown(lines: Iterator[Any], sink: _Sink, meta: dict[str, Any]) -> int:
    sink.write(f"# Session {_clean(meta['key'])}\n\n")
    sink.write(
        f"- Session id: `{_clean(meta['sessionId'])}`\n- Agent: `{_clean(meta['agentId'])}`\n"
        f"- Branch: {meta['branch']}\n\n"
    )
    count = 0
    for line in lines:
        obj = line.obj
        if obj is None or obj.get("type") == "session":
            continue
        count += 1
        kind, title, parts = parts_of(obj)
        if kind == "compaction":
            sink.write(f"> **{title}**\n>\n")
            for _, _, text in parts:
                sink.write("".join(f"> {row}\n" for row in text.splitlines() or [""]))
            sink.write("\n")
            continue
        if title:
            sink.write(f"### {title}\n\n")
        for part, label, text in parts:
            if part == "text":
                sink.write(text + "\n\n")
            elif part == "note":
                sink.write(f"*{text}*\n\n")
            else:
                fence = _fence(text)
                lang = "json" if part == "tool-call" and label.startswith("Tool call") else ""
                sink.write(
                    f"<details><summary>{html.escape(label or part)}</summary>\n\n{fence}{lang}\n{text}\n"
                    f"{fence}\n\n</details>\n\n"
                )
    return count


_CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:60rem;margin:0 auto;padding:1.5rem}
header{margin-bottom:1.5rem}header h1{font-size:1.3rem;margin:0 0 .3rem}
header p{margin:.1rem 0;color:#5b6474;font-size:.85rem}code{font-family:ui-monospace,Menlo,monospace}
article{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:.7rem 1rem;margin:.7rem 0}
article.user{border-left:4px solid #3b6fd8}article.assistant{border-left:4px solid #2f9e6b}
article.tool-result{border-left:4px solid #9aa3b2;background:#fbfbfc}
article.compaction{border:2px dashed #c28a1c;background:#fff8e8}
article.compaction h2::before{content:"\\2702  "}
article.note{background:transparent;border:none;padding:0 1rem;color:#5b6474;font-size:.85rem}
h2{font-size:.8rem;font-weight:600;color:#5b6474;margin:0 0 .4rem;text-transform:none}
.text{white-space:pre-wrap;word-wrap:break-word}
details{margin:.4rem 0;border:1px solid #e3e6eb;border-radius:6px;padding:.2rem .6rem;background:#f9fafb}
summary{cursor:pointer;font-size:.85rem;color:#3d4656}
pre{white-space:pre-wrap;word-wrap:break-word;font:12.5px/1.45 ui-monospace,Menlo,monospace;margin:.4rem 0}
""".strip()


def write_html(lines: Iterator[Any], sink: _Sink, meta: dict[str, Any]) -> int:
    esc = html.escape
    title = esc(_clean(meta["key"]))
    sink.write(
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>Session {title}</title>\n<style>\n{_CSS}\n</style>\n</head>\n<body>\n<main>\n"
        f"<header><h1>Session {title}</h1>\n<p>Session id <code>{esc(_clean(meta['sessionId']))}</code> · "
        f"agent <code>{esc(_clean(meta['agentId']))}</code> · {esc(meta['branch'])} branch</p></header>\n"
    )
    count = 0
    for line in lines:
        obj = line.obj
        if obj is None or obj.get("type") == "session":
            continue
        count += 1
        kind, heading, parts = parts_of(obj)
        cls = (
            kind if kind in ("user", "assistant", "tool-result", "compaction", "note", "custom") else "other"
        )
        sink.write(f'<article class="{cls}">')
        if heading:
            sink.write(f"<h2>{esc(heading)}</h2>")
        for part, label, text in parts:
            if part in ("text", "summary", "note"):
                sink.write(f'<div class="text">{esc(text)}</div>')
            else:
                sink.write(
                    f"<details><summary>{esc(label or part)}</summary><pre>{esc(text)}</pre></details>"
                )
        sink.write("</article>\n")
    sink.write(
        f"<footer><p>{count} entries · exported by openclaw-cli</p></footer>\n</main>\n</body>\n</html>\n"
    )
    return count


WRITERS = {"jsonl": write_jsonl, "md": write_markdown, "html": write_html}


# ---- the command ------------------------------------------------------------------------------------------------


def _check_output(cx: Any, output: str) -> Path:
    from openclaw_cli.fsio import check_output_target

    return check_output_target(output, state_dir=cx.paths.state_dir, allowed_dir=cx.paths.exports_dir())


_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
}


def export_format(fmt: str | None, output: str | None) -> str:
    """`--format`, else the format `-o`'s extension names (`.jsonl`, `.md`, `.html`, …), else jsonl.
    A `--format` the extension contradicts is refused: the file would not be what its name says."""
    by_name = _EXTENSIONS.get(Path(output).suffix.lower()) if output else None
    if fmt is None:
        return by_name or "jsonl"
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)} (got {fmt!r}).")
    if by_name is not None and by_name != fmt:
        raise UsageError(
            f"--format {fmt} does not match {output} (its extension means {by_name}); "
            f"pass --format {by_name}, or name the file for {fmt}."
        )
    return fmt


def _sniff(path: Path) -> str | None:
    """The export format an existing file holds (None: empty; "other": none of ours)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256).lstrip()
    except OSError:
        return "other"
    if not head:
        return None
    lower = head.lower()
    if head.startswith(b"{"):
        return "jsonl"
    if lower.startswith((b"<!doctype html", b"<html")):
        return "html"
    if head.startswith(b"#"):
        return "md"
    return "other"


def _check_overwrite(path: Path, fmt: str) -> None:
    """Never replace an existing file holding one export format with another (a Markdown export or
    notes file about to become JSONL); a file of no export format is replaced as before."""
    if not path.exists():
        return
    found = _sniff(path)
    if found in FORMATS and found != fmt:
        raise UsageError(
            f"Refusing to overwrite {path}: it holds {found}, and this export is {fmt}. "
            f"Choose another --output path, pass --format {found}, or remove the file first."
        )


def redacted_lines(lines: Iterator[Any]) -> Iterator[Any]:
    """`--redact`: each line's raw JSON masked by `openclaw_cli.redact` (the rules `sessions search
    --redact` applies to snippets) and parsed again; a line the masking left unparseable becomes a
    note (never the unmasked original)."""
    import orjson

    from openclaw_cli.redact import redact
    from openclaw_cli.store.base import TranscriptLine

    for line in lines:
        raw = redact(line.raw)
        if raw == line.raw:
            yield line
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raw = orjson.dumps({"type": "redacted", "note": "line withheld by --redact"}).decode()
            obj = orjson.loads(raw)
        yield TranscriptLine(line.seq, raw, obj if isinstance(obj, dict) else None, line.line_no)


def export_session(
    cx: Any,
    key: str,
    *,
    fmt: str,
    output: str | None,
    branch: str,
    agent: str | None,
    store: str | None,
    json_mode: bool,
    redact: bool = False,
) -> dict[str, Any]:
    from openclaw_cli.fsio import atomic_file
    from openclaw_cli.ops.transcript_export import open_export

    fmt = export_format(fmt, output)
    if json_mode and output is None:
        raise UsageError("--json needs --output PATH (without it the export itself is written to stdout).")
    path = _check_output(cx, output) if output is not None else None
    if path is not None:
        _check_overwrite(path, fmt)
    with open_export(cx, key, agent=agent, store=store, branch=branch) as source:
        meta = {
            "key": source.key,
            "sessionId": source.session_id,
            "agentId": source.agent_id,
            "branch": branch,
        }
        lines = redacted_lines(source.lines()) if redact else source.lines()
        if path is None:
            sink = _Sink(sys.stdout.buffer)
            count = WRITERS[fmt](lines, sink, meta)
            sink.flush()
            sys.stdout.buffer.flush()
            return {}
        with atomic_file(path) as fh:
            sink = _Sink(fh)
            count = WRITERS[fmt](lines, sink, meta)
            sink.flush()
        doc: dict[str, Any] = {
            "ok": True,
            "key": source.key,
            "sessionId": source.session_id,
            "agentId": source.agent_id,
            "format": fmt,
            "branch": branch,
            "output": str(path),
            "entries": count,
            "bytes": sink.total,
        }
        if source.issues:
            doc["issues"] = [str(i) for i in source.issues]
        if not json_mode:  # the result (D19: stdout; the export itself went to the file)
            from openclaw_cli.output import out, sanitize_text

            out(
                f"Exported {count} entries of {sanitize_text(source.key)} ({branch} branch, {fmt}) to "
                f"{sanitize_text(str(path))}."
            )
        return doc
