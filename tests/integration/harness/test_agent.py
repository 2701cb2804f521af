"""The agent loop (``alisio.shell.harness.agent.run_agent``) with the scripted provider, a real temp workspace and real tools."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from alisio.core.harness.budget import RunBudget
from alisio.core.harness.compaction import CHECKPOINT_PREFIX
from alisio.core.harness.config import AgentConfig, Compaction, Limits, MeasuredConfig, Sampling, ToolSettings
from alisio.core.harness.events import (
    ApprovalDecided,
    BudgetStopped,
    Compacted,
    Effect,
    Event,
    IncidentRaised,
    ProviderRequested,
    RunEnded,
    ToolCalled,
    ToolResulted,
)
from alisio.core.harness.policy import ALL_EFFECTS, Policy, PolicyMode
from alisio.core.harness.protocol import ProviderRequest, StreamEvent, ToolCall, ToolMessage
from alisio.core.replay.fingerprint import fingerprint, normalize_request, path_rules
from alisio.shell.harness.agent import AgentSetup, ApprovalAnswer, RunResult, run_agent
from alisio.shell.harness.providers.openai_compat import OpenAICompatProvider
from alisio.shell.harness.providers.scripted import ScriptedProvider
from tests.integration.sse_server import Reply, SseServer

SHORT = MeasuredConfig(instructions="You are a test agent.")
BIG_BUDGET = RunBudget(max_turns=50, max_wall_ms=60_000)


def script(tmp_path: Path, *turns: dict[str, object], checkpoint: str | None = None) -> ScriptedProvider:
    path = tmp_path / "script.json"
    body: dict[str, object] = {"turns": list(turns)}
    if checkpoint is not None:
        body["checkpoint"] = checkpoint
    path.write_text(json.dumps(body))
    return ScriptedProvider.from_file(path)


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


def usage(inp: int, out: int) -> dict[str, int]:
    return {"inputTokens": inp, "outputTokens": out}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "math.py").write_text("def add(a, b):\n    return a - b\n")
    return root


def run(
    workspace: Path,
    provider: object,
    *,
    policy: Policy | None = None,
    granted: frozenset[Effect] = ALL_EFFECTS,
    budget: RunBudget = BIG_BUDGET,
    measured: MeasuredConfig = SHORT,
    approver: object = None,
    agent: str | None = None,
    prompt: str = "Fix add in math.py.",
) -> RunResult:
    setup = AgentSetup(
        prompt=prompt,
        workspace=workspace,
        provider=provider,  # type: ignore[arg-type]
        model="test-model",
        measured=measured,
        policy=policy or Policy(mode=PolicyMode.AUTO, allow=frozenset({Effect.WRITE, Effect.PROCESS})),
        granted=granted,
        budget=budget,
        approver=approver,  # type: ignore[arg-type]
        agent=agent,
    )
    return run_agent(setup)


def of(events: Sequence[Event], kind: type[Event]) -> list[Event]:
    return [event for event in events if isinstance(event, kind)]


def incidents(result: RunResult) -> list[str]:
    return [str(event.kind) for event in of(result.events, IncidentRaised)]  # type: ignore[attr-defined]


def test_a_multi_turn_run_reads_then_edits_a_file(workspace: Path, tmp_path: Path) -> None:
    """read_file then edit_file then text: the file is fixed, the run completes, the log is in order."""
    provider = script(
        tmp_path,
        {"text": "Reading.", "toolCalls": [call("read_file", path="math.py")], "usage": usage(50, 10)},
        {
            "toolCalls": [call("edit_file", path="math.py", old_string="a - b", new_string="a + b")],
            "usage": usage(90, 20),
        },
        {"text": "Fixed add.", "usage": usage(120, 5)},
    )
    result = run(workspace, provider)
    assert (result.outcome, result.reason, result.final_text, result.turns) == (
        "completed",
        None,
        "Fixed add.",
        3,
    )
    assert (workspace / "math.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert result.main_tokens == 50 + 10 + 90 + 20 + 120 + 5 and result.usage_complete
    assert [type(event).__name__ for event in result.events] == [
        "RunStarted",
        "ProviderRequested",
        "ProviderResponded",
        "ToolCalled",
        "ToolResulted",
        "ProviderRequested",
        "ProviderResponded",
        "ToolCalled",
        "ToolResulted",
        "ProviderRequested",
        "ProviderResponded",
        "RunEnded",
    ]
    assert [event.seq for event in result.events] == list(range(12))
    elapsed = [event.elapsed_ms for event in result.events]
    assert elapsed == sorted(elapsed)
    calls = of(result.events, ToolCalled)
    assert [(c.name, c.effect) for c in calls] == [("read_file", Effect.READ), ("edit_file", Effect.WRITE)]  # type: ignore[attr-defined]
    assert all(r.ok for r in of(result.events, ToolResulted))  # type: ignore[attr-defined]
    assert incidents(result) == []
    fingerprints = [r.fingerprint for r in of(result.events, ProviderRequested)]  # type: ignore[attr-defined]
    assert len(set(fingerprints)) == 3 and all(len(f) == 64 for f in fingerprints)


def test_max_turns_stops_before_the_extra_turn(workspace: Path, tmp_path: Path) -> None:
    """maxTurns 2 with a model that keeps calling tools: 2 provider calls, then budget_exceeded maxTurns."""
    provider = script(tmp_path, *[{"toolCalls": [call("read_file", path="math.py")]}] * 5)
    result = run(workspace, provider, budget=RunBudget(max_turns=2, max_wall_ms=60_000))
    assert (result.outcome, result.reason, result.turns) == ("budget_exceeded", "maxTurns", 2)
    stop = of(result.events, BudgetStopped)
    assert [(s.budget, s.limit, s.value) for s in stop] == [("maxTurns", 2, 3)]  # type: ignore[attr-defined]
    assert len(of(result.events, ProviderRequested)) == 2
    assert isinstance(result.events[-1], RunEnded) and isinstance(result.events[-2], BudgetStopped)


def test_max_tool_calls_stops_before_the_extra_call(workspace: Path, tmp_path: Path) -> None:
    """maxToolCalls 2 and a turn with 3 calls: two run, the third stops the run."""
    provider = script(tmp_path, {"toolCalls": [call("read_file", path="math.py")] * 3}, {"text": "never"})
    result = run(workspace, provider, budget=RunBudget(max_turns=10, max_wall_ms=60_000, max_tool_calls=2))
    assert (result.outcome, result.reason, result.tool_calls) == ("budget_exceeded", "maxToolCalls", 2)
    assert len(of(result.events, ToolResulted)) == 2
    assert [(s.limit, s.value) for s in of(result.events, BudgetStopped)] == [(2, 3)]  # type: ignore[attr-defined]


def test_max_tokens_stops_on_reported_usage_overshooting_by_one_response(
    workspace: Path, tmp_path: Path
) -> None:
    """100 tokens per turn and maxTokens 250: the run stops before turn 4, having used 300."""
    turn = {"toolCalls": [call("read_file", path="math.py")], "usage": usage(60, 40)}
    provider = script(tmp_path, *[turn] * 6)
    budget = RunBudget(max_turns=10, max_wall_ms=60_000, max_tokens=250)
    result = run(workspace, provider, budget=budget)
    assert (result.outcome, result.reason, result.turns, result.main_tokens) == (
        "budget_exceeded",
        "maxTokens",
        3,
        300,
    )
    assert [(s.limit, s.value) for s in of(result.events, BudgetStopped)] == [(250, 300)]  # type: ignore[attr-defined]


def test_without_usage_max_tokens_is_not_enforced_and_each_turn_is_an_incident(
    workspace: Path, tmp_path: Path
) -> None:
    """No usage reported: maxTokens never stops the run, and each main turn raises usage_unreported."""
    provider = script(tmp_path, *[{"toolCalls": [call("read_file", path="math.py")]}] * 3, {"text": "ok"})
    budget = RunBudget(max_turns=10, max_wall_ms=60_000, max_tokens=1)
    result = run(workspace, provider, budget=budget)
    assert result.outcome == "completed" and result.turns == 4
    assert incidents(result) == ["usage_unreported"] * 4
    assert result.main_tokens is None and not result.usage_complete


def test_max_wall_ms_kills_a_running_sleep(workspace: Path, tmp_path: Path) -> None:
    """maxWallMs 1500 and `sleep 30`: the command is killed at the deadline and the run stops maxWallMs."""
    provider = script(tmp_path, {"toolCalls": [call("bash", command="sleep 30")]}, {"text": "never"})
    started = time.monotonic()
    result = run(workspace, provider, budget=RunBudget(max_turns=10, max_wall_ms=1500))
    took = time.monotonic() - started
    assert (result.outcome, result.reason) == ("budget_exceeded", "maxWallMs")
    assert took < 10
    assert "tool_timeout" in incidents(result)
    assert [r.ok for r in of(result.events, ToolResulted)] == [False]  # type: ignore[attr-defined]
    stop = of(result.events, BudgetStopped)[0]
    assert stop.limit == 1500 and stop.value >= 1500  # type: ignore[attr-defined]


def test_headless_ask_denies_with_approval_denied(workspace: Path, tmp_path: Path) -> None:
    """Mode ask with no approver: the write is denied (by headless), nothing is written, the run goes on."""
    provider = script(
        tmp_path, {"toolCalls": [call("write_file", path="new.py", content="x")]}, {"text": "gave up"}
    )
    result = run(workspace, provider, policy=Policy(mode=PolicyMode.ASK))
    assert result.outcome == "completed" and result.final_text == "gave up"
    assert not (workspace / "new.py").exists()
    approvals = of(result.events, ApprovalDecided)
    assert [(a.granted, a.by, a.effect) for a in approvals] == [(False, "headless", Effect.WRITE)]  # type: ignore[attr-defined]
    assert incidents(result) == ["usage_unreported", "approval_denied", "usage_unreported"]
    denied = of(result.events, ToolResulted)[0]
    assert not denied.ok and "denied" in denied.output_excerpt  # type: ignore[attr-defined]


def test_auto_refuses_an_ungranted_effect_without_an_approval(workspace: Path, tmp_path: Path) -> None:
    """Mode auto, process not granted: bash is refused with effect_refused and no approval event."""
    provider = script(tmp_path, {"toolCalls": [call("bash", command="touch made")]}, {"text": "ok"})
    policy = Policy(mode=PolicyMode.AUTO, allow=frozenset({Effect.WRITE}))
    result = run(workspace, provider, policy=policy, granted=frozenset({Effect.READ, Effect.WRITE}))
    assert not (workspace / "made").exists()
    assert of(result.events, ApprovalDecided) == []
    assert "effect_refused" in incidents(result)
    assert "not granted" in of(result.events, ToolResulted)[0].output_excerpt  # type: ignore[attr-defined]


def test_an_always_answer_grants_the_effect_for_the_rest_of_the_run(workspace: Path, tmp_path: Path) -> None:
    """The user answers always once: the second write runs without asking again."""
    asked: list[tuple[str, Effect]] = []

    def approver(tool_call: ToolCall, effect: Effect) -> ApprovalAnswer:
        asked.append((tool_call.name, effect))
        return "always"

    provider = script(
        tmp_path,
        {
            "toolCalls": [
                call("write_file", path="a.txt", content="1"),
                call("write_file", path="b.txt", content="2"),
            ]
        },
        {"text": "done"},
    )
    result = run(workspace, provider, policy=Policy(mode=PolicyMode.ASK), approver=approver)
    assert asked == [("write_file", Effect.WRITE)]
    assert (workspace / "a.txt").read_text() == "1" and (workspace / "b.txt").read_text() == "2"
    assert [(a.granted, a.by) for a in of(result.events, ApprovalDecided)] == [(True, "user")]  # type: ignore[attr-defined]


def test_a_user_who_says_no_is_an_approval_denied(workspace: Path, tmp_path: Path) -> None:
    """The user answers no: approval by user, not granted, approval_denied, nothing written."""
    provider = script(
        tmp_path, {"toolCalls": [call("write_file", path="a.txt", content="1")]}, {"text": "done"}
    )
    result = run(workspace, provider, policy=Policy(mode=PolicyMode.ASK), approver=lambda c, e: "no")
    assert [(a.granted, a.by) for a in of(result.events, ApprovalDecided)] == [(False, "user")]  # type: ignore[attr-defined]
    assert "approval_denied" in incidents(result) and not (workspace / "a.txt").exists()


def test_unknown_tools_and_bad_arguments_are_tool_errors_the_run_survives(
    workspace: Path, tmp_path: Path
) -> None:
    """An unknown tool and invalid JSON arguments: invalid_tool_call twice, the run still completes."""
    provider = script(
        tmp_path,
        {"toolCalls": [{"name": "rm_rf", "arguments": {}}, {"name": "read_file", "arguments": "{not json"}]},
        {"text": "done", "usage": usage(1, 1)},
    )
    result = run(workspace, provider)
    assert result.outcome == "completed"
    assert incidents(result).count("invalid_tool_call") == 2
    called = of(result.events, ToolCalled)
    assert [(c.name, c.effect) for c in called] == [("rm_rf", None), ("read_file", Effect.READ)]  # type: ignore[attr-defined]
    assert [r.ok for r in of(result.events, ToolResulted)] == [False, False]  # type: ignore[attr-defined]


def test_a_failing_tool_is_a_result_not_a_crash(workspace: Path, tmp_path: Path) -> None:
    """Reading a missing file and escaping the workspace are tool errors; the run completes."""
    provider = script(
        tmp_path,
        {
            "toolCalls": [
                call("read_file", path="missing.py"),
                call("write_file", path="../out.txt", content="x"),
            ]
        },
        {"text": "done"},
    )
    result = run(workspace, provider)
    assert result.outcome == "completed"
    assert [r.ok for r in of(result.events, ToolResulted)] == [False, False]  # type: ignore[attr-defined]
    assert not (workspace.parent / "out.txt").exists()


def test_an_agent_gets_its_instructions_and_only_its_tools(workspace: Path, tmp_path: Path) -> None:
    """--agent reviewer (read tools only): a write_file call is an invalid_tool_call, never run."""
    measured = MeasuredConfig(
        instructions="default",
        agents=(AgentConfig(name="reviewer", instructions="Review only.", tools=("read_file", "list_dir")),),
    )
    provider = script(
        tmp_path, {"toolCalls": [call("write_file", path="a.txt", content="1")]}, {"text": "done"}
    )
    result = run(workspace, provider, measured=measured, agent="reviewer")
    assert "invalid_tool_call" in incidents(result) and not (workspace / "a.txt").exists()
    assert result.events[0].agent == "reviewer"  # type: ignore[union-attr]


def test_a_provider_failure_ends_the_run_with_its_reason(workspace: Path, tmp_path: Path) -> None:
    """A scripted auth failure: outcome error, reason provider_auth, a one-line message."""
    provider = script(tmp_path, {"failure": {"kind": "auth", "message": "invalid key"}})
    result = run(workspace, provider)
    assert (result.outcome, result.reason, result.message) == ("error", "provider_auth", "invalid key")
    assert isinstance(result.events[-1], RunEnded)


def test_a_stream_error_ends_the_run_with_provider_stream(workspace: Path, tmp_path: Path) -> None:
    """An in-stream error: outcome error, reason provider_stream."""
    result = run(workspace, script(tmp_path, {"text": "par", "error": "overloaded"}))
    assert (result.outcome, result.reason) == ("error", "provider_stream")
    assert result.message is not None and "overloaded" in result.message


def test_truncated_output_is_an_incident(workspace: Path, tmp_path: Path) -> None:
    """finish_reason length raises truncated_output; the run still completes."""
    result = run(workspace, script(tmp_path, {"text": "cut", "finishReason": "length", "usage": usage(1, 1)}))
    assert result.outcome == "completed" and incidents(result) == ["truncated_output"]


RULE = "RULE R1: every line of report.txt must end with ~END~"
COMPACTING = MeasuredConfig(
    instructions="You are a test agent.",
    limits=Limits(max_context_chars=4000),
    compaction=Compaction(threshold=0.5),
)


def test_compaction_replaces_older_turns_and_keeps_the_prompt(workspace: Path, tmp_path: Path) -> None:
    """Past threshold x maxContextChars the older turns become a checkpoint; events and incident say so."""
    (workspace / "big.txt").write_text("x" * 1500)
    read_big = {"toolCalls": [call("read_file", path="big.txt")], "usage": usage(10, 5)}
    provider = script(tmp_path, read_big, read_big, read_big, {"text": "done", "usage": usage(10, 5)})
    result = run(workspace, provider, measured=COMPACTING, prompt=f"Walk the chain. {RULE}.")
    assert result.outcome == "completed" and result.final_text == "done"
    compactions = of(result.events, Compacted)
    assert len(compactions) >= 1
    first = compactions[0]
    assert first.messages_replaced >= 2 and first.chars_after < first.chars_before  # type: ignore[attr-defined]
    assert incidents(result).count("compaction") == len(compactions)
    purposes = [r.purpose for r in of(result.events, ProviderRequested)]  # type: ignore[attr-defined]
    assert purposes.count("compaction") == len(compactions) and purposes.count("main") == 4
    assert result.main_tokens == 4 * 15


def sse_text(text: str, tokens: tuple[int, int]) -> Reply:
    return Reply.sse(
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]}},
    )


def sse_read(path: str, call_id: str) -> Reply:
    function = {"name": "read_file", "arguments": json.dumps({"path": path})}
    delta = {"tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": function}]}
    return Reply.sse(
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
    )


def test_a_rule_in_the_prompt_survives_compaction_verbatim_on_the_wire(workspace: Path) -> None:
    """Over real HTTP: after compaction the next request still carries the prompt, rule and all, word for word;
    the checkpoint call's 5000 tokens are in its Compacted event, not in the main-loop tokens."""
    (workspace / "big.txt").write_text("y" * 1500)
    prompt = f"Walk the chain. {RULE}."
    with SseServer() as server:
        server.enqueue(
            sse_read("big.txt", "c1"),
            sse_read("big.txt", "c2"),
            sse_text(f"Checkpoint: the rule is '{RULE}'; big.txt is 1500 y.", (5000, 300)),
            sse_text("done", (10, 5)),
        )
        with OpenAICompatProvider(server.base_url, "m", max_retries=0) as provider:
            result = run(workspace, provider, measured=COMPACTING, prompt=prompt)
        bodies = [request.json() for request in server.requests]
    assert result.outcome == "completed", result.message
    assert len(bodies) == 4
    checkpoint_call, after = bodies[2], bodies[3]
    assert "tools" not in checkpoint_call or not checkpoint_call["tools"]
    assert checkpoint_call["messages"][1] == {"role": "user", "content": prompt}
    # only the first exchange is folded in: the second read's result has not been seen by the model yet
    assert [m["role"] for m in checkpoint_call["messages"][2:]] == ["assistant", "tool", "user"]
    messages = after["messages"]
    assert messages[0]["role"] == "system"
    assert messages[1] == {"role": "user", "content": prompt}
    assert messages[2]["role"] == "user" and messages[2]["content"].startswith(CHECKPOINT_PREFIX)
    assert RULE in messages[2]["content"]
    assert [m["role"] for m in messages[3:]] == ["assistant", "tool"]
    assert messages[3]["tool_calls"][0]["id"] == "c2" and messages[4]["content"].endswith("y" * 1500)
    compacted = of(result.events, Compacted)
    assert len(compacted) == 1 and compacted[0].usage.input_tokens == 5000  # type: ignore[attr-defined]
    assert result.main_tokens == 3 * 15
    events = msgspec.json.decode(msgspec.json.encode(list(result.events)), type=list[Event])
    assert tuple(events) == result.events


def test_the_checkpoint_call_carries_the_sampling_settings_of_the_main_calls(workspace: Path) -> None:
    """Over real HTTP: with [sampling] written, the compaction call sends the same temperature, top_p and seed
    (and output limit) as the main-loop calls, so the checkpoint is written under the measured settings."""
    (workspace / "big.txt").write_text("y" * 1500)
    measured = msgspec.structs.replace(COMPACTING, sampling=Sampling(temperature=0.3, top_p=0.8, seed=11))
    with SseServer() as server:
        server.enqueue(
            sse_read("big.txt", "c1"), sse_read("big.txt", "c2"), sse_text("Checkpoint.", (50, 3)),
            sse_text("done", (10, 5)),
        )  # fmt: skip
        with OpenAICompatProvider(server.base_url, "m", max_retries=0) as provider:
            result = run(workspace, provider, measured=measured)
        bodies = [request.json() for request in server.requests]
    assert result.outcome == "completed", result.message
    assert len(of(result.events, Compacted)) == 1
    fields = ("temperature", "top_p", "seed", "max_tokens")
    sent = [{key: body.get(key) for key in fields} for body in bodies]
    assert sent[2] == sent[0] == {"temperature": 0.3, "top_p": 0.8, "seed": 11, "max_tokens": 8192}
    assert all(entry == sent[0] for entry in sent)


class RecordingProvider:
    """The scripted provider, keeping every request it was sent (to check fingerprints against)."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.requests: list[ProviderRequest] = []

    @property
    def id(self) -> str:
        return self.inner.id

    def stream(
        self,
        request: ProviderRequest,
        on_retry: object = None,
        *,
        timeout_s: float | None = None,
        on_first_event: object = None,
    ) -> tuple[StreamEvent, ...]:
        self.requests.append(request)
        return self.inner.stream(request, timeout_s=timeout_s)


def test_each_request_fingerprint_is_that_of_the_request_sent(workspace: Path, tmp_path: Path) -> None:
    """Over turns and a compaction, each provider_request fingerprint equals fingerprint(normalize(request sent))."""
    (workspace / "big.txt").write_text(f"{workspace}\n" + "x" * 1500)
    read_big = {"toolCalls": [call("read_file", path="big.txt")], "usage": usage(10, 5)}
    provider = RecordingProvider(
        script(tmp_path, read_big, read_big, read_big, read_big, {"text": "done"}, checkpoint="cp")
    )
    rules = path_rules(str(workspace))
    setup = AgentSetup(
        prompt=f"Work in {workspace}. {RULE}.",
        workspace=workspace,
        provider=provider,
        model="test-model",
        measured=COMPACTING,
        policy=Policy(mode=PolicyMode.AUTO),
        granted=ALL_EFFECTS,
        budget=BIG_BUDGET,
        normalize_rules=rules,
    )
    result = run_agent(setup)
    assert result.outcome == "completed", result.message
    assert len(of(result.events, Compacted)) >= 1
    recorded = [r.fingerprint for r in of(result.events, ProviderRequested)]  # type: ignore[attr-defined]
    expected = [fingerprint(normalize_request(request, rules)) for request in provider.requests]
    assert recorded == expected and len(recorded) == len(provider.requests) >= 6


def test_calls_past_max_calls_per_turn_are_refused_with_one_incident(workspace: Path, tmp_path: Path) -> None:
    """maxCallsPerTurn 3 and a turn of 5 writes: 3 files written, 2 refusals the model reads, 1 incident."""
    writes = [call("write_file", path=f"f{i}.txt", content=str(i)) for i in range(5)]
    provider = RecordingProvider(
        script(tmp_path, {"toolCalls": writes, "usage": usage(1, 1)}, {"text": "done", "usage": usage(1, 1)})
    )
    measured = MeasuredConfig(instructions="You are a test agent.", tools=ToolSettings(max_calls_per_turn=3))
    result = run(workspace, provider, measured=measured)
    assert (result.outcome, result.final_text, result.turns, result.tool_calls) == ("completed", "done", 2, 3)
    assert sorted(p.name for p in workspace.glob("f*.txt")) == ["f0.txt", "f1.txt", "f2.txt"]
    called = of(result.events, ToolCalled)
    assert [json.loads(c.arguments)["path"] for c in called] == ["f0.txt", "f1.txt", "f2.txt"]  # type: ignore[attr-defined]
    results = of(result.events, ToolResulted)
    assert [r.ok for r in results] == [True, True, True, False, False]  # type: ignore[attr-defined]
    assert incidents(result) == ["too_many_tool_calls"]
    incident = of(result.events, IncidentRaised)[0]
    assert (
        "asked for 5 tool calls" in incident.message and "the last 2 calls were refused" in incident.message
    )  # type: ignore[attr-defined]
    refusal = "you exceeded the per-turn limit of 3 calls"
    assert all(refusal in r.output_excerpt for r in results[3:])  # type: ignore[attr-defined]
    answered = [m for m in provider.requests[1].messages if isinstance(m, ToolMessage)]
    assert len(answered) == 5 and all(refusal in m.content for m in answered[3:])


# --- hardening: nothing a tool or a provider does ends a run without run_end -----------------------------------


class ExplodingProvider:
    """A provider whose stream raises an exception no provider is supposed to raise (a bug, not a failure)."""

    id = "exploding"

    def stream(
        self,
        request: ProviderRequest,
        on_retry: object = None,
        *,
        timeout_s: float | None = None,
        on_first_event: object = None,
    ) -> tuple[StreamEvent, ...]:
        raise RuntimeError("http://user:hunter2@host/v1 went sideways")


def test_an_unexpected_exception_ends_the_run_with_run_end_and_its_type(workspace: Path) -> None:
    """A bug below the loop ends the run error/internal_error, naming the exception (credentials redacted);
    the log still ends with run_end, so a lab records the run and goes on."""
    result = run(workspace, ExplodingProvider())
    assert (result.outcome, result.reason) == ("error", "internal_error")
    assert result.message == "unexpected RuntimeError: http://<redacted>@host/v1 went sideways"
    assert isinstance(result.events[-1], RunEnded)
    assert "hunter2" not in json.dumps([msgspec.to_builtins(event) for event in result.events])


def test_a_hostile_tool_call_is_a_result_and_the_run_goes_on(workspace: Path, tmp_path: Path) -> None:
    """bash with a NUL byte and write_file nested 2,000 levels used to raise out of the loop; now each is a
    tool error the model reads, and the run ends normally."""
    provider = script(
        tmp_path,
        {
            "toolCalls": [
                call("bash", command="echo \0"),
                call("write_file", path="a/" * 2000 + "b", content="x"),
            ]
        },
        {"text": "gave up"},
    )
    result = run(workspace, provider)
    assert (result.outcome, result.final_text) == ("completed", "gave up")
    outcomes = of(result.events, ToolResulted)
    assert [r.ok for r in outcomes] == [False, False]  # type: ignore[attr-defined]
    assert "NUL character" in outcomes[0].output_excerpt  # type: ignore[attr-defined]
    assert "nested 2000 directories deep" in outcomes[1].output_excerpt  # type: ignore[attr-defined]


@pytest.mark.parametrize("bad", [{"inputTokens": -5, "outputTokens": 3}, {"outputTokens": -1}])
def test_negative_usage_is_unreported_with_an_incident_saying_why(
    workspace: Path, tmp_path: Path, bad: dict[str, int]
) -> None:
    """A turn reporting a negative count is recorded as reporting no usage (never inputTokens -5), with a
    usage_unreported incident naming the count; the token total then stays unknown."""
    provider = script(tmp_path, {"text": "done", "usage": bad})
    result = run(workspace, provider)
    responded = [e for e in result.events if type(e).__name__ == "ProviderResponded"]
    assert responded[0].usage is None  # type: ignore[attr-defined]
    (incident,) = of(result.events, IncidentRaised)
    assert incident.kind == "usage_unreported"  # type: ignore[attr-defined]
    name, value = next((k, v) for k, v in bad.items() if v < 0)
    assert f"({name} is {value}; a count must be an integer from 0 to 1000000000)" in incident.message  # type: ignore[attr-defined]
    assert (result.main_tokens, result.usage_complete) == (None, False)


def _dead(pid: int, within_s: float = 3.0) -> bool:
    """Whether process ``pid`` is gone or a zombie within ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_a_daemon_started_by_a_command_does_not_outlive_the_run(workspace: Path, tmp_path: Path) -> None:
    """A setsid'ed daemon started through bash is stopped (the tool result names it); nothing survives the run."""
    command = (
        "setsid bash -c 'echo $$ > daemon.pid; exec sleep 60' < /dev/null > /dev/null 2>&1 & "
        "while [ ! -s daemon.pid ]; do sleep 0.01; done; echo started"
    )
    provider = script(tmp_path, {"toolCalls": [call("bash", command=command)]}, {"text": "done"})
    result = run(workspace, provider)
    assert result.outcome == "completed"
    pid = int((workspace / "daemon.pid").read_text())
    assert _dead(pid)
    output = of(result.events, ToolResulted)[0].output_excerpt  # type: ignore[attr-defined]
    assert output.startswith("exit code: 0\nstarted\n\n[stopped 1 process the command had left running")
    assert f"sleep (pid {pid})" in output
