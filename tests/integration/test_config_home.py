"""alisio.shell.config_home end to end: real temp directories, real config.toml files, environment dicts."""

from __future__ import annotations

import copy
import json
import os
import pickle
import time
from pathlib import Path

import msgspec
import pytest
from returns.pipeline import is_successful
from returns.result import Failure, Success

from alisio.core.errors import ConfigError
from alisio.core.harness.config import DEFAULT_INSTRUCTIONS, config_hash
from alisio.shell.config_home import (
    ApiKey,
    LoadedConfig,
    ResolvedProvider,
    config_dir,
    config_path,
    data_dir,
    load_config,
    resolve_provider,
)

SECRET = "sk-test-0123456789abcdefSECRET"


def _write(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _loaded(env: dict[str, str]) -> LoadedConfig:
    match load_config(env):
        case Success(LoadedConfig() as loaded):
            return loaded
    raise AssertionError(f"load_config failed: {load_config(env)!r}")


def _error(result: object) -> ConfigError:
    match result:
        case Failure(ConfigError() as error):
            return error
    raise AssertionError(f"expected a ConfigError, got {result!r}")


def test_alisio_config_home_wins_over_xdg_and_home(tmp_path: Path) -> None:
    """$ALISIO_CONFIG_HOME, else $XDG_CONFIG_HOME/alisio, else ~/.config/alisio."""
    env = {"HOME": str(tmp_path / "h"), "XDG_CONFIG_HOME": str(tmp_path / "x"), "ALISIO_CONFIG_HOME": "/a"}
    assert config_dir(env) == Path("/a")
    assert config_path(env) == Path("/a/config.toml")
    del env["ALISIO_CONFIG_HOME"]
    assert config_dir(env) == tmp_path / "x" / "alisio"
    del env["XDG_CONFIG_HOME"]
    assert config_dir(env) == tmp_path / "h" / ".config" / "alisio"
    assert config_dir({**env, "ALISIO_CONFIG_HOME": "", "XDG_CONFIG_HOME": "relative"}) == config_dir(env)


def test_data_dir_follows_alisio_data_home_then_xdg_state_home(tmp_path: Path) -> None:
    """<dataDir> is $ALISIO_DATA_HOME, else $XDG_STATE_HOME/alisio, else ~/.local/state/alisio."""
    env = {
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "s"),
        "ALISIO_DATA_HOME": str(tmp_path / "d"),
    }
    assert data_dir(env) == tmp_path / "d"
    assert data_dir({**env, "ALISIO_DATA_HOME": ""}) == tmp_path / "s" / "alisio"
    assert data_dir({"HOME": str(tmp_path)}) == tmp_path / ".local" / "state" / "alisio"


def test_the_file_under_alisio_config_home_is_the_one_read(tmp_path: Path) -> None:
    """With both set, the configuration in $ALISIO_CONFIG_HOME is loaded, not the XDG one."""
    _write(tmp_path / "xdg" / "alisio", "[limits]\nmaxContextChars = 1000\n")
    chosen = _write(tmp_path / "mine", "[limits]\nmaxContextChars = 2000\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "ALISIO_CONFIG_HOME": str(tmp_path / "mine")}
    loaded = _loaded(env)
    assert (loaded.path, loaded.found) == (chosen, True)
    assert loaded.config.measured.limits.max_context_chars == 2000
    assert (
        _loaded({"XDG_CONFIG_HOME": str(tmp_path / "xdg")}).config.measured.limits.max_context_chars == 1000
    )


def test_an_empty_config_dir_gives_every_default(tmp_path: Path) -> None:
    """No config.toml is not an error: every value is its default and the hash is the default hash."""
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    assert loaded.found is False
    assert loaded.path == tmp_path / "config.toml"
    assert loaded.config.measured.instructions == DEFAULT_INSTRUCTIONS
    assert loaded.config.measured.compaction.threshold == 0.8
    assert loaded.config.provider.base_url is None
    empty = _write(tmp_path / "empty", "")
    assert _loaded({"ALISIO_CONFIG_HOME": str(empty.parent)}).config_hash == loaded.config_hash


def test_a_full_file_is_read_with_every_section(tmp_path: Path) -> None:
    """Every documented section of config.toml lands in the configuration."""
    _write(
        tmp_path,
        'instructions = "Be brief."\n'
        '[provider]\nbaseUrl = "http://127.0.0.1:8000/v1"\nmodel = "qwen"\napiKeyEnv = "MY_KEY"\n'
        "[limits]\nmaxContextChars = 50000\nmaxOutputTokens = 1024\n"
        "[compaction]\nthreshold = 0.6\n"
        '[reasoning]\neffort = "high"\n'
        "[tools]\nbashOutputLimitChars = 500\nbashTimeoutMs = 3000\nreadMaxChars = 700\nmaxCallsPerTurn = 4\n"
        '[agents.reviewer]\ninstructions = "Review only."\ntools = ["search", "read_file"]\n',
    )
    config = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)}).config
    measured = config.measured
    assert (config.provider.base_url, config.provider.model, config.provider.api_key_env) == (
        "http://127.0.0.1:8000/v1",
        "qwen",
        "MY_KEY",
    )
    assert measured.instructions == "Be brief."
    assert (measured.limits.max_context_chars, measured.limits.max_output_tokens) == (50_000, 1024)
    assert measured.compaction.threshold == 0.6
    assert measured.reasoning.effort == "high"
    assert (measured.tools.bash_output_limit_chars, measured.tools.bash_timeout_ms) == (500, 3000)
    assert (measured.tools.read_max_chars, measured.tools.max_calls_per_turn) == (700, 4)
    assert [(a.name, a.instructions, a.tools) for a in measured.agents] == [
        ("reviewer", "Review only.", ("read_file", "search"))
    ]


def test_invalid_toml_names_the_file_and_the_line(tmp_path: Path) -> None:
    """A TOML syntax error is one line with the file, the line and the column."""
    path = _write(tmp_path, "[limits]\nmaxContextChars = 100\nthreshold = = 2\n")
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert error.source == str(path)
    assert "invalid TOML" in error.message
    assert "line 3" in str(error)
    assert "\n" not in str(error)


def test_an_unknown_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    """A misspelt key fails with the file, the dotted key and the closest known key."""
    path = _write(tmp_path, "[limits]\nmaxContextChar = 100\n")
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert str(error) == f"{path}: limits.maxContextChar: unknown key (did you mean limits.maxContextChars?)"


def test_a_wrong_type_names_the_key_and_the_expected_type(tmp_path: Path) -> None:
    """A value of the wrong type fails with the dotted key, the expected type and what was found."""
    path = _write(tmp_path, '[compaction]\nthreshold = "high"\n')
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert str(error) == f"{path}: compaction.threshold: expected a number, got a string"


def test_an_unreadable_config_is_an_error_naming_the_file(tmp_path: Path) -> None:
    """A config.toml that cannot be read (here: a directory) fails naming it, instead of using defaults."""
    (tmp_path / "config.toml").mkdir()
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert error.source == str(tmp_path / "config.toml")
    assert error.message.startswith("cannot read")


def test_non_utf8_bytes_are_an_error_naming_the_file(tmp_path: Path) -> None:
    """A config.toml that is not UTF-8 fails with one clear line."""
    (tmp_path / "config.toml").write_bytes(b'instructions = "\xff"\n')
    assert "not UTF-8" in _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)})).message


def test_base_url_and_model_flags_are_enough_without_a_file(tmp_path: Path) -> None:
    """A local server needs no file and no key: --base-url and --model are enough."""
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    resolved = resolve_provider(loaded, "llama3", "http://localhost:11434/v1", {})
    assert resolved == Success(
        ResolvedProvider(
            id="openai_compat", base_url="http://localhost:11434/v1", model="llama3", api_key=None
        )
    )


def test_flags_override_the_file(tmp_path: Path) -> None:
    """--model and --base-url win over provider.model and provider.baseUrl; unset flags keep the file's."""
    _write(tmp_path, '[provider]\nbaseUrl = "https://api.example.com/v1"\nmodel = "file-model"\n')
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    both = resolve_provider(loaded, "flag-model", "http://localhost:1/v1", {}).unwrap()
    assert (both.base_url, both.model) == ("http://localhost:1/v1", "flag-model")
    neither = resolve_provider(loaded, None, None, {}).unwrap()
    assert (neither.base_url, neither.model) == ("https://api.example.com/v1", "file-model")


@pytest.mark.parametrize(
    ("model", "base_url", "key", "flag"),
    [
        ("m", None, "provider.baseUrl", "--base-url"),
        (None, "http://localhost:1/v1", "provider.model", "--model"),
    ],
)
def test_a_missing_base_url_or_model_says_which_flag_or_key_sets_it(
    tmp_path: Path, model: str | None, base_url: str | None, key: str, flag: str
) -> None:
    """Without a base URL or a model the error names the flag and the config key that set it."""
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    error = _error(resolve_provider(loaded, model, base_url, {}))
    assert (error.source, error.key) == (str(tmp_path / "config.toml"), key)
    assert flag in error.message


def test_a_base_url_flag_that_is_not_http_is_refused(tmp_path: Path) -> None:
    """--base-url must be an http(s) URL."""
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    error = _error(resolve_provider(loaded, "m", "localhost:8000", {}))
    assert error.source == "--base-url"
    assert "http:// or https://" in error.message


def test_the_key_comes_from_openai_api_key_by_default_and_only_when_set(tmp_path: Path) -> None:
    """Without apiKeyEnv, OPENAI_API_KEY is used when set and non-empty, and no key is sent otherwise."""
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    with_key = resolve_provider(loaded, "m", "http://h/v1", {"OPENAI_API_KEY": SECRET}).unwrap()
    assert with_key.api_key is not None
    assert with_key.api_key.reveal() == SECRET
    assert resolve_provider(loaded, "m", "http://h/v1", {"OPENAI_API_KEY": ""}).unwrap().api_key is None
    assert resolve_provider(loaded, "m", "http://h/v1", {}).unwrap().api_key is None


def test_the_key_comes_from_the_variable_the_file_names(tmp_path: Path) -> None:
    """provider.apiKeyEnv names the variable; OPENAI_API_KEY is then ignored."""
    _write(tmp_path, '[provider]\napiKeyEnv = "DEEPSEEK_API_KEY"\n')
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    env = {"DEEPSEEK_API_KEY": SECRET, "OPENAI_API_KEY": "other"}
    resolved = resolve_provider(loaded, "m", "http://h/v1", env).unwrap()
    assert resolved.api_key == ApiKey(SECRET)


@pytest.mark.parametrize("env", [{}, {"DEEPSEEK_API_KEY": ""}, {"OPENAI_API_KEY": SECRET}])
def test_a_named_key_variable_that_is_missing_is_an_error(tmp_path: Path, env: dict[str, str]) -> None:
    """When the file names apiKeyEnv and that variable is unset or empty: one line with file, key and name."""
    path = _write(tmp_path, '[provider]\napiKeyEnv = "DEEPSEEK_API_KEY"\n')
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    error = _error(resolve_provider(loaded, "m", "http://h/v1", env))
    assert (error.source, error.key) == (str(path), "provider.apiKeyEnv")
    assert "DEEPSEEK_API_KEY" in error.message
    assert SECRET not in str(error)


def test_the_key_never_shows_in_repr_str_or_serialization(tmp_path: Path) -> None:
    """The key is in no repr, str, f-string, JSON or pickle of any value these functions return."""
    _write(tmp_path, '[provider]\nbaseUrl = "http://h/v1"\nmodel = "m"\napiKeyEnv = "MY_KEY"\n')
    env = {"ALISIO_CONFIG_HOME": str(tmp_path), "MY_KEY": SECRET}
    loaded = _loaded(env)
    result = resolve_provider(loaded, None, None, env)
    resolved = result.unwrap()
    assert resolved.api_key is not None
    for shown in (
        repr(result),
        str(result),
        repr(resolved),
        str(resolved),
        f"{resolved.api_key}",
        repr(loaded),
    ):
        assert SECRET not in shown
        assert SECRET[:12] not in shown
    with pytest.raises(TypeError):
        msgspec.json.encode(resolved)
    with pytest.raises(TypeError):
        json.dumps(resolved.api_key)
    with pytest.raises(TypeError):
        pickle.dumps(resolved)
    with pytest.raises(TypeError):
        copy.deepcopy(resolved.api_key)
    assert SECRET not in msgspec.json.encode(loaded.config).decode()


def test_load_config_reads_the_real_environment_shape(tmp_path: Path) -> None:
    """load_config accepts os.environ itself (any str -> str mapping)."""
    result = load_config({**os.environ, "ALISIO_CONFIG_HOME": str(tmp_path)})
    assert is_successful(result)
    assert result.unwrap().config_hash == config_hash(result.unwrap().config.measured)


# --- hostile files --------------------------------------------------------------------------------------------


def test_a_config_that_is_a_symlink_to_dev_zero_is_refused_at_once(tmp_path: Path) -> None:
    """config.toml -> /dev/zero used to hang alisio run reading forever; it is refused before any read."""
    (tmp_path / "config.toml").symlink_to("/dev/zero")
    started = time.monotonic()
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert time.monotonic() - started < 1
    assert (
        str(error) == f"{tmp_path / 'config.toml'}: cannot read: it is a character device, not a regular file"
    )


def test_a_config_that_is_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    """A FIFO nobody writes to would block the open; it is opened without blocking and refused."""
    os.mkfifo(tmp_path / "config.toml")
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert error.message == "cannot read: it is a FIFO (named pipe), not a regular file"


def test_a_config_over_one_mib_is_refused(tmp_path: Path) -> None:
    """Only the first MiB is ever read: a larger file is an error, not a memory hog."""
    _write(tmp_path, 'instructions = "' + "x" * (1 << 20) + '"\n')
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert (
        error.message
        == "cannot read: it is larger than 1048576 bytes, the most a configuration file may hold"
    )


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        ("[tools]\nbashTimeoutMs = 1000\nbashTimeoutMs = 2000\n", "tools.bashTimeoutMs", (2, 3)),
        (
            'instructions = """\nmodel = "a"\n"""\n[provider]\nmodel = "a"\nmodel = "b"',
            "provider.model",
            (5, 6),
        ),
        ('[agents.rev]\ninstructions = "x"\n"instructions" = "y"\n', "agents.rev.instructions", (2, 3)),
    ],
)
def test_a_key_set_twice_is_refused_naming_the_key(
    tmp_path: Path, text: str, key: str, lines: tuple[int, int]
) -> None:
    """tomllib refuses a duplicate key without naming it; the error names the dotted key and both lines."""
    path = _write(tmp_path, text)
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert str(error) == (
        f"{path}: {key}: set twice (lines {lines[0]} and {lines[1]}); a key may appear only once"
    )


def test_max_response_bytes_is_read_from_the_provider_table(tmp_path: Path) -> None:
    """provider.maxResponseBytes reaches the resolved provider; the default is 32 MiB; below 1 KiB is refused."""
    _write(tmp_path, '[provider]\nbaseUrl = "http://127.0.0.1:9/v1"\nmodel = "m"\nmaxResponseBytes = 4096\n')
    resolved = resolve_provider(_loaded({"ALISIO_CONFIG_HOME": str(tmp_path)}), None, None, {}).unwrap()
    assert resolved.max_response_bytes == 4096
    assert ResolvedProvider(id="x", base_url="http://h/v1", model="m").max_response_bytes == 32 << 20
    path = _write(tmp_path, "[provider]\nmaxResponseBytes = 100\n")
    error = _error(load_config({"ALISIO_CONFIG_HOME": str(tmp_path)}))
    assert str(error) == f"{path}: provider.maxResponseBytes: Expected `int` >= 1024, got 100"


def test_a_non_http_base_url_never_echoes_its_password(tmp_path: Path) -> None:
    """--base-url ftp://user:pass@host is refused with the user information redacted."""
    loaded = _loaded({"ALISIO_CONFIG_HOME": str(tmp_path)})
    error = _error(resolve_provider(loaded, "m", "ftp://alice:hunter2pw@host/v1", {}))
    assert "hunter2pw" not in str(error) and "ftp://<redacted>@host/v1" in error.message
