"""The environment a tool's command runs with: the user's, minus every variable that may hold a credential.

Rules this module keeps:

- a variable is dropped when its NAME may hold a credential, by the one rule the secret scanner uses
  (``alisio.core.share.secrets.is_credential_name``: a word of the name contains KEY, TOKEN, SECRET, PASSWORD,
  PASSWD, CREDENTIAL or AUTH; ``GIT_AUTHOR_NAME``, ``XKB_KEYMAP`` and the like are kept);
- ``tool_env`` also drops any variable whose VALUE holds the provider key, whatever its name (``apiKeyEnv``
  may name a variable such as ``MY_LLM`` that no name rule catches): the key must not be one ``env`` away
  from the model;
- commands never page or prompt: ``PAGER`` and ``GIT_PAGER`` are ``cat`` and ``GIT_TERMINAL_PROMPT`` is 0
  (stdin is empty).

Pure: the shell passes ``os.environ`` in and gets a new mapping back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from alisio.core.share.secrets import is_credential_name

__all__ = ["NO_PROMPTS", "scrubbed_env", "tool_env"]

NO_PROMPTS: Final[Mapping[str, str]] = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
"""Set in every tool environment: nothing a command runs waits on a pager or a password prompt."""


def scrubbed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the variables whose names may hold a credential, plus ``NO_PROMPTS``."""
    env = {name: value for name, value in environ.items() if not is_credential_name(name)}
    env.update(NO_PROMPTS)
    return env


def tool_env(environ: Mapping[str, str], key: str | None) -> dict[str, str]:
    """``scrubbed_env(environ)`` without any variable whose value holds the provider ``key`` (when one is set)."""
    return {name: value for name, value in scrubbed_env(environ).items() if not key or key not in value}
