"""Issue 16's presets, keys, sampling, headers and timeouts, through the installed CLI against a local server.

- ``--provider NAME`` / ``provider.preset`` set the base URL, the api and the key variable; what is written
  explicitly overrides them; a preset's key goes only to its host, a local preset sends none;
- a raw ``--base-url`` still sends ``OPENAI_API_KEY``, and the headline names the variable sent;
- ``[sampling]`` reaches the request body (only the fields an api takes), enters the hash, is a valid variant
  override, and a setting the api cannot take is refused in one line before any request;
- ``provider.headers`` are sent and stored nowhere; ``provider.timeoutMs`` bounds each wait;
- ``temperature`` anywhere gets "did you mean sampling.temperature?".
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import msgspec
import pytest

from alisio.core.harness.config import MeasuredConfig, config_hash, parse_config
from alisio.core.harness.presets import PRESETS
from alisio.core.harness.protocol import ProviderRequest, UserMessage
from alisio.core.replay.fingerprint import fingerprint
from alisio.shell.config_home import LoadedConfig, resolve_provider
from tests.integration.harness.test_provider_apis import ALISIO, answer, chat_stream
from tests.integration.helpers import make_suite
from tests.integration.sse_server import Reply, SseServer
from tests.property.test_wire import anthropic_stream, responses_stream

HEADER_VALUE = "team-lab-7f3a9c"


def alisio(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "E2E_PROVIDER_KEY"}
    base.update(
        ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"), TMPDIR=str(home)
    )
    return subprocess.run(
        [str(ALISIO), *args], capture_output=True, text=True, timeout=120, check=False, env={**base, **env},
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def config(home: Path, text: str) -> None:
    (home / "config").mkdir(exist_ok=True)
    (home / "config" / "config.toml").write_text(text)


def hi(api: str) -> Reply:
    render = {"openai-chat": chat_stream, "openai-responses": responses_stream, "anthropic": anthropic_stream}
    return Reply(body=render[api](answer(text=["hi"])))


def run_hi(home: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    return alisio(home, env, "run", "hi", "--cwd", str(home), "--model", "m", *flags)


# --- presets ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_each_preset_gives_its_url_api_and_key_variable(name: str) -> None:
    """In process (the same function the CLI calls): the preset's exact URL and api, its key read from its
    own variable and only from it."""
    loaded = LoadedConfig(config=parse_config({}, "c.toml").unwrap(), path=Path("c.toml"), found=False)
    env = {"OPENAI_API_KEY": "sk-openai-123456", "ANTHROPIC_API_KEY": "ak-123456", "OPENROUTER_API_KEY": "or-1",
           "DEEPSEEK_API_KEY": "ds-1", "GEMINI_API_KEY": "gm-1"}  # fmt: skip
    resolved = resolve_provider(loaded, "m", None, env, name).unwrap()
    preset = PRESETS[name]
    assert (resolved.base_url, resolved.api, resolved.id) == (preset.base_url, preset.api, name)
    assert resolved.key_source == preset.key_env
    expected = env[preset.key_env] if preset.key_env else None
    assert (resolved.api_key.reveal() if resolved.api_key else None) == expected


def test_the_table_of_presets_is_the_issues(tmp_path: Path) -> None:
    rows = {name: (p.api, p.base_url, p.key_env) for name, p in PRESETS.items()}
    assert rows == {
        "openai": ("openai-responses", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        "anthropic": ("anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
        "gemini": ("gemini", "https://generativelanguage.googleapis.com/v1beta", "GEMINI_API_KEY"),
        "openrouter": ("openai-chat", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        "deepseek": ("openai-chat", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        "ollama": ("openai-chat", "http://localhost:11434/v1", None),
        "vllm": ("openai-chat", "http://localhost:8000/v1", None),
        "llamacpp": ("openai-chat", "http://localhost:8080/v1", None),
    }


def test_a_presets_key_goes_to_no_other_host(tmp_path: Path) -> None:
    """--provider openrouter with --base-url elsewhere: refused in one line, nothing sent, key not shown."""
    with SseServer(hi("openai-chat")) as server:
        result = run_hi(tmp_path, {"OPENROUTER_API_KEY": "or-secret-998877"}, "--provider", "openrouter",
                        "--base-url", server.base_url)  # fmt: skip
        assert server.requests == []
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(  # the flag, not a config.toml holding no preset (there is none here)
        "alisio run: --provider: the key from OPENROUTER_API_KEY (preset openrouter) is sent only to openrouter.ai"
        ", not to "
    ), result.stderr
    assert "provider.apiKeyEnv" in result.stderr and "or-secret-998877" not in result.stderr


def test_a_local_preset_sends_no_key_even_with_openai_api_key_set(tmp_path: Path) -> None:
    with SseServer(hi("openai-chat")) as server:
        result = run_hi(tmp_path, {"OPENAI_API_KEY": "sk-must-not-leave"}, "--provider", "ollama",
                        "--base-url", server.base_url)  # fmt: skip
        assert result.returncode == 0, result.stderr
        (request,) = server.requests
    assert request.path.endswith("/chat/completions") and "authorization" not in request.headers
    assert not {"temperature", "top_p", "seed"} & set(request.json())  # no [sampling]: none sent


def test_the_anthropic_preset_speaks_messages_and_an_explicit_key_variable_goes_where_it_is_told(
    tmp_path: Path,
) -> None:
    """provider.apiKeyEnv is explicit: its key may go to the base URL written (the preset's api stays)."""
    with SseServer(hi("anthropic")) as server:
        config(tmp_path, 'instructions = "x"\n[provider]\napiKeyEnv = "MY_GATEWAY_KEY"\n')
        result = run_hi(tmp_path, {"MY_GATEWAY_KEY": "gw-123456", "ANTHROPIC_API_KEY": "ak-not-this"},
                        "--provider", "anthropic", "--base-url", server.base_url)  # fmt: skip
        assert result.returncode == 0, result.stderr
        (request,) = server.requests
    assert request.path.endswith("/messages") and request.headers["x-api-key"] == "gw-123456"
    assert result.stdout == "hi\n"


def test_provider_preset_in_the_file_and_an_explicit_api_overrides_it(tmp_path: Path) -> None:
    """preset = "openai" is openai-responses; api = "openai-chat" written beside it wins."""
    with SseServer(hi("openai-chat"), hi("openai-responses")) as server:
        config(
            tmp_path, f'[provider]\npreset = "openai"\napi = "openai-chat"\nbaseUrl = "{server.base_url}"\n'
        )
        assert run_hi(tmp_path, {}).returncode == 0
        config(tmp_path, f'[provider]\npreset = "openai"\nbaseUrl = "{server.base_url}"\n')
        assert run_hi(tmp_path, {}).returncode == 0
        paths = [request.path for request in server.requests]
    assert [path.rpartition("/")[2] for path in paths] == ["completions", "responses"]


def test_an_unknown_preset_gets_a_did_you_mean(tmp_path: Path) -> None:
    result = run_hi(tmp_path, {}, "--provider", "openrutor")
    assert result.returncode == 1
    assert result.stderr == (
        "alisio run: --provider: 'openrutor' is not a provider preset (one of openai, anthropic, gemini, "
        "openrouter, deepseek, ollama, vllm, llamacpp); did you mean 'openrouter'?\n"
    )


def test_a_raw_base_url_sends_openai_api_key_and_the_headline_names_it(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    with SseServer(hi("openai-chat")) as server:
        result = alisio(tmp_path, {"OPENAI_API_KEY": "sk-raw-123456"}, "eval", "run", "calc-suite", "--suite-dir",
                        str(suite), "--yes", "--allow-write", "-k", "1", "--base-url", server.base_url, "--model", "m",
                        "--out", str(tmp_path / "out"))  # fmt: skip
        (request,) = server.requests
    assert request.headers["authorization"] == "Bearer sk-raw-123456"
    assert "1 run (openai_compat, m, key from OPENAI_API_KEY, agent alisio " in result.stderr
    assert "sk-raw-123456" not in result.stderr + result.stdout


def test_a_deepseek_preset_names_its_report_and_its_key(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    with SseServer(hi("openai-chat")) as server:
        config(
            tmp_path, f'[provider]\npreset = "deepseek"\nbaseUrl = "{server.base_url}"\napiKeyEnv = "DS"\n'
        )
        result = alisio(tmp_path, {"DS": "ds-123456"}, "eval", "run", "calc-suite", "--suite-dir", str(suite),
                        "--yes", "--allow-write", "-k", "1", "--model", "deepseek-chat", "--out", str(tmp_path / "out"))  # fmt: skip
        (request,) = server.requests
    assert "(deepseek, deepseek-chat, key from DS, agent alisio " in result.stderr
    assert request.headers["authorization"] == "Bearer ds-123456"
    assert json.loads((tmp_path / "out" / "report.json").read_text())["conditions"]["provider"] == "deepseek"


# --- sampling --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "sent"),
    [
        ("openai-chat", {"temperature": 0.2, "top_p": 0.9, "seed": 7}),
        ("openai-responses", {"temperature": 0.2, "top_p": 0.9}),
        ("anthropic", {"temperature": 0.2, "top_p": 0.9}),
    ],
)
def test_sampling_reaches_each_api_as_it_takes_it(api: str, sent: dict[str, float], tmp_path: Path) -> None:
    seed = "seed = 7\n" if api == "openai-chat" else ""
    with SseServer(hi(api)) as server:
        config(tmp_path, f'[provider]\napi = "{api}"\nbaseUrl = "{server.base_url}"\n'
               f"[sampling]\ntemperature = 0.2\ntopP = 0.9\n{seed}")  # fmt: skip
        result = run_hi(tmp_path, {})
        assert result.returncode == 0, result.stderr
        body = server.requests[0].json()
    assert {key: body[key] for key in ("temperature", "top_p", "seed") if key in body} == sent


def test_sampling_enters_the_fingerprint_only_when_written() -> None:
    request = ProviderRequest(model="m", instructions="i", messages=(UserMessage(content="hi"),))
    plain = fingerprint(request)
    warm = fingerprint(msgspec.structs.replace(request, temperature=0.2))
    assert len({plain, warm, fingerprint(msgspec.structs.replace(request, seed=1))}) == 3
    assert fingerprint(msgspec.structs.replace(request, temperature=None)) == plain


def test_no_sampling_written_sends_none_and_keeps_the_hash() -> None:
    empty = parse_config({}, "c").unwrap().measured
    assert config_hash(empty) == config_hash(MeasuredConfig())
    warm = parse_config({"sampling": {"temperature": 0.7}}, "c").unwrap().measured
    assert config_hash(warm) != config_hash(empty)
    assert config_hash(
        parse_config({"sampling": {"temperature": 0.7, "seed": 1}}, "c").unwrap().measured
    ) != (config_hash(warm))


@pytest.mark.parametrize(
    ("api", "sampling", "message"),
    [
        (
            "openai-responses",
            {"seed": 3},
            "the openai-responses api takes no seed (only openai-chat, gemini)",
        ),
        ("anthropic", {"temperature": 1.5}, "the anthropic api takes 0 to 1, got 1.5"),
        ("anthropic", {"topP": 0.5, "seed": 1}, "the anthropic api takes no seed (only openai-chat, gemini)"),
    ],
)
def test_what_an_api_cannot_take_is_refused(api: str, sampling: dict[str, float], message: str) -> None:
    """In process, the function ``alisio run`` and the lab call (the CLI case is below)."""
    data = {"provider": {"api": api, "baseUrl": "http://127.0.0.1:9/v1"}, "sampling": sampling}
    loaded = LoadedConfig(config=parse_config(data, "c.toml").unwrap(), path=Path("c.toml"), found=True)
    error = resolve_provider(loaded, "m", None, {}).failure()
    assert str(error).endswith(message) and error.key.startswith("sampling.")


def test_a_seed_for_anthropic_is_refused_before_any_request(tmp_path: Path) -> None:
    with SseServer(hi("anthropic")) as server:
        config(
            tmp_path, f'[provider]\napi = "anthropic"\nbaseUrl = "{server.base_url}"\n[sampling]\nseed = 3\n'
        )
        result = run_hi(tmp_path, {})
        assert server.requests == []
    assert result.returncode == 1
    path = tmp_path / "config" / "config.toml"
    assert (
        result.stderr
        == f"alisio run: {path}: sampling.seed: the anthropic api takes no seed (only openai-chat, gemini)\n"
    )


def variants_file(path: Path, overrides: dict[str, object]) -> Path:
    document = {
        "suite": "calc-suite",
        "variants": [{"id": "base", "overrides": {}}, {"id": "warm", "overrides": overrides}],
    }
    path.write_text(json.dumps(document))
    return path


def test_sampling_is_a_variant_override_and_a_seed_for_anthropic_is_refused(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    common = ("calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write", "-k", "1", "--model", "m")
    with SseServer(hi("openai-chat"), hi("openai-chat")) as server:
        config(tmp_path, f'[provider]\nbaseUrl = "{server.base_url}"\n')
        good = variants_file(tmp_path / "good.json", {"sampling.temperature": 0.9})
        result = alisio(
            tmp_path, {}, "eval", "variants", "--variants", str(good), *common, "--out", str(tmp_path / "v")
        )
        assert result.returncode == 0, result.stderr
        temperatures = sorted(str(request.json().get("temperature")) for request in server.requests)
    assert temperatures == ["0.9", "None"]
    hashes = {json.loads((tmp_path / "v" / v / "report.json").read_text())["conditions"]["configHash"]
              for v in ("base", "warm")}  # fmt: skip
    assert len(hashes) == 2
    with SseServer() as server:
        config(tmp_path, f'[provider]\napi = "anthropic"\nbaseUrl = "{server.base_url}"\n')
        bad = variants_file(tmp_path / "bad.json", {"sampling.seed": 4})
        refused = alisio(
            tmp_path, {}, "eval", "variants", "--variants", str(bad), *common, "--out", str(tmp_path / "w")
        )
        assert server.requests == []
    assert refused.returncode == 1
    assert refused.stderr == (
        f"alisio eval variants: {bad}: variant warm: sampling.seed: the anthropic api takes no seed (only openai-chat, gemini)\n"
    )


def test_temperature_anywhere_names_sampling_temperature(tmp_path: Path) -> None:
    config(tmp_path, "[provider]\ntemperature = 0.2\n")
    result = run_hi(tmp_path, {}, "--base-url", "http://127.0.0.1:9/v1")
    assert result.returncode == 1
    path = tmp_path / "config" / "config.toml"
    assert (
        result.stderr
        == f"alisio run: {path}: provider.temperature: unknown key (did you mean sampling.temperature?)\n"
    )
    for data, key in (({"temperature": 1}, "temperature"), ({"limits": {"topP": 1}}, "limits.topP"),
                      ({"reasoning": {"seed": 1}}, "reasoning.seed")):  # fmt: skip
        error = parse_config(data, "c").failure()
        assert (error.key, error.message.rpartition(" ")[2]) == (key, f"sampling.{key.rpartition('.')[2]}?)")


# --- headers and timeouts ----------------------------------------------------------------------------------


def test_extra_headers_are_sent_and_stored_nowhere(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    with SseServer(hi("openai-chat")) as server:
        config(tmp_path, f'[provider]\nbaseUrl = "{server.base_url}"\n'
               f'headers = {{ "X-Team" = "{HEADER_VALUE}", "OpenAI-Organization" = "org-1" }}\n')  # fmt: skip
        result = alisio(tmp_path, {}, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write", "-k", "1",
                        "--model", "m", "--out", str(tmp_path / "out"))  # fmt: skip
        assert result.returncode == 0, result.stderr
        (request,) = server.requests
    assert request.headers["x-team"] == HEADER_VALUE and request.headers["openai-organization"] == "org-1"
    written = [path for path in tmp_path.rglob("*") if path.is_file() and path.parent != tmp_path / "config"]
    assert written and not [path for path in written if HEADER_VALUE.encode() in path.read_bytes()]
    assert HEADER_VALUE not in result.stderr + result.stdout


def test_headers_and_timeout_are_refused_where_they_would_be_dropped(tmp_path: Path) -> None:
    """Ray workers and an external agent's proxy do not pass provider.headers/timeoutMs on yet: refused before
    the first run, never silently dropped."""
    suite = make_suite(tmp_path)
    config(tmp_path, '[provider]\nbaseUrl = "http://127.0.0.1:9/v1"\ntimeoutMs = 5000\n'
           f'headers = {{ "X-Team" = "{HEADER_VALUE}" }}\n'
           '[agents.mine]\nkind = "command"\ncommand = ["true", "{prompt}"]\n')  # fmt: skip
    ray = alisio(tmp_path, {}, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
                 "-k", "1", "--model", "m", "--executor", "ray")  # fmt: skip
    assert ray.returncode == 1 and ray.stderr.count("\n") == 1, ray.stderr
    assert "--executor ray: provider.headers, provider.timeoutMs is not passed to Ray workers" in ray.stderr
    agent = alisio(tmp_path, {}, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
                   "--allow-process", "-k", "1", "--model", "m", "--agent", "mine")  # fmt: skip
    assert agent.returncode == 1 and "not passed on by an external agent's proxy yet" in agent.stderr, (
        agent.stderr
    )
    assert HEADER_VALUE not in ray.stderr + agent.stderr and not (tmp_path / "data").exists()


def test_a_provider_echoing_a_header_in_its_error_gets_it_nowhere(tmp_path: Path) -> None:
    """A 400 whose body repeats a provider.headers value: the run's error, events and report say <redacted>."""
    suite = make_suite(tmp_path)
    echo = Reply(status=400, body=f'{{"error": {{"message": "bad team {HEADER_VALUE}"}}}}'.encode(),
                 content_type="application/json")  # fmt: skip
    with SseServer(echo) as server:
        config(
            tmp_path,
            f'[provider]\nbaseUrl = "{server.base_url}"\nheaders = {{ "X-Team" = "{HEADER_VALUE}" }}\n',
        )
        result = alisio(tmp_path, {}, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
                        "-k", "1", "--model", "m", "--out", str(tmp_path / "out"))  # fmt: skip
    assert (
        result.returncode == 1
        and "bad team <redacted>" in result.stderr + (tmp_path / "out/runs.jsonl").read_text()
    )
    written = [path for path in tmp_path.rglob("*") if path.is_file() and path.parent != tmp_path / "config"]
    assert written and not [path for path in written if HEADER_VALUE.encode() in path.read_bytes()]
    assert HEADER_VALUE not in result.stderr + result.stdout


def test_a_header_value_with_a_line_break_is_refused_without_echoing_it(tmp_path: Path) -> None:
    config(tmp_path, '[provider]\nheaders = { "X-A" = "secret-value\\nInjected: 1" }\n')
    result = run_hi(tmp_path, {}, "--base-url", "http://127.0.0.1:9/v1")
    path = tmp_path / "config" / "config.toml"
    assert result.returncode == 1 and result.stderr == (
        f"alisio run: {path}: provider.headers: a header value is one line (no line break or NUL) of at most"
        " 8192 characters\n"
    )  # was msgspec's "Expected `str` matching regex '^[^\\r\\n\\x00]{0,8192}$'" at provider.headers[...]
    config(tmp_path, '[provider]\nheaders = { "X Team" = "v" }\n')
    result = run_hi(tmp_path, {}, "--base-url", "http://127.0.0.1:9/v1")
    assert result.returncode == 1 and result.stderr.startswith(
        f"alisio run: {path}: provider.headers: a header name is one HTTP token"
    )  # was "every key must be a string"


@pytest.mark.parametrize(("api", "name", "key_env"), [("openai-chat", "authorization", "OPENAI_API_KEY"),
                                                      ("anthropic", "X-API-KEY", "ANTHROPIC_API_KEY")])  # fmt: skip
def test_a_header_named_in_another_case_never_goes_out_beside_the_key(
    tmp_path: Path, api: str, name: str, key_env: str
) -> None:
    """A provider.headers entry spelling the key's header in another case went out as a second header
    (``authorization: Bearer zzz`` and ``Authorization: Bearer <key>``): the key's header wins, once, and a
    format header spelt another way (``Anthropic-Version``) replaces it instead of doubling it."""
    with SseServer(hi(api)) as server:
        config(tmp_path, f'[provider]\napi = "{api}"\nbaseUrl = "{server.base_url}"\n'
               f'headers = {{ "{name}" = "Bearer zzz", "Anthropic-Version" = "2099-01-01" }}\n')  # fmt: skip
        result = run_hi(tmp_path, {key_env: "sk-real-key-123456"}, "--policy", "full")
        assert result.returncode == 0, result.stderr
        (request,) = server.requests
    lines = [(n.lower(), v) for n, v in request.header_lines]
    key_header = "authorization" if api == "openai-chat" else "x-api-key"
    key_value = "Bearer sk-real-key-123456" if api == "openai-chat" else "sk-real-key-123456"
    assert [v for n, v in lines if n == key_header] == [key_value]
    assert [v for n, v in lines if n == "anthropic-version"] == ["2099-01-01"]


def test_timeout_ms_bounds_each_wait(tmp_path: Path) -> None:
    """A first answer that sits silent past timeoutMs is cut and retried: two requests, the run passes.
    Without timeoutMs the same silence is waited out in one request."""
    slow = Reply(body=chat_stream(answer(text=["late"])), pause_s=1.5)
    with SseServer(slow, hi("openai-chat")) as server:
        config(tmp_path, f'[provider]\nbaseUrl = "{server.base_url}"\ntimeoutMs = 300\n')
        result = run_hi(tmp_path, {})
        assert result.returncode == 0, result.stderr
        assert (result.stdout, len(server.requests)) == ("hi\n", 2)
    with SseServer(slow) as server:
        config(tmp_path, f'[provider]\nbaseUrl = "{server.base_url}"\n')
        result = run_hi(tmp_path, {})
        assert (result.returncode, result.stdout, len(server.requests)) == (0, "late\n", 1)


OUT_OF_RANGE = "is out of range: a port is 1 to 65535"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[::1", "Invalid port: ':1'"),
        ("http:///v1", "no host"),
        ("http://127.0.0.1:99999/v1", f"port 99999 {OUT_OF_RANGE}"),
        ("http://127.0.0.1:0/v1", f"port 0 {OUT_OF_RANGE}"),
        ("http://127.0.0.1:8o8o/v1", "Invalid port: '8o8o'"),
    ],
)
def test_a_base_url_that_cannot_be_parsed_is_one_line_naming_where_it_was_written(
    tmp_path: Path, url: str, why: str
) -> None:
    """``--base-url http://[::1`` was a 60-line httpx.InvalidURL traceback, and a port out of range
    (``:99999``) was only found by the first call's retries: one line now, exit 1, before any run, naming the
    flag, or config.toml's provider.baseUrl when the file gave it, also over a preset's own URL."""
    from tests.integration.helpers import alisio as alisio_in_process

    home = {"ALISIO_CONFIG_HOME": str(tmp_path / "config"), "ALISIO_DATA_HOME": str(tmp_path / "data")}
    flag = alisio_in_process(
        tmp_path, "run", "hi", "--cwd", tmp_path, "--model", "m", "--base-url", url, env=home
    )
    assert (flag.returncode, flag.stderr) == (
        1,
        f"alisio run: --base-url: not a valid URL: {url!r} ({why})\n",
    )
    config(tmp_path, f'[provider]\nbaseUrl = "{url}"\nmodel = "m"\n')
    path = tmp_path / "config" / "config.toml"
    for command in (
        ("run", "hi", "--cwd", str(tmp_path)),
        ("eval", "run", "smoke-coding", "--allow-write", "--allow-process"),
    ):
        done = alisio_in_process(tmp_path, *command, env=home)
        name = " ".join(command[: 2 if command[0] == "eval" else 1])
        expected = f"alisio {name}: {path}: provider.baseUrl: not a valid URL: {url!r} ({why})\n"
        assert (done.returncode, done.stderr) == (1, expected)
    config(tmp_path, f'[provider]\npreset = "vllm"\nbaseUrl = "{url}"\nmodel = "m"\n')
    done = alisio_in_process(tmp_path, "run", "hi", "--cwd", tmp_path, env=home)
    assert (done.returncode, done.stderr) == (
        1,
        f"alisio run: {path}: provider.baseUrl: not a valid URL: {url!r} ({why})\n",
    )
    path.unlink()
    flagged = alisio_in_process(tmp_path, "eval", "run", "smoke-coding", "--allow-write", "--allow-process",
                                "--provider", "ollama", "--model", "m", "--base-url", url, env=home)  # fmt: skip
    assert (flagged.returncode, flagged.stderr) == (
        1,
        f"alisio eval run: --base-url: not a valid URL: {url!r} ({why})\n",
    )
    assert not (tmp_path / "data").exists()  # refused before any run: no report, no transcript


@pytest.mark.parametrize(
    ("api", "path"),
    [("openai-chat", "/chat/completions"), ("openai-responses", "/responses"), ("anthropic", "/messages")],
)
def test_a_404_from_a_base_url_that_is_the_whole_endpoint_names_the_base_url_meant(
    tmp_path: Path, api: str, path: str
) -> None:
    """The endpoint pasted as the base URL (``.../v1/chat/completions``) was posted to
    ``.../chat/completions/chat/completions`` and its 404 said nothing more: it now names the base URL meant."""
    from tests.integration.helpers import alisio as alisio_in_process

    home = {"ALISIO_CONFIG_HOME": str(tmp_path / "config"), "ALISIO_DATA_HOME": str(tmp_path / "data")}
    config(tmp_path, f'[provider]\napi = "{api}"\n')
    with SseServer() as server:
        server.enqueue(Reply(status=404, body=b"Not Found", content_type="text/plain"))
        pasted = server.base_url + path
        done = alisio_in_process(
            tmp_path, "run", "hi", "--cwd", tmp_path, "--model", "m", "--base-url", pasted, env=home
        )
        assert [request.path for request in server.requests] == [f"/v1{path}{path}"]
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"alisio run: error (provider_bad_request): HTTP 404 from {pasted}{path}: Not Found (the base URL "
        f"already ends with {path}, which alisio adds itself; did you mean {server.base_url}?)"
    )
