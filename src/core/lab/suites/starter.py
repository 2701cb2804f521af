"""The starter suite ``alisio eval init DIR`` writes: the smallest suite that shows a pass and a fail.

Two tasks over one fixture (a ``calc`` module with two wrong functions), each with its script for the
scripted provider, so the suite runs without a model or a key: ``fix-add``'s script fixes ``add`` (pass),
``fix-mul``'s script "fixes" ``mul`` wrongly (fail, the check saying why). Then the same suite runs against a
real model with ``--base-url`` and ``--model``. Pure data: the shell writes the files.
"""

from __future__ import annotations

import json

__all__ = ["STARTER_SUITE_ID", "starter_files", "starter_next_steps"]

STARTER_SUITE_ID = "starter"

_CALC = """def add(a, b):
    return a - b


def mul(a, b):
    return a + b
"""

_CHECK = '''"""python3 check.py add|mul: exit 0 when that function of src/calc.py is right, else 1 saying why."""
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, "src")
from calc import add, mul  # noqa: E402

CASES = {"add": (add, [((2, 3), 5), ((-1, 1), 0)]), "mul": (mul, [((2, 3), 6), ((4, 0), 0)])}
name = sys.argv[1]
function, cases = CASES[name]
wrong = [f"{name}{args} = {function(*args)}, expected {want}" for args, want in cases if function(*args) != want]
print("\\n".join(wrong) or "ok")
sys.exit(1 if wrong else 0)
'''


def _task(task_id: str, name: str) -> dict[str, object]:
    return {
        "id": task_id,
        "prompt": f"{name} in src/calc.py returns the wrong result. Fix it; change nothing else.",
        "fixture": "fixtures/calc",
        "budget": {"maxTurns": 8, "maxWallMs": 120000},
        "policy": {"mode": "auto", "allow": ["write"]},
        "verifiers": [
            {"kind": "command", "id": "check", "command": ["python3", "check.py", name], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["src/calc.py"]},
        ],
    }


def _script(old: str, new: str, answer: str) -> dict[str, object]:
    read = {"name": "read_file", "arguments": {"path": "src/calc.py"}}
    edit = {"name": "edit_file", "arguments": {"path": "src/calc.py", "old_string": old, "new_string": new}}
    return {
        "turns": [
            {"toolCalls": [read], "usage": {"inputTokens": 400, "outputTokens": 20}},
            {"toolCalls": [edit], "usage": {"inputTokens": 520, "outputTokens": 40}},
            {"text": answer, "usage": {"inputTokens": 560, "outputTokens": 12}},
        ]
    }


def starter_files() -> tuple[tuple[str, str], ...]:
    """(path relative to the suite directory, text) of every file of the starter suite."""
    suite = {
        "schemaVersion": 1,
        "suiteId": STARTER_SUITE_ID,
        "suiteVersion": "1.0.0",
        "description": "A starter suite: fix add (the script passes) and mul (the script fails).",
        "tasks": [_task("fix-add", "add"), _task("fix-mul", "mul")],
    }
    fix_add = _script("    return a - b", "    return a + b", "add now adds.")
    wrong_mul = _script("    return a + b", "    return a * a", "mul now multiplies.")  # a wrong fix: a fail
    return (
        ("suite.json", json.dumps(suite, indent=2) + "\n"),
        ("fixtures/calc/src/calc.py", _CALC),
        ("fixtures/calc/check.py", _CHECK),
        ("scripts/fix-add.json", json.dumps(fix_add, indent=2) + "\n"),
        ("scripts/fix-mul.json", json.dumps(wrong_mul, indent=2) + "\n"),
    )


def starter_next_steps(directory: str) -> tuple[str, ...]:
    """What to run next, with ``directory`` as the user wrote it (already shell-quoted by the caller).

    The commands name the suite by its path and carry ``--yes``, so they run as printed on a terminal, in a
    pipe and in CI alike: without it, ``eval run`` asks before it runs the commands of a suite from outside
    the bundled ones, and refuses where there is no terminal to ask on.
    """
    base = f"alisio eval run {directory} --yes"
    return (
        "run it with the scripted model (no key; fix-add passes, fix-mul fails):",
        f"  {base} --k 3 --script {directory}/scripts --allow-write",
        "then against a model (any OpenAI-compatible endpoint):",
        f"  {base} --base-url http://localhost:8000/v1 --model MODEL --allow-write",
        "(--yes: the suite is yours, just written; without it eval run asks before it runs the commands of a "
        "suite from outside the bundled ones, and refuses where no terminal can answer, as in CI or a pipe)",
        f"edit {directory}/suite.json to add your own tasks (docs: suite format); check them with "
        f"alisio eval validate {directory}, and with no model (each untouched fixture must fail) with "
        f"alisio eval selfcheck {directory} --yes",
    )
