"""Properties of ``text_tool_call``: a call of an offered tool written as text is found, however wrapped."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.text_calls import text_tool_call

TOOLS = ("read_file", "edit_file", "bash")
_ARGS = st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=20), max_size=3)
_PROSE = st.text(alphabet=st.characters(blacklist_characters="{}[]`<>"), max_size=40)


@given(st.sampled_from(TOOLS), _ARGS, st.sampled_from(["bare", "fenced", "tagged"]), _PROSE)
def test_a_written_call_of_an_offered_tool_is_found(
    name: str, args: dict[str, str], wrap: str, prose: str
) -> None:
    """Bare, fenced (with prose before it) or in <tool_call> tags: the message names the tool and where."""
    call = json.dumps({"name": name, "arguments": args})
    text = {
        "bare": call,
        "fenced": f"{prose}\n```json\n{call}\n```\n",
        "tagged": f"<tool_call>{call}</tool_call>",
    }
    found = text_tool_call(text[wrap], TOOLS)
    assert found is not None and f"a call of {name} written" in found


@given(st.text(min_size=1, max_size=8).filter(lambda n: n not in TOOLS), _ARGS)
def test_a_call_of_a_tool_not_offered_is_not(name: str, args: dict[str, str]) -> None:
    """JSON naming a tool the run did not offer is text, not a lost call."""
    assert text_tool_call(json.dumps({"name": name, "arguments": args}), TOOLS) is None


@given(_PROSE)
def test_prose_is_never_a_call(prose: str) -> None:
    """Text with no JSON object in it raises nothing, whatever tools it names."""
    assert text_tool_call(f"{prose} edit_file {prose}", TOOLS) is None


def test_arguments_as_json_text_count() -> None:
    """OpenAI's wire form (arguments as a JSON string) written as text counts too; broken JSON does not."""
    call = json.dumps({"name": "bash", "arguments": json.dumps({"command": "ls"})})
    assert text_tool_call(call, TOOLS) is not None
    assert text_tool_call('{"name": "bash", "arguments": "{not json"}', TOOLS) is None
