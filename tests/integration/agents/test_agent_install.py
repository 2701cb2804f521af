"""``make agents`` installs each preset's record's pinned package and links its record's binary; ``--agent``'s
help names every kind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from alisio.core.agents.config import EXTERNAL_KINDS
from alisio.core.agents.presets import PRESET_NAMES, PRESETS

MAKEFILE = Path(__file__).resolve().parents[3] / "Makefile"


def _expanded() -> tuple[dict[str, str], str]:
    """The Makefile's ``NAME := value`` variables, and its text with ``$(NAME)`` of those replaced."""
    text = MAKEFILE.read_text(encoding="utf-8")
    variables = dict(re.findall(r"^([A-Z_]+) := (.*)$", text, re.MULTILINE))
    while True:  # a variable may name others (AIDER_STAMP := $(AGENTS)/aider/.aider-$(AIDER_VERSION))
        expanded = re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m.group(1), m.group(0)), text)
        if expanded == text:
            return variables, text
        text = expanded


def _recipe(text: str, target: str) -> str:
    """The recipe lines (tab-indented) of ``target``'s rule."""
    match = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)*)", text, re.MULTILINE)
    assert match is not None, f"no rule for {target} in the Makefile"
    return match.group(1)


def test_the_makefile_installs_every_presets_pinned_package_and_links_its_binary() -> None:
    """Each npm preset is in ``agents-node``'s one ``npm install`` at its record's version, its record's
    binary linked into .agents/bin; the PyPI one (aider) is installed at its version into its own venv,
    linked the same way; ``agents`` runs both; no package is pinned at another version anywhere."""
    variables, text = _expanded()
    node = _recipe(text, "agents-node")
    (npm,) = [line for line in node.splitlines() if "npm install" in line]
    assert re.search(r"^agents: .*\bagents-node\b.*\bagents-aider\b", text, re.MULTILINE)
    for name in PRESET_NAMES:
        preset = PRESETS[name]  # type: ignore[index]
        package = preset.package
        pinned = re.findall(rf"(?<![\w@/-]){re.escape(package.name)}(?:@|==)([0-9][^\s]*)", text)
        assert pinned and set(pinned) == {package.version}, (name, pinned)
        if package.registry == "npm":
            assert f" {package.spec}" in npm, name
            link = (
                f"ln -sf ../npm/node_modules/.bin/{preset.binary} {variables['AGENTS']}/bin/{preset.binary}"
            )
            assert link in node, name
        else:
            stamp = _recipe(text, f"{variables['AGENTS']}/{preset.binary}/.{preset.binary}-{package.version}")
            assert f" {package.spec}" in stamp, name
            link = f"ln -sf ../{preset.binary}/bin/{preset.binary} {variables['AGENTS']}/bin/{preset.binary}"
            assert link in stamp, name


def test_the_agent_flags_help_names_every_external_kind() -> None:
    """``eval run --agent``'s help (kept free of core imports, so ``--help`` stays quick) lists every preset
    and ``command``, in the config's order."""
    alisio = Path(sys.executable).with_name("alisio")
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}  # one line per option: nothing wrapped
    done = subprocess.run(
        [str(alisio), "eval", "run", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"external: {', '.join(EXTERNAL_KINDS)};" in done.stdout
