"""Writes the long-context-stress suite (suite.json, fixtures/, solutions/) deterministically.

python3 suites/long-context-stress/generate.py [--instances N] [--out DIR]

--instances N (default 5) writes N instances of chain-walk-rules (chain-walk-rules-01 ... -NN). Every
instance is seeded by its own number, so the first five are always the committed ones, whatever N is.
Without --out the suite is rewritten in place (next to this file); with --out DIR a complete copy is written
there (this script and compare.json included), which keeps the committed suite as it is.
tests/integration/test_bundled_suites.py checks that the committed files are what this writes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = "1.1.0"
WORDS = (
    "amber basalt cedar delta ember fjord garnet harbor indigo juniper kestrel lumen meadow nickel onyx "
    "pepper quartz raven sierra tundra umber velvet willow xenon yarrow zephyr"
).split()
FILLER = (
    "the survey team logged the reading and moved on along the ridge",
    "nothing in this paragraph changes the route of the walk",
    "a retired marker stands here but it is not part of any chain",
    "weather notes were copied from the old station book without review",
    "the lantern count at the hut matched the inventory from last season",
    "readers often skim this part and that is fine",
    "an unrelated code was painted over on the north wall years ago",
    "the trail crew replaced two steps and cleared the drainage channel",
)
LONG_BUDGET = {"maxTurns": 80, "maxTokens": 1500000, "maxWallMs": 900000, "maxToolCalls": 120}
READ_WRITE = {"mode": "auto", "allow": ["write"]}


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8", newline="\n")


def prose(rng: random.Random, chars: int) -> str:
    """Deterministic filler text of about ``chars`` characters, in lines of about 90."""
    lines: list[str] = []
    line = ""
    total = 0
    while total < chars:
        sentence = rng.choice(FILLER).capitalize() + "."
        if len(line) + len(sentence) > 90:
            lines.append(line.rstrip())
            total += len(line)
            line = ""
        line += sentence + " "
    lines.append(line.rstrip())
    return "\n".join(lines)


def code(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{rng.randint(10, 99)}"


# --- Chains --------------------------------------------------------------------------------------------


def chain(root: Path, fixture: str, rng: random.Random, length: int, orphans: int, pad: int) -> list[str]:
    """Segment files under ``fixture``/chain: a walk of ``length`` segments from START.txt, plus orphans.

    Returns the codes in walk order.
    """
    names: list[str] = []
    while len(names) < length + orphans:
        candidate = f"node-{rng.choice(WORDS)}-{rng.randint(10, 99)}.txt"
        if candidate not in names:
            names.append(candidate)
    codes: list[str] = []
    while len(codes) < length + orphans:
        candidate = code(rng)
        if candidate not in codes:
            codes.append(candidate)
    walk = names[:length]
    for index, name in enumerate(names):
        if index < length:
            following = walk[index + 1] if index + 1 < length else "END"
        else:
            following = rng.choice(names[length:] + ["END"])
            following = "END" if following == name else following
        text = (
            f"segment {name.removesuffix('.txt')}\n{'=' * 40}\n{prose(rng, pad // 2)}\n"
            f"retired code (ignore): {code(rng)}\n{prose(rng, pad // 4)}\n"
            f"code: {codes[index]}\n{prose(rng, pad // 4)}\nnext: {following}\n"
        )
        write(root, f"{fixture}/chain/{name}", text)
    write(root, f"{fixture}/chain/START.txt", f"The walk starts at {walk[0]}.\n")
    return codes[:length]


CHAIN_LIB = '''"""Walks the chain under chain/ from START.txt, as the task describes it (shared by the checks)."""

import re
from pathlib import Path


def walk(root: Path) -> list[str]:
    start = re.search(r"starts at (\\S+?)\\.?$", (root / "chain" / "START.txt").read_text(encoding="utf-8").strip())
    assert start is not None, "chain/START.txt lost its start"
    codes: list[str] = []
    name = start.group(1)
    while name != "END" and len(codes) < 1000:
        text = (root / "chain" / name).read_text(encoding="utf-8")
        codes.append(re.search(r"^code: (\\S+)$", text, re.MULTILINE).group(1))
        name = re.search(r"^next: (\\S+)$", text, re.MULTILINE).group(1)
    return codes
'''

CHECK_CHAIN_WALK = '''"""The task's own check: walk.txt lists the chain's codes in walk order, one per line."""

import sys
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from chainlib import walk  # noqa: E402

path = ROOT / "walk.txt"
want = "".join(f"{code}\\n" for code in walk(ROOT))
got = path.read_text(encoding="utf-8") if path.is_file() else None
if got is None:
    print("walk.txt is missing")
    sys.exit(1)
lines = got.splitlines()
expected = want.splitlines()
if got != want:
    first = next((i for i, (a, b) in enumerate(zip(lines, expected)) if a != b), min(len(lines), len(expected)))
    print(f"walk.txt differs from the walk at line {first + 1} ({len(lines)} lines, expected {len(expected)})")
    sys.exit(1)
print("ok")
'''

CHECK_FORMAT_RULE = '''"""The task's own check: walk.txt has one line NN|CODE: per segment, in walk order (01|amber-meadow-21:)."""

import sys
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from chainlib import walk  # noqa: E402

path = ROOT / "walk.txt"
want = [f"{index:02d}|{code}:" for index, code in enumerate(walk(ROOT), 1)]
got = path.read_text(encoding="utf-8").splitlines() if path.is_file() else None
if got != want:
    print("walk.txt is missing" if got is None else f"walk.txt does not match the walk ({len(got)} lines, {len(want)} expected)")
    sys.exit(1)
print("ok")
'''

CHECK_RULES = '''"""The task's own check, one rule at a time: python3 check.py chain|r1|r2|r3.

chain: walk-report.txt names the chain's codes in walk order (any case, any line shape).
r1:    every line between the header and the footer is NN~CODE (NN from 01, CODE in uppercase).
r2:    the first line is exactly "# walk-report".
r3:    the last line is exactly "-- end of walk --" and the file ends with a single newline.
"""

import re
import sys
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from chainlib import walk  # noqa: E402

HEADER = "# walk-report"
FOOTER = "-- end of walk --"
rule = sys.argv[1] if len(sys.argv) > 1 else ""
path = ROOT / "walk-report.txt"
if not path.is_file():
    print("walk-report.txt is missing")
    sys.exit(1)
text = path.read_text(encoding="utf-8")
lines = text.splitlines()
body = [line for line in lines if line.strip() and line not in (HEADER, FOOTER)]
if rule == "chain":
    codes = walk(ROOT)
    found = [m.group(0).lower() for m in re.finditer(r"[A-Za-z]+-[A-Za-z]+-[0-9]{2}", "\\n".join(body))]
    ok = found == codes
    why = f"the codes found ({len(found)}) are not the walk's {len(codes)} codes in order"
elif rule == "r1":
    ok = bool(body) and all(
        re.fullmatch(r"([0-9]{2})~([A-Z]+-[A-Z]+-[0-9]{2})", line) and line[:2] == f"{index:02d}"
        for index, line in enumerate(body, 1)
    )
    why = "a line between the header and the footer is not NN~CODE (numbered from 01, code in uppercase)"
elif rule == "r2":
    ok = bool(lines) and lines[0] == HEADER
    why = f"the first line is not {HEADER!r}"
elif rule == "r3":
    ok = text.endswith("\\n" + FOOTER + "\\n")
    why = f"the last line is not {FOOTER!r} followed by a single newline"
else:
    print("usage: python3 check.py chain|r1|r2|r3")
    sys.exit(2)
print("ok" if ok else why)
sys.exit(0 if ok else 1)
'''


def chain_walk(root: Path) -> dict[str, object]:
    task_id = "chain-walk"
    fixture = f"fixtures/{task_id}"
    codes = chain(root, fixture, random.Random("chain-walk"), length=20, orphans=6, pad=3200)
    write(root, f"{fixture}/chainlib.py", CHAIN_LIB)
    write(root, f"{fixture}/check.py", CHECK_CHAIN_WALK)
    write(root, f"solutions/{task_id}/walk.txt", "".join(f"{c}\n" for c in codes))
    return {
        "id": task_id,
        "prompt": (
            "The directory chain/ holds segment files; chain/START.txt names the first one. Each segment has "
            "a line 'code: <code>' and a line 'next: <file>' naming the following segment in chain/, or "
            "'next: END' on the last one. Lines saying 'retired code' are not codes. Walk the chain from the "
            "start to END and write every code, in walk order, one per line, to walk.txt (nothing else in "
            "the file). Some files in chain/ are not on the walk. You cannot run commands: read the files."
        ),
        "fixture": fixture,
        "budget": LONG_BUDGET,
        "policy": READ_WRITE,
        "verifiers": [
            {"kind": "command", "id": "walk", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["walk.txt"]},
        ],
        "tags": ["long-context", "chain-walk"],
    }


def chain_walk_format_rule(root: Path) -> dict[str, object]:
    task_id = "chain-walk-format-rule"
    fixture = f"fixtures/{task_id}"
    codes = chain(root, fixture, random.Random("chain-walk-format-rule"), length=16, orphans=4, pad=3200)
    write(root, f"{fixture}/chainlib.py", CHAIN_LIB)
    write(root, f"{fixture}/check.py", CHECK_FORMAT_RULE)
    write(root, f"solutions/{task_id}/walk.txt", "".join(f"{i:02d}|{c}:\n" for i, c in enumerate(codes, 1)))
    return {
        "id": task_id,
        "prompt": (
            "Format rule for this task: every line of walk.txt has the form NN|CODE: where NN is the "
            "segment's position in the walk (01, 02, ...). The directory chain/ holds segment files; "
            "chain/START.txt names the first one. Each segment has a line 'code: <code>' and a line "
            "'next: <file>' naming the following segment, or 'next: END' on the last one. Lines saying "
            "'retired code' are not codes. Walk the chain from the start to END and write one line per "
            "segment to walk.txt. You cannot run commands: read the files."
        ),
        "fixture": fixture,
        "budget": LONG_BUDGET,
        "policy": READ_WRITE,
        "verifiers": [
            {"kind": "command", "id": "format", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["walk.txt"]},
        ],
        "tags": ["long-context", "chain-walk", "format-rule", "ambiguous"],
    }


def chain_walk_rules(root: Path, number: int) -> dict[str, object]:
    task_id = f"chain-walk-rules-{number:02d}"
    fixture = f"fixtures/{task_id}"
    codes = chain(root, fixture, random.Random(task_id), length=16, orphans=4, pad=3200)
    write(root, f"{fixture}/chainlib.py", CHAIN_LIB)
    write(root, f"{fixture}/check.py", CHECK_RULES)
    body = "".join(f"{i:02d}~{c.upper()}\n" for i, c in enumerate(codes, 1))
    write(root, f"solutions/{task_id}/walk-report.txt", f"# walk-report\n{body}-- end of walk --\n")

    def rule(verifier_id: str, argument: str) -> dict[str, object]:
        return {
            "kind": "command",
            "id": verifier_id,
            "command": ["python3", "check.py", argument],
            "timeoutMs": 30000,
        }

    return {
        "id": task_id,
        "prompt": (
            "Three rules for the report you will write, stated once: "
            "(r1) every line between the first and the last has the form NN~CODE, where NN is the segment's "
            "two-digit position in the walk (01, 02, ...), then a tilde, then the segment's code in "
            "uppercase; "
            "(r2) the first line is exactly: # walk-report "
            "(r3) the last line is exactly: -- end of walk -- and the file ends with a single newline after it. "
            "The task: the directory chain/ holds segment files; chain/START.txt names the first one. Each "
            "segment has a line 'code: <code>' and a line 'next: <file>' naming the following segment, or "
            "'next: END' on the last one. Lines saying 'retired code' are not codes, and some files are not "
            "on the walk. Walk the chain from the start to END and write the report to walk-report.txt. You "
            "cannot run commands: read the files."
        ),
        "fixture": fixture,
        "budget": LONG_BUDGET,
        "policy": READ_WRITE,
        "verifiers": [
            rule("chain", "chain"),
            rule("r1-line-shape", "r1"),
            rule("r2-header", "r2"),
            rule("r3-footer", "r3"),
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["walk-report.txt"]},
        ],
        "tags": ["long-context", "chain-walk", "rules", "compaction"],
    }


# --- Repeated edits of one file ------------------------------------------------------------------------


def repeated_edits(root: Path) -> dict[str, object]:
    task_id = "repeated-edits"
    fixture = f"fixtures/{task_id}"
    rng = random.Random(task_id)
    accounts = {f"ACC-{n:03d}": rng.randint(1, 60) * 50 for n in range(1, 241)}
    status = dict.fromkeys(accounts, "open")
    hot = rng.sample(sorted(accounts), 8)
    ops: list[str] = []

    def line(account: str) -> str:
        return f"{account} balance={accounts[account]} status={status[account]}"

    original = "\n".join(line(a) for a in accounts)
    for number in range(1, 19):
        kind = ("transfer", "transfer", "interest", "fee")[number % 4] if number not in (9, 15) else "close"
        open_hot = [a for a in hot if status[a] == "open"]
        if kind == "transfer":
            source, target = rng.sample(open_hot, 2)
            amount = rng.randint(1, 6) * 25
            ops.append(f"{number:02d}. Transfer {amount} from {source} to {target}.")
            accounts[source] -= amount
            accounts[target] += amount
        elif kind == "interest":
            account = rng.choice(open_hot)
            ops.append(f"{number:02d}. Add 10% interest to {account}, rounded down to a whole number.")
            accounts[account] += accounts[account] // 10
        elif kind == "fee":
            account = rng.choice(open_hot)
            ops.append(f"{number:02d}. Charge a fee of 15 to {account}.")
            accounts[account] -= 15
        else:
            account = rng.choice(open_hot)
            heir = rng.choice([a for a in open_hot if a != account])
            ops.append(
                f"{number:02d}. Close {account}: move its whole balance to {heir}, then set its balance to 0 "
                "and its status to closed."
            )
            accounts[heir] += accounts[account]
            accounts[account] = 0
            status[account] = "closed"
        ops[-1] += f" Then append the line 'op {number:02d} done' to the journal."
    journal = "".join(f"op {n:02d} done\n" for n in range(1, 19))
    header = "# Ledger: one account per line. Balances are whole numbers.\n\n"
    write(root, f"{fixture}/ledger.txt", f"{header}{original}\n\n## journal\n")
    final = f"{header}{chr(10).join(line(a) for a in accounts)}\n\n## journal\n{journal}"
    write(root, f"solutions/{task_id}/ledger.txt", final)
    write(
        root,
        f"{fixture}/check.py",
        '"""The task\'s own check: ledger.txt is the result of applying the 18 operations in order."""\n\n'
        "import hashlib\nimport sys\nfrom pathlib import Path\n\n"
        f'WANT = "{hashlib.sha256(final.encode()).hexdigest()}"\n'
        "text = (Path(__file__).resolve().parent / 'ledger.txt').read_text(encoding='utf-8')\n"
        "if hashlib.sha256(text.encode()).hexdigest() != WANT:\n"
        "    journal = text.split('## journal', 1)[-1].split()\n"
        "    print(f'ledger.txt is not the expected result ({journal.count(\"done\")} journal lines)')\n"
        "    sys.exit(1)\nprint('ok')\n",
    )
    return {
        "id": task_id,
        "prompt": (
            "Apply these operations to ledger.txt, one at a time and in this order, editing the file after "
            "each one (later operations depend on earlier results). Keep every other line as it is and do "
            "not reorder lines; the journal lines go at the end of the file, after '## journal', in order. "
            "You cannot run commands.\n" + "\n".join(ops)
        ),
        "fixture": fixture,
        "budget": LONG_BUDGET,
        "policy": READ_WRITE,
        "verifiers": [
            {"kind": "command", "id": "ledger", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["ledger.txt"]},
            {"kind": "file-contains", "id": "journal-complete", "path": "ledger.txt", "text": "op 18 done\n"},
        ],
        "tags": ["long-context", "repeated-edits"],
    }


# --- A frozen directory --------------------------------------------------------------------------------

VENDOR = '''"""tinyjson 0.3 (vendored, frozen): a small JSON writer.

Known issue (upstream #41): strings are written without escaping control characters, so a tab or a
newline inside a string produces invalid JSON. Upstream has not released a fix; do not patch it here.
"""

from tinyjson.tables import SAFE


def _string(value: str) -> str:
    out = []
    for char in value:
        if char == "\\\\":
            out.append("\\\\\\\\")
        elif char == '"':
            out.append('\\\\"')
        else:
            out.append(SAFE.get(char, char))
    return '"' + "".join(out) + '"'


def dumps(value: object) -> str:
    """Compact JSON for None, bools, ints, floats, strings, lists and dicts with string keys."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_string(k) + ":" + dumps(v) for k, v in value.items()) + "}"
    raise TypeError(f"cannot serialize {type(value).__name__}")
'''

EXPORT = '''"""Export of support tickets as JSON."""

import tinyjson

FIELDS = ("id", "title", "note", "tags")


def export_ticket(ticket: dict[str, object]) -> str:
    """One ticket as a JSON object with the FIELDS, in that order."""
    return tinyjson.dumps({field: ticket[field] for field in FIELDS})
'''

CHECK_FROZEN = '''"""The task's own check: the export steps of the prompt work, and vendor/ is untouched.

Exits 0 when every step holds, 1 naming the first failures.
"""

import hashlib
import json
import sys
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "vendor")]
VENDOR = "{vendor}"

failures = []
digest = hashlib.sha256()
for path in sorted((ROOT / "vendor").rglob("*")):
    if path.is_file() and "__pycache__" not in path.parts:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\\0" + path.read_bytes())
if digest.hexdigest() != VENDOR:
    failures.append("vendor/ changed: it is frozen")
try:
    from app import export
except Exception as error:  # noqa: BLE001
    print(f"cannot import app.export: {{type(error).__name__}}: {{error}}")
    sys.exit(1)
tickets = [
    {{"id": 1, "title": "Login\\tfails", "note": "line one\\nline two", "tags": ["auth", "p1"]}},
    {{"id": 2, "title": "Caf\\u00e9 menu", "note": "quote \\" and back\\\\slash\\r\\x01", "tags": []}},
    {{"id": 3, "title": "plain", "note": "", "tags": ["x"]}},
]
for ticket in tickets:
    try:
        text = export.export_ticket(ticket)
        if json.loads(text) != ticket or list(json.loads(text)) != list(export.FIELDS):
            failures.append(f"export_ticket({{ticket['id']}}) does not read back as the ticket")
        if "\\n" in text:
            failures.append(f"export_ticket({{ticket['id']}}) spans several lines")
    except Exception as error:  # noqa: BLE001
        failures.append(f"export_ticket({{ticket['id']}}): {{type(error).__name__}}: {{error}}")
try:
    lines = export.export_lines(tickets)
    if not lines.endswith("\\n") or [json.loads(line) for line in lines.splitlines()] != tickets:
        failures.append("export_lines does not write one ticket per line (JSON Lines, final newline)")
    if export.export_lines([]) != "":
        failures.append("export_lines([]) is not the empty string")
except Exception as error:  # noqa: BLE001
    failures.append(f"export_lines: {{type(error).__name__}}: {{error}}")
try:
    counts = export.tag_counts(tickets + [{{"id": 4, "title": "t", "note": "n", "tags": ["p1", "auth", "auth"]}}])
    if counts != {{"auth": 3, "p1": 2, "x": 1}} or list(counts) != ["auth", "p1", "x"]:
        failures.append(f"tag_counts(...) = {{counts!r}}")
except Exception as error:  # noqa: BLE001
    failures.append(f"tag_counts: {{type(error).__name__}}: {{error}}")
for failure in failures[:8]:
    print(failure)
print("ok" if not failures else f"{{len(failures)}} failing")
sys.exit(1 if failures else 0)
'''


def frozen_directory(root: Path) -> dict[str, object]:
    task_id = "frozen-directory"
    fixture = f"fixtures/{task_id}"
    rng = random.Random(task_id)
    write(root, f"{fixture}/vendor/tinyjson/__init__.py", VENDOR)
    table = ["# Generated: characters tinyjson writes as they are (frozen).", "SAFE = {"]
    for point in range(0x20, 0x3000, 7):
        char = chr(point)
        if char in "\\\"" or 0xD800 <= point <= 0xDFFF:
            continue
        table.append(f"    {char!r}: {char!r},  # U+{point:04X} {rng.choice(WORDS)}")
    write(root, f"{fixture}/vendor/tinyjson/tables.py", "\n".join(table) + "\n}\n")
    write(root, f"{fixture}/vendor/README.md", "Vendored third-party code. Frozen: never edit; upgrades replace the whole directory.\n" + prose(rng, 6000) + "\n")
    write(root, f"{fixture}/src/app/__init__.py", "")
    write(root, f"{fixture}/src/app/export.py", EXPORT)
    digest = hashlib.sha256()
    for path in sorted((root / fixture / "vendor").rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(root / fixture).as_posix().encode() + b"\0" + path.read_bytes())
    write(root, f"{fixture}/check.py", CHECK_FROZEN.format(vendor=digest.hexdigest()))
    write(
        root,
        f"solutions/{task_id}/src/app/export.py",
        EXPORT.replace("import tinyjson\n", "import json\nfrom collections import Counter\n").replace(
            "    return tinyjson.dumps({field: ticket[field] for field in FIELDS})\n",
            "    return json.dumps({field: ticket[field] for field in FIELDS}, separators=(\",\", \":\"))\n\n\n"
            "def export_lines(tickets: list[dict[str, object]]) -> str:\n"
            '    """Tickets as JSON Lines: one export_ticket per line, each ending with a newline."""\n'
            '    return "".join(export_ticket(ticket) + "\\n" for ticket in tickets)\n\n\n'
            "def tag_counts(tickets: list[dict[str, object]]) -> dict[str, int]:\n"
            '    """How many times each tag is used, most used first, ties in alphabetical order."""\n'
            "    counts = Counter(tag for ticket in tickets for tag in ticket[\"tags\"])  # type: ignore[attr-defined]\n"
            "    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))\n",
        ),
    )
    return {
        "id": task_id,
        "prompt": (
            "Rule for the whole task: the directory vendor/ is frozen. Never modify, add or delete anything "
            "under vendor/, even where it has a bug. Work in src/app/ only (src/ and vendor/ are on the "
            "import path). "
            "Step 1: export_ticket in src/app/export.py writes invalid JSON when a title or note holds a tab, "
            "a newline or another control character, because the vendored tinyjson does not escape them. "
            "Make export_ticket return valid single-line JSON that reads back as the ticket, with the keys in "
            "FIELDS order. "
            "Step 2: add export_lines(tickets) returning the tickets as JSON Lines (one export_ticket per "
            "line, each line ending with a newline; the empty string for no tickets). "
            "Step 3: add tag_counts(tickets) returning a dict from tag to the number of times it is used "
            "across the tickets, most used first, ties in alphabetical order."
        ),
        "fixture": fixture,
        "budget": LONG_BUDGET,
        "policy": {"mode": "auto", "allow": ["write", "process"]},
        "verifiers": [
            {"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "frozen", "allowed": ["src/app/", "src/__pycache__/", "vendor/tinyjson/__pycache__/"]},
        ],
        "tags": ["long-context", "frozen-directory"],
    }


# --- Running totals across logs ------------------------------------------------------------------------


def running_totals(root: Path) -> dict[str, object]:
    task_id = "running-totals"
    fixture = f"fixtures/{task_id}"
    rng = random.Random(task_id)
    rows = ["day,net,running"]
    running = 0
    for day in range(1, 13):
        net = 0
        lines = []
        for minute in range(0, 300, 3):
            stamp = f"2026-03-{day:02d}T{8 + minute // 60:02d}:{minute % 60:02d}:00Z"
            roll = rng.random()
            if roll < 0.09:
                amount = rng.randint(-90, 120)
                account = rng.choice(("ops", "ops", "ops-archive", "lab"))
                state = rng.choice(("ok", "ok", "ok", "reversed"))
                lines.append(f"{stamp} TX id={day:02d}{minute:03d} account={account} amount={amount:+d} status={state}")
                if account == "ops" and state == "ok":
                    net += amount
            else:
                lines.append(f"{stamp} INFO worker={rng.randint(1, 8)} {rng.choice(FILLER)}")
        running += net
        rows.append(f"{day:02d},{net},{running}")
        write(root, f"{fixture}/logs/day-{day:02d}.log", "\n".join(lines) + "\n")
    answer = "\n".join(rows) + "\n"
    write(root, f"solutions/{task_id}/totals.csv", answer)
    write(root, f"{fixture}/check.py", CHECK_TOTALS)
    return {
        "id": task_id,
        "prompt": (
            "logs/ holds one log per day (day-01.log to day-12.log). For each day, the net is the sum of the "
            "amount of every TX line with account=ops (exactly ops, not ops-archive) and status=ok; reversed "
            "transactions do not count. Write totals.csv with the header line day,net,running and then one "
            "line per day in order: the two-digit day, that day's net, and the running total of the nets "
            "so far, for example 01,-35,-35. You cannot run commands: read the logs and keep the totals as "
            "you go."
        ),
        "fixture": fixture,
        "budget": LONG_BUDGET,
        "policy": READ_WRITE,
        "verifiers": [
            {"kind": "command", "id": "totals", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["totals.csv"]},
        ],
        "tags": ["long-context", "running-totals"],
    }


CHECK_TOTALS = '''"""The task's own check: totals.csv holds each day's ops net and the running total, from the logs."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
rows = ["day,net,running"]
running = 0
for log in sorted((ROOT / "logs").glob("day-*.log")):
    net = sum(
        int(m.group(1))
        for m in re.finditer(r" TX \\S+ account=ops amount=([+-][0-9]+) status=ok$", log.read_text(encoding="utf-8"), re.MULTILINE)
    )
    running += net
    rows.append(f"{log.stem[4:]},{net},{running}")
path = ROOT / "totals.csv"
got = path.read_text(encoding="utf-8").strip().splitlines() if path.is_file() else None
if got != rows:
    wrong = "missing" if got is None else next((f"line {i + 1}" for i, (a, b) in enumerate(zip(got, rows)) if a != b), f"{len(got)} lines, {len(rows)} expected")
    print(f"totals.csv is wrong ({wrong})")
    sys.exit(1)
print("ok")
'''


def build(root: Path, instances: int) -> None:
    tasks = [chain_walk(root), repeated_edits(root), frozen_directory(root), running_totals(root)]
    tasks.append(chain_walk_format_rule(root))
    tasks += [chain_walk_rules(root, number) for number in range(1, instances + 1)]
    for task in tasks:  # the reference solution, for alisio eval selfcheck
        task["solution"] = f"solutions/{task['id']}"
    suite = {
        "schemaVersion": 1,
        "suiteId": "long-context-stress",
        "suiteVersion": VERSION,
        "description": (
            "Long tasks that fill the context: a chain walk, repeated edits of one file, a frozen directory, "
            "running totals across logs, the older chain-walk-format-rule, and seeded chain-walk-rules "
            "instances whose three rules are stated once, each with its own verifier. With the default "
            "limits.maxContextChars nothing is compacted: compare with compare.json (alisio eval variants). "
            "Live only; not yet measured with a real model."
        ),
        "tasks": tasks,
    }
    write(root, "suite.json", json.dumps(suite, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=5, help="chain-walk-rules instances (default 5)")
    parser.add_argument("--out", type=Path, help="write a copy of the suite here instead of in place")
    args = parser.parse_args()
    if not 1 <= args.instances <= 99:
        parser.error("--instances must be between 1 and 99")
    root = HERE if args.out is None else args.out.resolve()
    if root != HERE:
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "generate.py", root / "generate.py")
        shutil.copy(HERE / "compare.json", root / "compare.json")
    for stale in ("fixtures", "solutions"):
        shutil.rmtree(root / stale, ignore_errors=True)
    build(root, args.instances)
    print(f"wrote long-context-stress {VERSION} with {args.instances} chain-walk-rules instances to {root}")


if __name__ == "__main__":
    main()
