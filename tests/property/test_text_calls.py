"""Properties of ``text_tool_call``: a call of an offered tool written as text is found, however wrapped."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.harness.text_calls import calls_to_run, text_call_results, text_calls, text_tool_call

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


# --- text_calls and calls_to_run (tools.textCalls = "parse") --------------------------------------------------

_WRAPS = {
    "bare": ("{prose} ", " {prose}", "as bare JSON"),
    "fenced": ("{prose}\n```json\n", "\n```\n", "in a fenced block"),
    "tool_call": ("<tool_call>\n", "\n</tool_call>", "in <tool_call> tags"),
    "tools": ("<tools>", "</tools>", "in <tools> tags"),
    "function_call": ("<function_call>", "</function_call>", "in <function_call> tags"),
}
_CALLS = st.lists(
    st.tuples(
        st.sampled_from(TOOLS),
        _ARGS,
        st.sampled_from(sorted(_WRAPS)),
        st.one_of(st.none(), st.text(alphabet="abc_123", min_size=1, max_size=6)),
    ),
    min_size=1,
    max_size=4,
)


def _written(calls: list[tuple[str, dict[str, str], str, str | None]], prose: str) -> str:
    parts = []
    for name, args, wrap, call_id in calls:
        body = {"name": name, "arguments": args, **({"id": call_id} if call_id else {})}
        before, after, _ = _WRAPS[wrap]
        parts.append(before.format(prose=prose) + json.dumps(body) + after.format(prose=prose))
    return "\n\n".join(parts)


@given(_CALLS, _PROSE)
def test_every_written_call_is_found_in_order(
    calls: list[tuple[str, dict[str, str], str, str | None]], prose: str
) -> None:
    """Several calls in any mix of shapes: each is found once, in the order written, with its arguments,
    where it was written and the id the text gave it."""
    found = text_calls(_written(calls, prose), TOOLS)
    assert [(c.name, json.loads(c.arguments), c.where, c.id) for c in found] == [
        (name, args, _WRAPS[wrap][2], call_id) for name, args, wrap, call_id in calls
    ]
    assert not any(c.schema for c in found)


@given(_CALLS, _PROSE, st.integers(min_value=1, max_value=50))
def test_calls_to_run_keep_given_ids_and_number_the_rest(
    calls: list[tuple[str, dict[str, str], str, str | None]], prose: str, turn: int
) -> None:
    """The harness's ids: the text's own id, else text-<turn>-<n> counting from 1; arguments as found."""
    run = calls_to_run(text_calls(_written(calls, prose), TOOLS), turn)
    assert [c.id for c in run] == [call_id or f"text-{turn}-{n}" for n, (*_, call_id) in enumerate(calls, 1)]
    assert [json.loads(c.arguments) for c in run] == [args for _, args, _, _ in calls]


@given(st.sampled_from(TOOLS), st.sampled_from(sorted(_WRAPS)))
def test_a_tool_schema_is_named_but_never_run(name: str, wrap: str) -> None:
    """A tool's schema written as text (parameters holding a JSON schema) raises the incident, runs nothing."""
    schema = {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }
    before, after, _ = _WRAPS[wrap]
    text = before.format(prose="") + json.dumps(schema) + after.format(prose="")
    message = text_tool_call(text, TOOLS)
    assert message is not None and message.startswith(f"the final text is the schema of {name} written")
    assert calls_to_run(text_calls(text, TOOLS), 1) == ()


@example(comment="the file to edit", url="https://example.com/x")
@given(st.text(alphabet=st.characters(blacklist_characters="\n\r\"\\", codec="utf-8"), max_size=20),
       st.just("https://example.com/x"))  # fmt: skip
def test_line_comments_in_a_fenced_object_are_ignored(comment: str, url: str) -> None:
    """``//`` comments after fields of a fenced call are dropped; a ``//`` inside a string value is kept."""
    text = f'```json\n{{"name": "bash", // {comment}\n "arguments": {{"command": "curl {url}"}} // {comment}\n}}\n```'
    (call,) = text_calls(text, TOOLS)
    assert json.loads(call.arguments) == {"command": f"curl {url}"}
    assert text_tool_call(text, TOOLS) is not None


def test_openai_wrapping_and_lists_count_each_call() -> None:
    """``{"type": "function", "function": {...}}`` and a list of calls: each element is a call."""
    text = json.dumps(
        [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
            {"name": "read_file", "parameters": {"path": "a"}},
        ]
    )
    assert [(c.name, c.id) for c in text_calls(text, TOOLS)] == [("bash", "c1"), ("read_file", None)]
    assert "(and 1 more)" in (text_tool_call(text, TOOLS) or "")


@given(
    st.lists(
        st.tuples(st.sampled_from(TOOLS), st.text(max_size=6), st.text(max_size=30)), min_size=1, max_size=4
    )
)
def test_results_name_each_call_in_order(results: list[tuple[str, str, str]]) -> None:
    """The answer to text calls names every call by tool and id, with its output, in the order they ran."""
    message = text_call_results(tuple(results))
    position = 0
    for name, call_id, output in results:
        tag = f"<tool_result name={json.dumps(name)} id={json.dumps(call_id)}>\n{output}\n</tool_result>"
        found = message.find(tag, position)
        assert found >= 0
        position = found + len(tag)
