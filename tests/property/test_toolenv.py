"""Properties of alisio.core.harness.toolenv: the tools' environment holds no credential, by the scanner's rule."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.harness.toolenv import NO_PROMPTS, scrubbed_env, tool_env
from alisio.core.share.secrets import is_credential_name, known_credentials
from tests.property.strategies_files import environments


@given(environments)
@example({"OPENAI_API_KEY": "sk-abc", "GIT_AUTHOR_NAME": "Jane", "MY_TOKEN_FILE": "x", "HOME": "/root"})
def test_the_tool_env_keeps_exactly_the_non_credential_names(environ: dict[str, str]) -> None:
    """Every variable survives unless its name is a credential name; pagers and prompts are always off."""
    env = scrubbed_env(environ)
    for name, value in environ.items():
        if name in NO_PROMPTS:
            continue
        assert (name in env) == (not is_credential_name(name))
        if name in env:
            assert env[name] == value
    assert {name: env[name] for name in NO_PROMPTS} == dict(NO_PROMPTS)


@given(environments)
def test_no_credential_the_scanner_knows_reaches_a_command(environ: dict[str, str]) -> None:
    """One rule: whatever known_credentials would look for is not in the environment the tools get."""
    env = scrubbed_env(environ)
    for name, _value in known_credentials(environ):
        assert name not in env or name in NO_PROMPTS


@given(environments, st.text(alphabet="sk-0123456789", min_size=1, max_size=6))
def test_the_provider_key_is_dropped_whatever_the_variable_is_called(
    environ: dict[str, str], key: str
) -> None:
    """tool_env drops every variable whose value holds the key, on top of the name rule."""
    env = tool_env(environ, key)
    assert all(key not in value for value in env.values())
    assert env == {name: value for name, value in scrubbed_env(environ).items() if key not in value}
    assert tool_env(environ, None) == scrubbed_env(environ)


def test_names_that_only_look_like_markers_are_kept() -> None:
    """GIT_AUTHOR_NAME and XKB_KEYMAP reach commands; API_KEY, GH_TOKEN, DB_PASSWORD and authToken do not."""
    env = scrubbed_env(
        {
            "GIT_AUTHOR_NAME": "a",
            "XKB_KEYMAP": "b",
            "API_KEY": "c",
            "GH_TOKEN": "d",
            "DB_PASSWORD": "e",
            "authToken": "f",
        }
    )
    assert set(env) - set(NO_PROMPTS) == {"GIT_AUTHOR_NAME", "XKB_KEYMAP"}
