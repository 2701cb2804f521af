"""Properties of the external agents' core: reading a model call, cassettes, configuration, presets."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.agents.cassette import (
    AgentCall,
    AgentCassette,
    AgentCassetteHeader,
    decode_agent_cassette,
    encode_agent_cassette,
    json_difference,
    match_agent_call,
)
from alisio.core.agents.config import KINDS, parse_external
from alisio.core.agents.exchange import Api, read_exchange, unsupported_api
from alisio.core.agents.external import (
    MAX_ARGUMENT_BYTES,
    argument_problem,
    invocation,
    lab_tools,
    noise_rules,
    prompt_problem,
    run_dir_rules,
)
from alisio.core.agents.presets import RunDirs
from alisio.core.agents.run import (
    AgentEnd,
    ProxiedCall,
    RunFacts,
    exited,
    normalized_body,
    request_fingerprint,
    run_events,
    stderr_head,
)
from alisio.core.harness.events import IncidentRaised
from alisio.core.replay.fingerprint import path_rules
from tests.property.strategies_agents import (
    JSON_VALUES,
    TEXT,
    anthropic_sse_of,
    chat_answers,
    responses_sse_of,
    sse_of,
)

REQUEST = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
HEADER = AgentCassetteHeader(
    format="agent-cassette/v1", suite_id="s", suite_version="1", task_id="t", agent="a", kind="command",
    api="openai-chat", model="m", provider="p",
)  # fmt: skip


@given(chat_answers())
def test_a_streamed_answer_reads_back_its_text_calls_and_usage(answer: dict[str, Any]) -> None:
    """What the provider streamed is what the exchange says: text, tool calls in order, usage as sent."""
    exchange = read_exchange("openai-chat", REQUEST, 200, "text/event-stream", sse_of(answer)).unwrap()
    assert exchange.text == answer["text"]
    assert [(c.name, json.loads(c.arguments)) for c in exchange.tool_calls] == answer["calls"]
    if answer["usage"] is None:
        assert exchange.usage is None
    else:
        assert exchange.usage is not None
        assert (exchange.usage.input_tokens, exchange.usage.output_tokens) == (
            answer["usage"]["prompt_tokens"],
            answer["usage"]["completion_tokens"],
        )
    assert exchange.request.message_count == 1 and exchange.error is None


@given(st.integers(min_value=400, max_value=599), TEXT)
def test_an_error_status_is_an_exchange_with_the_providers_message(status: int, message: str) -> None:
    """A non-2xx answer is read (never a Failure): no usage, no calls, the provider's message kept."""
    body = json.dumps({"error": {"message": message}}).encode()
    exchange = read_exchange("openai-chat", REQUEST, status, "application/json", body).unwrap()
    assert exchange.usage is None and exchange.tool_calls == ()
    assert exchange.error is not None and exchange.error.startswith(f"HTTP {status}: ")


REQUESTS: dict[str, bytes] = {
    "openai-chat": REQUEST,
    "openai-responses": json.dumps(
        {"model": "m", "instructions": "x", "input": [{"role": "user", "content": "hi"}], "stream": True,
         "tools": [{"type": "function", "name": "exec_command"}, {"type": "custom", "name": "apply_patch"}]}
    ).encode(),
    "anthropic": json.dumps(
        {"model": "m", "system": "x", "messages": [{"role": "user", "content": "hi"}], "stream": True,
         "tools": [{"name": "Bash", "input_schema": {}}]}
    ).encode(),
}  # fmt: skip
STREAMS = {"openai-chat": sse_of, "openai-responses": responses_sse_of, "anthropic": anthropic_sse_of}


@given(st.sampled_from(sorted(STREAMS)), chat_answers())
def test_every_api_reads_back_the_same_text_calls_and_usage(api: Api, answer: dict[str, Any]) -> None:
    """The same answer, streamed in each api's own shape, reads back the same: text, calls, usage, and the
    request's model, conversation length and tool names."""
    exchange = read_exchange(api, REQUESTS[api], 200, "text/event-stream", STREAMS[api](answer)).unwrap()
    assert exchange.error is None and exchange.text == answer["text"]
    assert [(c.name, json.loads(c.arguments)) for c in exchange.tool_calls] == answer["calls"]
    reported = None if exchange.usage is None else (exchange.usage.input_tokens, exchange.usage.output_tokens)
    usage = answer["usage"]
    assert reported == (None if usage is None else (usage["prompt_tokens"], usage["completion_tokens"]))
    tools = {"openai-chat": (), "openai-responses": ("exec_command", "apply_patch"), "anthropic": ("Bash",)}
    assert (exchange.request.model, exchange.request.message_count) == ("m", 1)
    assert exchange.request.tools == tools[api]


@given(st.sampled_from(sorted(STREAMS)), st.integers(min_value=400, max_value=599), TEXT)
def test_an_error_body_of_any_api_names_the_providers_message(api: Api, status: int, message: str) -> None:
    """Each api's error body (Anthropic: ``{"type": "error", "error": ...}``) keeps the provider's message."""
    error = {"type": "api_error", "message": message or "m"}
    body = {"type": "error", "error": error} if api == "anthropic" else {"error": error}
    exchange = read_exchange(
        api, REQUESTS[api], status, "application/json", json.dumps(body).encode()
    ).unwrap()
    assert exchange.usage is None and exchange.tool_calls == ()
    assert exchange.error == f"HTTP {status}: {message or 'm'}"


def test_a_cut_off_or_unreadable_answer_is_never_a_silent_empty_one() -> None:
    """A 2xx stream that never finishes is an exchange with an error; a body that is not the api's is a
    Failure naming it; an api nobody speaks is refused by name."""
    answer = {"text": "half", "calls": [], "usage": None}
    cut = sse_of(answer).split(b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason"')[0]
    exchange = read_exchange("openai-chat", REQUEST, 200, "text/event-stream", cut).unwrap()
    assert exchange.error == "the answer ended before it finished" and exchange.finish_reason == "error"
    wrong = read_exchange("anthropic", REQUESTS["anthropic"], 200, "application/json", b'{"object": "x"}')
    assert isinstance(wrong, Failure) and "not an anthropic answer" in str(wrong.failure())
    problem = unsupported_api("cohere")
    assert problem is not None and "cohere" in problem
    assert isinstance(read_exchange("cohere", REQUEST, 200, "text/event-stream", b""), Failure)  # type: ignore[arg-type]


@given(JSON_VALUES, JSON_VALUES)
def test_json_difference_names_a_field_exactly_when_the_values_differ(old: object, new: object) -> None:
    """Two equal JSON values have no differing field; two different ones name one with both excerpts."""
    field, expected, actual = json_difference(json.dumps(old), json.dumps(new))
    if old == new:
        assert expected == actual
    else:
        assert field and (expected != actual or "same JSON" not in expected)


@given(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=4), st.randoms())
def test_recorded_calls_match_in_any_order_and_a_new_one_diverges(
    pairs: list[tuple[str, str]], rng: Any
) -> None:
    """Every recorded request matches once, in whatever order it comes; one never recorded diverges."""
    calls = tuple(
        AgentCall(
            call=i, path="", request=request, fingerprint=f"f{i}", status=200, content_type="", response=r
        )
        for i, (request, r) in enumerate(pairs)
    )
    cassette = AgentCassette(header=HEADER, calls=calls)
    order = list(range(len(calls)))
    rng.shuffle(order)
    played: frozenset[int] = frozenset()
    for index in order:
        matched = match_agent_call(cassette, played, calls[index].request, calls[index].fingerprint).unwrap()
        assert matched.call == index
        played |= {index}
    assert isinstance(match_agent_call(cassette, played, "{}", "f0"), Failure)  # past the end
    assert isinstance(match_agent_call(cassette, frozenset(), '{"x": 1}', "never"), Failure)


@given(st.lists(st.tuples(TEXT, TEXT), max_size=3), st.none() | TEXT)
def test_an_agent_cassette_round_trips(pairs: list[tuple[str, str]], faults: str | None) -> None:
    """decode(encode(c)) is c, its header's faults spec too; a header without faults does not name them (a
    cassette recorded before they were kept reads the same)."""
    calls = tuple(
        AgentCall(call=i, path="/v1/chat/completions", request=q, fingerprint="f", status=200, content_type="t",
                  response=r)
        for i, (q, r) in enumerate(pairs)
    )  # fmt: skip
    cassette = AgentCassette(header=msgspec.structs.replace(HEADER, faults=faults), calls=calls)
    encoded = encode_agent_cassette(cassette)
    assert decode_agent_cassette(encoded, "x").unwrap() == cassette
    assert (b'"faults"' in encoded.split(b"\n")[0]) is (faults is not None)


@given(TEXT)
def test_normalising_removes_the_workspace_path(suffix: str) -> None:
    """A request naming the workspace fingerprints the same from any workspace path."""
    rules_a = ((r"/tmp/ws-a", "<workspace>"),)
    rules_b = ((r"/tmp/ws-b", "<workspace>"),)
    a = json.dumps({"cwd": "/tmp/ws-a", "x": suffix}).encode()
    b = json.dumps({"cwd": "/tmp/ws-b", "x": suffix}).encode()
    assert normalized_body(a, rules_a) == normalized_body(b, rules_b)
    assert request_fingerprint(a, rules_a) == request_fingerprint(b, rules_b)


IDS = st.text("abcdef0123456789-", min_size=1, max_size=36)


def _codex_body(run: str, ids: tuple[str, str, str], answer: str) -> bytes:
    """A Codex request as it sends one: its per-run ids, date, run directory and tool output noise."""
    turn = json.dumps({"turn_id": ids[0], "nested": {"a": 1}})
    output = f"Chunk ID: {ids[1]}\nWall time: 0.{len(ids[2])} seconds\nOutput:\n{answer}"
    body = {
        "model": "m",
        "instructions": f"skills live in {run}/codex-home/skills",
        "input": [
            {"type": "message", "id": f"msg_{ids[0]}", "content": f"<current_date>2026-12-{len(ids[1])}</current_date>"},
            {"type": "function_call_output", "id": f"fco_{ids[1]}", "call_id": "call_1", "output": output},
        ],
        "prompt_cache_key": ids[2],
        "client_metadata": {"x-codex-installation-id": ids[1], "x-codex-turn-metadata": turn, "root_turn_id": ids[0]},
    }  # fmt: skip
    return json.dumps(body, separators=(",", ":")).encode()


@given(st.tuples(IDS, IDS, IDS), st.tuples(IDS, IDS, IDS), TEXT)
def test_codex_noise_normalises_away_and_nothing_else_does(
    first: tuple[str, str, str], second: tuple[str, str, str], answer: str
) -> None:
    """Two Codex requests from two runs (other ids, date, timing, run directory) fingerprint the same; a
    different tool output does not."""
    agent = parse_external("c", {"kind": "codex"}, "config.toml").unwrap()
    runs = ("/tmp/alisio-1-agent-a", "/tmp/alisio-22-agent-b")
    rules = [(*run_dir_rules(run), *noise_rules(agent)) for run in runs]
    a = _codex_body(runs[0], first, answer)
    b = _codex_body(runs[1], second, answer)
    assert normalized_body(a, rules[0]) == normalized_body(b, rules[1])
    changed = _codex_body(runs[1], second, answer + "!")
    assert request_fingerprint(a, rules[0]) != request_fingerprint(changed, rules[1])


def _claude_body(run: str, workspace: str, device: str, day: int, answer: str) -> bytes:
    """A Claude Code request: its date, memory directory (named after the workspace) and device id."""
    memory = f"{run}/claude/projects/{workspace.replace('/', '-')}/memory/"
    system = [{"type": "text", "text": f"Today's date is 2026-12-{day:02d}. Memory at `{memory}`."}]
    user = json.dumps({"device_id": device, "session_id": device[::-1]})
    body = {"model": "m", "system": system, "messages": [{"role": "user", "content": answer}]}
    return json.dumps({**body, "metadata": {"user_id": user}}, separators=(",", ":")).encode()


@given(st.tuples(IDS, IDS), st.tuples(st.integers(1, 28), st.integers(1, 28)), TEXT)
def test_claude_code_noise_normalises_away_and_nothing_else_does(
    devices: tuple[str, str], days: tuple[int, int], answer: str
) -> None:
    """Two Claude Code requests from two runs on two days (other run and workspace paths, device and session
    ids) fingerprint the same; a different message does not."""
    agent = parse_external("c", {"kind": "claude-code"}, "config.toml").unwrap()
    runs = (
        ("/tmp/alisio-1-agent-t-x1", "/tmp/alisio-1-t-y1"),
        ("/tmp/alisio-22-agent-t-x2", "/tmp/alisio-22-t-y2"),
    )
    rules = [(*path_rules(ws), *run_dir_rules(run), *noise_rules(agent)) for run, ws in runs]
    a = _claude_body(*runs[0], devices[0], days[0], answer)
    b = _claude_body(*runs[1], devices[1], days[1], answer)
    assert normalized_body(a, rules[0]) == normalized_body(b, rules[1])
    changed = _claude_body(*runs[1], devices[1], days[1], answer + "!")
    assert request_fingerprint(a, rules[0]) != request_fingerprint(changed, rules[1])


@given(st.text(min_size=1, max_size=12).filter(lambda k: k not in KINDS))
def test_an_unknown_kind_names_the_agent_and_the_field(kind: str) -> None:
    """``kind`` outside the known kinds is a ConfigError at agents.NAME.kind listing them."""
    match parse_external("x", {"kind": kind}, "config.toml"):
        case Failure(error):
            assert error.key == "agents.x.kind" and "builtin, codex" in error.message
        case Success(_):
            raise AssertionError("accepted")


TOKEN = "alisio-run-0123456789abcdef0123456789abcdef"


@given(TEXT, TEXT)
def test_a_command_gets_the_prompt_the_model_and_the_runs_token(prompt: str, model: str) -> None:
    """{prompt}, {prompt_file} and {model} are replaced; the key variable holds the run's token only."""
    agent = parse_external(
        "x", {"kind": "command", "command": ["a", "{prompt}", "{prompt_file}", "--m={model}"]}, "c"
    ).unwrap()
    dirs = RunDirs(run="/r", workspace="/w", prompt_file="/r/prompt.txt")
    inv = invocation(agent, "", prompt, model, "http://127.0.0.1:1", dirs, TOKEN)
    assert inv.argv == ("a", prompt, "/r/prompt.txt", f"--m={model}")
    env = dict(inv.env)
    assert env["OPENAI_API_KEY"] == TOKEN and env["OPENAI_BASE_URL"] == "http://127.0.0.1:1/v1"
    assert env["HOME"] == "/r/home"


PROMPTS = TEXT.filter(bool) | st.sampled_from(
    ["-", "--help", "---\ntitle: x\n---\n- fix it", "-m x", "/etc/passwd"]
)


@given(PROMPTS, TEXT.filter(bool), st.sampled_from(["codex", "opencode", "claude-code", "aider"]))
def test_a_preset_passes_the_prompt_where_no_option_is_parsed_and_binds_nothing_of_it(
    prompt: str, model: str, kind: str
) -> None:
    """Whatever the prompt starts with, a preset gives it on stdin (Codex with ``-``, OpenCode), after ``--``
    (Claude Code) or as ``--message=PROMPT`` before ``--`` (aider): no argument before ``--`` is the prompt.
    A preset names no host path of its own to bind (its install tree is the shell's to find)."""
    agent = parse_external("x", {"kind": kind}, "c").unwrap()
    dirs = RunDirs(run="/r", workspace="/w", prompt_file="/r/prompt.txt", files=("src/a.py",))
    inv = invocation(agent, "/bin/agent", prompt, model, "http://127.0.0.1:1", dirs, TOKEN)
    other = invocation(agent, "/bin/agent", "another prompt", model, "http://127.0.0.1:1", dirs, TOKEN)
    assert inv.host_paths == ()
    if kind in ("codex", "opencode"):  # the prompt is not an argument at all
        assert inv.argv == other.argv and inv.stdin == prompt
        assert inv.argv[-1] == ("-" if kind == "codex" else f"local/{model}")
    elif kind == "claude-code":
        assert inv.argv[:-1] == other.argv[:-1] and inv.argv[-2:] == ("--", prompt) and inv.stdin is None
    else:
        differs = [i for i, (a, b) in enumerate(zip(inv.argv, other.argv, strict=True)) if a != b]
        assert [inv.argv[i] for i in differs] == [f"--message={prompt}"] or prompt == "another prompt"
        assert inv.argv.index(f"--message={prompt}") < inv.argv.index("--")
        assert inv.argv[inv.argv.index("--") + 1 :] == ("src/a.py",)


@given(PROMPTS, TEXT)
def test_what_a_command_agent_binds_is_decided_before_the_prompt_and_model_are_put_in(
    prompt: str, model: str
) -> None:
    """``host_paths`` are the template's own absolute arguments, whatever the prompt and model are: an
    argument holding a placeholder is never among them."""
    template = [
        "/opt/agent",
        "/etc/agent.toml",
        "{prompt}",
        "/data/{model}",
        "--p={prompt_file}",
        "/x/{prompt}",
    ]
    agent = parse_external("x", {"kind": "command", "command": template}, "c").unwrap()
    dirs = RunDirs(run="/r", workspace="/w", prompt_file="/r/prompt.txt")
    inv = invocation(agent, "", prompt, model, "http://127.0.0.1:1", dirs, TOKEN)
    assert inv.host_paths == ("/etc/agent.toml",)
    assert inv.argv[2] == prompt and inv.argv[3] == f"/data/{model}"


def test_aider_refuses_a_prompt_it_would_run_as_its_own_command() -> None:
    """``/`` or ``!`` first: aider would run it (``!`` as a shell command); any other start is fine, and no
    other agent refuses either."""
    aider = parse_external("x", {"kind": "aider"}, "c").unwrap()
    for prompt in ("/run rm -rf ~", "!ls", "/help"):
        problem = prompt_problem(aider, prompt)
        assert problem is not None and f"starts with {prompt[0]!r}" in problem
    assert prompt_problem(aider, " /help") is None and prompt_problem(aider, "- fix it") is None
    codex = parse_external("x", {"kind": "codex"}, "c").unwrap()
    assert prompt_problem(codex, "/help") is None


@given(st.lists(TEXT, min_size=1, max_size=4), st.integers(0, 3), st.sampled_from(["\0", "long", ""]))
def test_an_argument_no_command_line_can_carry_is_named(args: list[str], at: int, bad: str) -> None:
    """``argument_problem`` names the first argument holding a NUL or longer than ``MAX_ARGUMENT_BYTES``
    bytes (UTF-8), and nothing else."""
    agent = parse_external("x", {"kind": "command", "command": ["a", "{prompt}"]}, "c").unwrap()
    argv = [arg.replace("\0", "") for arg in args]
    at = min(at, len(argv) - 1)
    if bad == "\0":
        argv[at] += "\0"
    elif bad == "long":
        argv[at] = "é" * (
            MAX_ARGUMENT_BYTES // 2 + 1
        )  # 131072 bytes in UTF-8 (one past), half as many characters
    problem = argument_problem(agent, tuple(argv))
    if not bad:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(f"its argument {at} ")
        assert problem.endswith("give the agent the prompt with {prompt_file} or stdin = true")


@given(st.sampled_from(sorted(set(KINDS) - {"builtin"})), TEXT)
def test_every_agent_gets_the_runs_token_never_on_its_command_line(kind: str, prompt: str) -> None:
    """Each preset (and a command) is given the run's token in its environment or a file of its run
    directory, never in its argv, which any local user can read in /proc/PID/cmdline."""
    table = {"kind": kind} | ({"command": ["a", "{prompt}"]} if kind == "command" else {})
    agent = parse_external("x", table, "c").unwrap()
    dirs = RunDirs(run="/r", workspace="/w", prompt_file="/r/prompt.txt")
    inv = invocation(agent, "bin", prompt.replace(TOKEN, ""), "m", "http://127.0.0.1:1", dirs, TOKEN)
    assert not any(TOKEN in arg for arg in inv.argv)
    given_in = [value for _, value in inv.env] + [text for _, text in inv.files]
    assert any(TOKEN in value for value in given_in), kind


def test_each_preset_maps_its_tools_to_lab_tools() -> None:
    """Presets' tool maps name lab tools only; aider has none."""
    lab = {"read_file", "list_dir", "search", "write_file", "edit_file", "bash", "fetch_url", "analyze"}
    for kind in ("codex", "opencode", "claude-code", "aider"):
        agent = parse_external("x", {"kind": kind}, "c").unwrap()
        assert lab_tools(agent) <= lab
    assert lab_tools(parse_external("x", {"kind": "aider"}, "c").unwrap()) == frozenset()


_FACTS = RunFacts(
    prompt="p", provider="p", model="m", agent="mine", kind="command", config_hash="h", harness_version="0"
)


@given(
    calls=st.integers(min_value=0, max_value=3),
    code=st.integers(min_value=-15, max_value=255),
    stderr=st.lists(st.text(max_size=40), max_size=4).map("\n".join),
)
def test_an_agent_that_exits_non_zero_before_a_model_call_is_an_error_and_after_one_an_incident(
    calls: int, code: int, stderr: str
) -> None:
    """No model call and a non-zero exit: ``error`` (``agent_start``) naming the code and stderr's head; after a
    call the run stays ``completed`` with one ``agent_exited`` incident; exit 0 is neither."""
    proxied = [
        ProxiedCall(index=i, started_ms=i, duration_ms=1, exchange=None, problem=None) for i in range(calls)
    ]
    end = AgentEnd(exit_code=code, killed=None, elapsed_ms=5, stdout="", stderr=stderr)
    verdict = run_events(_FACTS, proxied, end, {}, None, None)
    incidents = [e for e in verdict.events if isinstance(e, IncidentRaised)]
    if code == 0:
        assert (verdict.outcome, incidents) == ("completed", [])
    elif calls == 0:
        assert (verdict.outcome, verdict.reason) == ("error", "agent_start")
        assert verdict.message is not None and f"agent mine {exited(code)} before" in verdict.message
        head = stderr_head(stderr)
        assert verdict.message.endswith(f": {head}" if head else "(nothing on stderr)")
        assert incidents == []
    else:
        assert verdict.outcome == "completed"
        assert [(i.kind, i.message) for i in incidents] == [("agent_exited", f"agent {exited(code)}")]


def test_the_head_of_stderr_is_its_first_line_or_a_tracebacks_exception() -> None:
    """The first non-blank line, or a traceback's last line; long lines are cut with an ellipsis."""
    assert stderr_head("\n  python3: can't open file 'a.py'\nmore\n") == "python3: can't open file 'a.py'"
    traceback = "Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'OPENAI_BASE_URL'\n"
    assert stderr_head(traceback) == "KeyError: 'OPENAI_BASE_URL'"
    assert stderr_head(" \n") == ""
    assert stderr_head("x" * 400) == "x" * 299 + "…"
