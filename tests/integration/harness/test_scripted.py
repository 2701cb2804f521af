"""The scripted provider: plays a JSON file of turns, answers compaction apart, fails clearly."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from alisio.core.harness.protocol import (
    AssistantMessage,
    ProviderRequest,
    StreamErrorEvent,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    assemble,
)
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.providers.scripted import ScriptedProvider

MAIN = ProviderRequest(model="scripted", instructions="", messages=(UserMessage(content="go"),))


def write(tmp_path: Path, script: object) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script) if not isinstance(script, str) else script, encoding="utf-8")
    return path


def test_turns_play_in_order_with_default_ids_finish_and_usage(tmp_path: Path) -> None:
    """Each call plays the next turn: text, tool calls with ids call_<turn>_<n>, finish, usage as written."""
    path = write(
        tmp_path,
        {
            "turns": [
                {
                    "text": "Reading.",
                    "toolCalls": [
                        {"name": "read_file", "arguments": {"path": "a.py", "limit": 5}},
                        {"name": "list_dir", "arguments": '{"path": "."}'},
                    ],
                    "usage": {"inputTokens": 10, "outputTokens": 5, "cachedInputTokens": 0},
                },
                {"text": "Done.", "toolCalls": [{"id": "fixed", "name": "bash"}]},
                {"text": "Bye."},
            ]
        },
    )
    provider = ScriptedProvider.from_file(path)
    first = assemble(provider.stream(MAIN)).unwrap()
    assert first.text == "Reading."
    assert first.tool_calls == (
        ToolCall(id="call_1_1", name="read_file", arguments='{"path":"a.py","limit":5}'),
        ToolCall(id="call_1_2", name="list_dir", arguments='{"path": "."}'),
    )
    assert first.finish_reason == "tool_calls"
    assert first.usage == Usage(input_tokens=10, output_tokens=5, cached_input_tokens=0)
    second = assemble(provider.stream(MAIN)).unwrap()
    assert second.tool_calls == (ToolCall(id="fixed", name="bash", arguments="{}"),)
    assert second.usage is None
    third = assemble(provider.stream(MAIN)).unwrap()
    assert (third.text, third.finish_reason, third.tool_calls) == ("Bye.", "stop", ())
    assert provider.remaining == 0


def test_running_out_of_turns_is_a_script_failure(tmp_path: Path) -> None:
    """A call after the last turn raises ProviderFailure('script') naming the file and the turn count."""
    path = write(tmp_path, {"turns": [{"text": "only one"}]})
    provider = ScriptedProvider.from_file(path)
    provider.stream(MAIN)
    with pytest.raises(ProviderFailure) as caught:
        provider.stream(MAIN)
    assert caught.value.kind == "script"
    assert str(path) in caught.value.message
    assert caught.value.message.endswith("the script has no turn left (its one turn was played)")


def test_compaction_does_not_consume_a_turn_and_uses_the_checkpoint(tmp_path: Path) -> None:
    """A compaction call answers the file's checkpoint and leaves the next main turn in place."""
    path = write(tmp_path, {"turns": [{"text": "main"}], "checkpoint": "CHECKPOINT: keep rule 7."})
    provider = ScriptedProvider.from_file(path)
    compaction = msgspec.structs.replace(MAIN, purpose="compaction")
    checkpoint = assemble(provider.stream(compaction)).unwrap()
    assert checkpoint.text == "CHECKPOINT: keep rule 7."
    assert checkpoint.usage is None
    assert provider.remaining == 1
    assert assemble(provider.stream(MAIN)).unwrap().text == "main"


def test_compaction_summary_keeps_user_messages_verbatim(tmp_path: Path) -> None:
    """Without a checkpoint, the summary repeats each user message verbatim and is deterministic."""
    rule = "Rule: every line must have the form NN~CODE, code in uppercase."
    request = ProviderRequest(
        model="m",
        instructions="",
        purpose="compaction",
        messages=(
            UserMessage(content=rule),
            AssistantMessage(content="ok", tool_calls=(ToolCall(id="c", name="read_file", arguments="{}"),)),
            ToolMessage(tool_call_id="c", name="read_file", content="x" * 1000),
        ),
    )
    provider = ScriptedProvider.from_file(write(tmp_path, {"turns": [{"text": "t"}]}))
    first = assemble(provider.stream(request)).unwrap().text
    assert rule in first
    assert "[called read_file {}]" in first
    assert "x" * 201 not in first
    assert assemble(provider.stream(request)).unwrap().text == first


def test_scripted_error_and_failure_turns(tmp_path: Path) -> None:
    """``error`` ends a turn with an in-stream error; ``failure`` raises a ProviderFailure of that kind."""
    path = write(
        tmp_path,
        {
            "turns": [
                {"text": "so", "error": "Token limit reached"},
                {"failure": {"kind": "server", "message": "boom"}},
            ]
        },
    )
    provider = ScriptedProvider.from_file(path)
    events = provider.stream(MAIN)
    assert events[-1] == StreamErrorEvent(message="Token limit reached")
    with pytest.raises(ProviderFailure) as caught:
        provider.stream(MAIN)
    assert (caught.value.kind, caught.value.message) == ("server", "boom")


def test_length_finish_is_passed_through(tmp_path: Path) -> None:
    """``finishReason: length`` reaches the response (the harness counts a truncated_output incident)."""
    provider = ScriptedProvider.from_file(
        write(tmp_path, {"turns": [{"text": "cut", "finishReason": "length"}]})
    )
    assert assemble(provider.stream(MAIN)).unwrap().finish_reason == "length"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"turns": [{"txt": "typo"}]}, "unknown field `txt` - at `$.turns[0]`"),
        (
            {"turns": [{"toolCalls": [{"arguments": {}}]}]},
            "missing required field `name` - at `$.turns[0].toolCalls[0]`",
        ),
        ({"turns": [{"finishReason": "done"}]}, "at `$.turns[0].finishReason`"),
        ({"turns": [{"usage": {"inputTokens": "10"}}]}, "at `$.turns[0].usage.inputTokens`"),
        ({"turns": []}, "`$.turns` is empty"),
        ({}, "missing required field `turns`"),
        ("{not json", "not valid JSON"),
    ],
)
def test_invalid_files_fail_with_one_line_naming_file_and_field(
    tmp_path: Path, content: object, expected: str
) -> None:
    """An invalid script is one line: the file, then what is wrong and where."""
    path = write(tmp_path, content)
    with pytest.raises(ProviderFailure) as caught:
        ScriptedProvider.from_file(path)
    message = caught.value.message
    assert caught.value.kind == "script"
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_missing_file_is_a_script_failure(tmp_path: Path) -> None:
    """A script path that does not exist names the path."""
    with pytest.raises(ProviderFailure) as caught:
        ScriptedProvider.from_file(tmp_path / "nope.json")
    assert caught.value.kind == "script"
    assert "nope.json: cannot read the script" in caught.value.message
