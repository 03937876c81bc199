"""The safeguard pipeline (§4.9), one test per step: the real-conversation check and the structured
fallback (step 2), the suffix sections (step 3: tool failures, workspace critical rules), the
provider path (step 4), history pruning (step 5), the audit's identifiers (step 6), recent turns
verbatim (step 7) and the attempt loop with the artifact budget (step 9), with the built-in
summariser and with an OpenAI-compatible endpoint (a local HTTP server)."""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_cli.compaction import build_compaction_entry, plan_compaction, summarize_plan
from openclaw_cli.compaction.identifiers import REQUIRED_SAFEGUARD_HEADINGS
from openclaw_cli.compaction.safeguard import (
    ARTIFACT_MAX_CHARS,
    ARTIFACT_TRUNCATED_MARKER,
    RECENT_TURNS_HEADING,
    RECENT_TURNS_TRUNCATED,
    finalize,
    has_real_conversation,
    prune_for_history_share,
    recent_turns_section,
    split_recent_turns,
    tool_failures_section,
)
from openclaw_cli.compaction.summarizer import structured_fallback_summary
from openclaw_cli.compaction.thresholds import CompactionSettings
from openclaw_cli.compaction.tokens import estimate_message_tokens
from openclaw_cli.compaction.workspace_rules import (
    critical_rules_section,
    extract_sections,
    read_critical_rules,
)
from tests.session_generator import generate_session
from tests.test_compaction_providers import FakeLLM, provider

SAFEGUARD = CompactionSettings(mode="safeguard")


def U(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def A(text: str, calls: list[tuple[str, str, dict]] = ()) -> dict:
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return {"role": "assistant", "content": content, "stopReason": "toolUse" if calls else "stop"}


def T(call: str, text: str, *, error: bool = False, tool: str = "bash", details: dict | None = None) -> dict:
    out = {
        "role": "toolResult",
        "toolCallId": call,
        "toolName": tool,
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }
    if details:
        out["details"] = details
    return out


def entries(messages: list[dict]) -> list[dict]:
    out, parent = [], None
    for i, message in enumerate(messages):
        ident = f"e{i:05d}"
        out.append(
            {
                "type": "message",
                "id": ident,
                "parentId": parent,
                "message": message,
                "timestamp": f"2026-10-01T09:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
            }
        )
        parent = ident
    return out


def turns(n: int, *, start: int = 0, size: int = 400) -> list[dict]:
    """n user turns with a tool call each; turn k mentions /srv/t{k}/file.py and ticket OPS-{10000+k}."""
    out: list[dict] = []
    for k in range(start, start + n):
        out += [
            U(f"Turn {k}: please fix /srv/t{k}/file.py for OPS-{10000 + k}. " + "detail " * (size // 7)),
            A(f"Looking at turn {k}.", [(f"call_{k:012x}", "read", {"path": f"/srv/t{k}/file.py"})]),
            T(f"call_{k:012x}", f"contents of turn {k} " + "x = 1\n" * (size // 6), tool="read"),
            A(f"Fixed the check of turn {k}."),
        ]
    return out


class Recorder:
    """A third-party provider (not builtin, not openai): records its requests, answers or fails."""

    id = "recorder"

    def __init__(self, answer: str | Exception = "## Decisions\n- provider summary") -> None:
        self.answer = answer
        self.requests: list[Any] = []

    def summarize(self, request: Any) -> str:
        self.requests.append(request)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def llm():
    server = FakeLLM()
    yield server
    server.close()


# -- step 2 ------------------------------------------------------------------------------------
def test_no_real_conversation_writes_the_structured_fallback_without_a_call():
    silent = [U("HEARTBEAT_OK"), A("NO_REPLY"), U("   "), A("HEARTBEAT_OK"), U("tail one"), A("tail two")]
    plan = plan_compaction(entries(silent), keep_recent_tokens=3)
    assert plan.ready and not has_real_conversation(plan.messages_to_summarize)
    recorder = Recorder()
    outcome = summarize_plan(plan, recorder, settings=SAFEGUARD)
    assert recorder.requests == [] and outcome.summary == structured_fallback_summary(None)
    assert outcome.quality is None
    # a previous five-heading summary is reused as is; an image is a real message
    assert has_real_conversation([{"role": "user", "content": [{"type": "image", "data": "AA"}]}])


# -- step 3 ------------------------------------------------------------------------------------
def test_tool_failures_section():
    failures = [T(f"c{i}", f"  error   {i}\n  at line {i}  ", error=True) for i in range(10)]
    failures.insert(3, T("c1", "the same call again", error=True))  # deduplicated by toolCallId
    failures.append(T("c99", "", error=True, tool="exec", details={"status": "failed", "exitCode": 2}))
    failures.append(T("ok", "fine"))
    section = tool_failures_section(failures)
    lines = section.splitlines()
    assert section.startswith("\n\n## Tool Failures\n")
    assert lines[3:5] == ["- bash: error 0 at line 0", "- bash: error 1 at line 1"]
    assert len(lines) == 3 + 8 + 1 and lines[-1] == "- ...and 3 more"
    long = tool_failures_section([T("c", "y" * 500, error=True)])
    assert long.endswith("- bash: " + "y" * 240)
    assert tool_failures_section(
        [T("c99", "", error=True, tool="exec", details={"status": "failed", "exitCode": 2})]
    ).endswith("- exec (status=failed exitCode=2): failed (no output)")
    assert tool_failures_section([T("ok", "fine")]) == ""


AGENTS_MD = """# Workspace

## Session Startup
1. Read MEMORY.md first.

```md
## Not a heading (inside a fence)
```

### Red Lines
- Never push to main.

## Tools
- Use the sandbox.

## red lines
This duplicate name is ignored (the first section wins).

## Every Session
Legacy startup.

## Safety
Legacy safety rules.
"""


def test_workspace_rules_h2_h3_sections_fences_and_caps():
    sections = extract_sections(AGENTS_MD, ["Red Lines", "session startup", "RED LINES"])
    # configured order, each once; an H3 inside an H2 belongs to it and is also found on its own
    assert len(sections) == 2 and sections[0] == "### Red Lines\n- Never push to main."
    assert sections[1].startswith("## Session Startup\n1. Read MEMORY.md first.")
    assert "## Not a heading (inside a fence)" in sections[1] and "## Tools" not in sections[1]
    section = critical_rules_section(AGENTS_MD, ["Tools"])
    assert (
        section == "\n\n<workspace-critical-rules>\n## Tools\n- Use the sandbox.\n</workspace-critical-rules>"
    )
    assert critical_rules_section(AGENTS_MD, ["Nothing here"]) == ""
    # the default pair falls back to the legacy pair when neither exists
    legacy = (
        AGENTS_MD.replace("## Session Startup", "## Startup")
        .replace("### Red Lines", "### Lines")
        .replace("## red lines", "## lines")
    )
    fallback = critical_rules_section(legacy, ["Session Startup", "Red Lines"])
    assert "## Every Session\nLegacy startup." in fallback and "## Safety\nLegacy safety rules." in fallback
    assert critical_rules_section(legacy, ["Red Lines"]) == ""  # only the pair falls back
    big = "## Red Lines\n" + "- rule\n" * 1000
    capped = critical_rules_section(big, ["Red Lines"])
    inner = capped.split("<workspace-critical-rules>\n")[1].split("\n</workspace-critical-rules>")[0]
    assert len(inner) <= 2000 and inner.endswith("...[truncated]...")


def test_workspace_rules_reach_a_safeguard_summary(tmp_path):
    (tmp_path / "AGENTS.md").write_text(AGENTS_MD)
    assert (
        read_critical_rules(tmp_path, None) == ""
        and read_critical_rules(tmp_path / "missing", ["Tools"]) == ""
    )
    plan = plan_compaction(entries(turns(6)), keep_recent_tokens=300)
    settings = CompactionSettings(mode="safeguard", post_compaction_sections=("Red Lines",))
    summary = summarize_plan(plan, settings=settings, workspace_dir=tmp_path).summary
    assert (
        "<workspace-critical-rules>\n### Red Lines\n- Never push to main.\n</workspace-critical-rules>"
        in summary
    )
    default_mode = summarize_plan(
        plan, settings=CompactionSettings(post_compaction_sections=("Red Lines",)), workspace_dir=tmp_path
    ).summary
    assert "workspace-critical-rules" not in default_mode  # a safeguard step only


# -- step 4 ------------------------------------------------------------------------------------
def test_provider_path_gets_the_whole_part_and_is_finalised_without_audit():
    messages = [
        *turns(4),
        U("Turn 4: big " + "y" * 30000),
        A("partial", [("call_big", "read", {"path": "/srv/b"})]),
        T("call_big", "z" * 30000, tool="read"),
        A("Still reading."),
    ]
    plan = plan_compaction(entries(messages), keep_recent_tokens=5000)
    assert plan.is_split_turn
    recorder = Recorder()
    outcome = summarize_plan(plan, recorder, settings=SAFEGUARD, custom_instructions="mind the API")
    (request,) = recorder.requests
    assert list(request.messages) == [*plan.messages_to_summarize, *plan.turn_prefix_messages]
    assert (
        "## Exact identifiers" in request.custom_instructions
        and "mind the API" in request.custom_instructions
    )
    assert outcome.provider_used == "recorder" and outcome.quality is None
    summary = outcome.summary
    assert summary.startswith("## Decisions\n- provider summary")
    assert "**Turn Context (split turn):**\n\n[User]: Turn 4: big" in summary  # the formatted prefix
    assert RECENT_TURNS_HEADING.strip() in summary
    # a failing provider: the built-in path takes over, with the audit
    failing = summarize_plan(plan, Recorder(RuntimeError("down")), settings=SAFEGUARD)
    assert failing.provider_used == "builtin" and "down" in failing.fallback_reason
    assert failing.quality is not None and failing.quality.passed


# -- step 5 ------------------------------------------------------------------------------------
def test_history_pruning_decision_and_chunks():
    history = turns(8, size=2000)
    total = sum(estimate_message_tokens(m) for m in history)
    assert prune_for_history_share(history, [], total + 100, 200000, 0.5) is None  # new content is small
    pruned = prune_for_history_share(history, [], total + 7000, 10000, 0.5)  # 7000 > floor(10000 * 0.5 * 1.2)
    assert pruned is not None and pruned.new_content_tokens == 7000 and pruned.max_history_tokens == 6000
    assert pruned.dropped + pruned.kept == history  # oldest chunks first, order kept
    assert sum(estimate_message_tokens(m) for m in pruned.kept) <= 5000
    assert not [
        m
        for m in pruned.kept
        if m["role"] == "toolResult"
        and m["toolCallId"]
        not in {c["id"] for a in pruned.kept for c in a.get("content", []) if c.get("type") == "toolCall"}
    ]


def test_history_pruning_summarises_the_dropped_part_first():
    plan = plan_compaction(entries(turns(30, size=1500)), keep_recent_tokens=6000)
    outcome = summarize_plan(plan, settings=SAFEGUARD, context_window=8000)  # kept tail > 8000 * 0.5 * 1.2
    summary = outcome.summary
    assert outcome.pruned_messages > 0 and outcome.preserved_messages > 0
    assert summarize_plan(plan, settings=SAFEGUARD).pruned_messages == 0  # 200000: the tail is small
    assert "Original goal: Turn 0: please fix /srv/t0/file.py" in summary  # from the pruned part's summary
    assert outcome.quality.passed and len(summary) <= ARTIFACT_MAX_CHARS
    planted = {f"/srv/t{k}/file.py" for k in range(30)} | {f"OPS-{10000 + k}" for k in range(30)}
    compacted = {
        f"OPS-{10000 + k}"
        for k in range(30)
        if any(f"OPS-{10000 + k}" in str(m) for m in plan.messages_to_summarize)
    }
    assert compacted and compacted <= set(outcome.identifiers_kept) | set(outcome.identifiers_dropped)
    assert not [i for i in outcome.identifiers_kept if i in planted and i not in summary]


def test_history_pruning_with_a_model_feeds_the_dropped_summary_forward(llm: FakeLLM):
    plan = plan_compaction(entries(turns(30, size=1500)), keep_recent_tokens=6000)
    full = "\n".join(f"{h}\n- ok" for h in REQUIRED_SAFEGUARD_HEADINGS)

    def answer(body: dict) -> str:  # the dropped part's calls, then the history's (previous summary first)
        prompt = body["messages"][1]["content"]
        return (
            full
            if "previous-compaction-summary" in prompt or "\n- ok\n" in prompt
            else "## Decisions\n- EARLY-SUMMARY-7"
        )

    llm.responder = answer
    settings = CompactionSettings(mode="safeguard", recent_turns_preserve=0)
    outcome = summarize_plan(plan, provider(llm), settings=settings, context_window=8000)
    assert outcome.pruned_messages > 0 and outcome.provider_used == "openai-compatible"
    prompts = [r["body"]["messages"][1]["content"] for r in llm.requests]
    assert "Turn 0: please fix" in prompts[0]  # the oldest chunk first
    history = [p for p in prompts if "previous-compaction-summary" in p]
    assert len(history) == 1 and history[0].startswith(
        "<conversation>\n[User]: <previous-compaction-summary>\n## Decisions\n- EARLY-SUMMARY-7"
    )
    assert not [p for p in prompts[prompts.index(history[0]) :] if "Turn 0: please fix" in p]
    # every remaining message preserved verbatim: no history call, the structured fallback keeps the first
    llm.requests.clear()
    everything = summarize_plan(plan, provider(llm), settings=SAFEGUARD, context_window=8000)
    assert not [
        r for r in llm.requests if "previous-compaction-summary" in r["body"]["messages"][1]["content"]
    ]
    assert everything.summary.startswith(structured_fallback_summary("## Decisions\n- EARLY-SUMMARY-7"))


# -- steps 6 and 7 -----------------------------------------------------------------------------
def test_recent_turns_split_and_rendering():
    messages = [
        U("one"),
        A("reply one"),
        U("two"),
        A("", [("c2", "bash", {"command": "ls"})]),
        T("c2", "a\nb"),
        A("reply two"),
        U("three"),
        A("reply three"),
    ]
    older, preserved = split_recent_turns(messages, 2)
    assert older == messages[:2] and preserved == messages[2:]
    assert split_recent_turns(messages, 0) == (messages, [])
    assert split_recent_turns(messages, 12) == ([], messages)
    section = recent_turns_section(preserved)
    assert section == (
        RECENT_TURNS_HEADING + "- User: two\n- Tool result (bash): a b\n- Assistant: reply two\n"
        "- User: three\n- Assistant: reply three"
    )
    long = recent_turns_section([U("q" * 700)])
    assert long.endswith("- User: " + "q" * 600 + "...")
    many = recent_turns_section([U(f"{i} " + "w" * 590) for i in range(20)])
    assert RECENT_TURNS_TRUNCATED in many and len(many) <= 8000 + len(RECENT_TURNS_HEADING) + 40
    assert many.rstrip().endswith("w" * 590)  # the newest are kept


def test_preserved_turns_keep_their_identifiers_and_satisfy_the_audit():
    tail = "Please also rotate the staging credentials " + "z" * 700 + " and keep ticket SEC-424242 open."
    messages = [*turns(5), U(tail), A("Will do."), *turns(1, start=50)]
    plan = plan_compaction(entries(messages), keep_recent_tokens=200)
    outcome = summarize_plan(plan, settings=CompactionSettings(mode="safeguard", recent_turns_preserve=1))
    summary = outcome.summary
    verbatim = summary.split("## Recent turns preserved verbatim\n")[1]
    assert verbatim.startswith("- User: Please also rotate the staging credentials")
    assert "SEC-424242" not in verbatim.split("\n")[0]  # cut at 600 characters...
    assert (
        "`SEC-424242`" in summary and "SEC-424242" in outcome.identifiers_kept
    )  # ...but kept as an identifier
    assert outcome.quality.passed and outcome.quality.attempts == 1


def test_audit_identifiers_are_kept_whatever_the_budget():
    from openclaw_cli.compaction.identifiers import extract_audit_identifiers
    from openclaw_cli.compaction.messages import text_of

    messages = [
        *turns(300, size=60),
        U("last ask: check /srv/final/app.py and 0a1b2c3d4e5f6789"),
        A("", [("call_final", "bash", {"command": "make"})]),
        T("call_final", "wrote /var/out/final/result.json, build 0badc0de12345678"),
        A("ok"),
        U("tail " * 30),
        A("tail"),
    ]
    plan = plan_compaction(entries(messages), keep_recent_tokens=20)
    outcome = summarize_plan(
        plan, settings=CompactionSettings(mode="safeguard", recent_turns_preserve=0), max_output_tokens=200
    )  # a small identifier budget
    audit = extract_audit_identifiers(text_of(m) for m in plan.messages_to_summarize[-10:])
    assert (
        "/srv/final/app.py" in audit and "0A1B2C3D4E5F6789" in audit and "/var/out/final/result.json" in audit
    )
    # tool output comes last in the identifier budget: without the audit's list these would be left out
    assert (
        "/var/out/final/result.json" in outcome.identifiers_kept
        and "0badc0de12345678" in outcome.identifiers_kept
    )
    assert outcome.identifiers_dropped and outcome.quality.passed and outcome.quality.attempts == 1
    assert all(i.lower() in outcome.summary.lower() for i in audit)


# -- step 9 ------------------------------------------------------------------------------------
def test_artifact_budget_suffix_loses_its_head_first():
    body, suffix = "B" * 9000, "".join(f"\nsuffix line {i:05d}" for i in range(1000))
    out = finalize(body, suffix)
    assert len(out) == ARTIFACT_MAX_CHARS and out.startswith(body)
    assert ARTIFACT_TRUNCATED_MARKER in out and out.endswith(suffix[-100:])
    assert finalize("short", "suffix") == "shortsuffix"
    huge = finalize("L" * 40000, "\n<read-files>\na.py\n</read-files>")
    assert len(huge) <= ARTIFACT_MAX_CHARS and "[Compaction summary truncated to fit budget]" in huge
    assert huge.endswith("</read-files>")


def test_builtin_safeguard_summary_fits_the_artifact_and_reports_what_it_left_out():
    session = generate_session(31, turns=160)
    plan = plan_compaction(session.entries, keep_recent_tokens=3000)
    outcome = summarize_plan(plan, settings=SAFEGUARD)
    summary = outcome.summary
    assert len(summary) <= ARTIFACT_MAX_CHARS
    assert [h for h in REQUIRED_SAFEGUARD_HEADINGS if h not in summary.splitlines()] == []
    assert outcome.identifiers_dropped and not [i for i in outcome.identifiers_dropped if f"`{i}`" in summary]
    assert all(i in summary for i in outcome.identifiers_kept)
    # the default mode has no artifact budget: more fits, nothing is cut
    default = summarize_plan(plan)
    assert len(default.summary) > ARTIFACT_MAX_CHARS and len(default.identifiers_dropped) < len(
        outcome.identifiers_dropped
    )


def test_llm_inputs_previous_summary_message_preserved_turns_and_corrective_retry(llm: FakeLLM):
    first = plan_compaction(entries(turns(6)), keep_recent_tokens=300)
    previous = summarize_plan(first, settings=SAFEGUARD).summary
    branch = [*entries(turns(6)), build_compaction_entry(first, previous, entry_id="cmp00001")]
    later = entries(turns(6, start=6))
    later[0]["parentId"] = "cmp00001"
    plan = plan_compaction([*branch, *later], keep_recent_tokens=300)
    assert plan.previous_summary == previous
    last = max(k for k in range(12) if any(f"Turn {k}:" in str(m) for m in plan.messages_to_summarize))
    llm.replies = [
        "## Decisions\nonly one section",
        "\n".join(f"{h}\n- fixed" for h in REQUIRED_SAFEGUARD_HEADINGS) + "\nTurn 6 ticket OPS-10006",
    ]
    outcome = summarize_plan(
        plan, provider(llm), settings=CompactionSettings(mode="safeguard", recent_turns_preserve=1)
    )
    assert outcome.provider_used == "openai-compatible" and outcome.quality.attempts == 2
    prompts = [r["body"]["messages"][1]["content"] for r in llm.requests]
    conversation = prompts[0].split("</conversation>")[0]
    assert conversation.startswith("<conversation>\n[User]: <previous-compaction-summary>\n## Decisions")
    assert "<previous-summary>" not in prompts[0]  # not the default-mode block
    assert f"Turn {last - 1}:" in conversation and f"Turn {last}:" not in conversation  # the preserved turn
    assert "Previous summary failed quality checks (missing_section:## Open TODOs" in prompts[1]
    summary = outcome.summary
    assert summary.startswith("## Decisions\n- fixed") and f"- User: Turn {last}: please fix" in summary
    assert len(summary) <= ARTIFACT_MAX_CHARS
    # what the model left out is reported (it wrote only one ticket of turns 6-10)
    assert "OPS-10007" in outcome.identifiers_dropped and "OPS-10007" not in summary
    assert "OPS-10006" in outcome.identifiers_kept


def test_compact_reads_the_agents_workspace_rules(state_dir, tmp_path):
    """`openclaw compact` in safeguard mode: AGENTS.md from `<stateDir>/workspace`, or from
    `agents.defaults.workspace` (with `~`), or from the agent's roster entry."""
    import json

    from tests.compact_support import invoke, write_legacy_state

    write_legacy_state(state_dir, {"agent:main:main": generate_session(41, turns=12)})

    def run(agents: dict) -> str:
        agents = {
            "defaults": {
                "compaction": {"mode": "safeguard", "postCompactionSections": ["Red Lines"]},
                **agents.pop("defaults", {}),
            },
            **agents,
        }
        (state_dir / "openclaw.json").write_text(json.dumps({"agents": agents}))
        code, doc, err = invoke("compact", "agent:main:main", "--dry-run", "--keep-recent-tokens", "1000")
        assert code == 0, (doc, err)
        return doc["summary"]

    assert "workspace-critical-rules" not in run({})  # no AGENTS.md anywhere yet
    (state_dir / "workspace").mkdir()
    (state_dir / "workspace" / "AGENTS.md").write_text("## Red Lines\n- default workspace rule\n")
    assert "- default workspace rule\n</workspace-critical-rules>" in run({})
    home_ws = state_dir.parent / "ws"  # the isolated HOME is state_dir's parent
    home_ws.mkdir()
    (home_ws / "AGENTS.md").write_text("## Red Lines\n- configured workspace rule\n")
    assert "- configured workspace rule" in run({"defaults": {"workspace": "~/ws"}})
    other = tmp_path / "entry-ws"
    other.mkdir()
    (other / "AGENTS.md").write_text("## Red Lines\n- roster workspace rule\n")
    assert "- roster workspace rule" in run({"list": [{"id": "main", "workspace": str(other)}]})
