"""Writes the long-context suite (suite.json, fixtures/, solutions/) deterministically.

python3 suites/long-context/generate.py [--out DIR]

Without --out it rewrites the suite in place (next to this file); with --out it writes a complete copy
there (this script included). The long files are built from a fixed seed, so two runs write the same
bytes; tests/integration/test_bundled_suites.py checks that the committed files are what this writes.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20261014
WORDS = (
    "amber basalt cedar delta ember fjord garnet harbor indigo juniper kestrel lumen meadow nickel onyx "
    "pepper quartz raven sierra tundra umber velvet willow xenon yarrow zephyr"
).split()
TEAMS = ("payments", "search", "platform", "identity", "growth", "billing", "storage", "edge")
BUDGET = {"maxTurns": 40, "maxTokens": 400000, "maxWallMs": 300000, "maxToolCalls": 60}
POLICY = {"mode": "auto", "allow": ["write", "process"]}


def name(rng: random.Random, parts: int = 2) -> str:
    return "-".join(rng.choice(WORDS) for _ in range(parts))


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8", newline="\n")


# --- Task 1: two facts in two long configuration files -------------------------------------------------


def queue_routing(root: Path, rng: random.Random) -> dict[str, object]:
    fixture = "fixtures/queue-consumer-port"
    services: list[tuple[str, int, str]] = []
    used_ports: set[int] = set()
    used_names: set[str] = set()
    while len(services) < 1400:
        service = f"{name(rng)}-{rng.randint(1, 99):02d}"
        port = rng.randint(20000, 39999)
        if service in used_names or port in used_ports:
            continue
        used_names.add(service)
        used_ports.add(port)
        services.append((service, port, rng.choice(TEAMS)))
    target = services[700]
    decoys = [services[350], services[1050], services[701]]
    blocks = [
        f"[service {service}]\nowner = team-{team}\nport = {port}\nreplicas = {rng.randint(1, 9)}\n"
        f"healthcheck = /healthz?probe={rng.randint(1000, 9999)}\n"
        for service, port, team in services
    ]
    write(root, f"{fixture}/config/services.conf", "# Service registry: one block per service.\n\n" + "\n".join(blocks))
    queues: list[str] = []
    for index in range(1800):
        service = services[rng.randrange(len(services))][0]
        queue = f"{name(rng)}-{rng.randint(1, 999)}"
        queues.append(f"queue {queue:<28} consumer {service:<28} retention {rng.randint(1, 14)}d")
        if index == 900:
            queues.append(f"queue {'invoices-eu':<28} consumer {target[0]:<28} retention 30d")
        if index == 450:
            queues.append(f"queue {'invoices-eu-dlq':<28} consumer {decoys[0][0]:<28} retention 90d")
        if index == 1350:
            queues.append(f"queue {'invoices-us':<28} consumer {decoys[1][0]:<28} retention 30d")
        if index == 901:
            queues.append(f"queue {'invoices-euro-archive':<28} consumer {decoys[2][0]:<28} retention 365d")
    write(root, f"{fixture}/config/queues.conf", "# Queue -> consuming service.\n" + "\n".join(queues) + "\n")
    write(root, f"{fixture}/README.md", "# Ops configuration\n\nconfig/queues.conf maps each queue to the service that consumes it;\nconfig/services.conf describes every service.\n")
    write(root, f"{fixture}/check.py", CHECK_QUEUE)
    write(root, "solutions/queue-consumer-port/answer.txt", f"{target[1]}\n")
    return {
        "id": "queue-consumer-port",
        "prompt": (
            "Which port does the service that consumes the queue invoices-eu listen on? The queue-to-service "
            "mapping is in config/queues.conf and the ports are in config/services.conf; both files are long. "
            "Write only the port number, followed by a newline, to answer.txt. Do not change anything else."
        ),
        "fixture": fixture,
        "budget": BUDGET,
        "policy": POLICY,
        "verifiers": [
            {"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["answer.txt"]},
        ],
        "tags": ["long-context", "buried-fact", "two-hop"],
    }


CHECK_QUEUE = '''"""The task's own check: answer.txt holds the port of the consumer of invoices-eu (read from the configs)."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
queues = (ROOT / "config" / "queues.conf").read_text(encoding="utf-8")
services = (ROOT / "config" / "services.conf").read_text(encoding="utf-8")
consumer = re.search(r"^queue invoices-eu +consumer (\\S+)", queues, re.MULTILINE)
assert consumer is not None, "config/queues.conf lost the invoices-eu queue"
port = re.search(rf"^\\[service {re.escape(consumer.group(1))}\\]\\n(?:.*\\n)*?port = (\\d+)$", services, re.MULTILINE)
assert port is not None, "config/services.conf lost the consumer's block"
answer = ROOT / "answer.txt"
got = answer.read_text(encoding="utf-8") if answer.is_file() else None
if got is None or got.strip() != port.group(1):
    print(f"answer.txt = {got!r}: not the port of the invoices-eu consumer")
    sys.exit(1)
print("ok")
'''


# --- Task 2: a command whose output is cut in the middle ----------------------------------------------


def audit(root: Path, rng: random.Random) -> dict[str, object]:
    fixture = "fixtures/truncated-audit-output"
    rows = ["id,payload,checksum"]
    bad = 1537
    for record in range(1, 3001):
        payload = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(12))
        checksum = sum(payload.encode()) * 31 % 65521
        if record == bad:
            checksum = (checksum + 7) % 65521
        rows.append(f"R{record:05d},{payload},{checksum}")
    write(root, f"{fixture}/data/records.csv", "\n".join(rows) + "\n")
    write(root, f"{fixture}/tools/audit.py", AUDIT)
    write(root, f"{fixture}/check.py", CHECK_AUDIT)
    fixed = rows[:]
    record_id, payload, checksum = fixed[bad].split(",")
    fixed[bad] = f"{record_id},{payload},{sum(payload.encode()) * 31 % 65521}"
    write(root, "solutions/truncated-audit-output/data/records.csv", "\n".join(fixed) + "\n")
    write(root, "solutions/truncated-audit-output/answer.txt", f"R{bad:05d}\n")
    return {
        "id": "truncated-audit-output",
        "prompt": (
            "Run python3 tools/audit.py: it checks every record of data/records.csv and reports exactly one "
            "checksum mismatch. Write the id of that record (for example R00042), followed by a newline, to "
            "answer.txt. Then correct that record's stored checksum in data/records.csv to the value the audit "
            "expects, so that python3 tools/audit.py exits 0. Change nothing else in data/records.csv and do "
            "not modify tools/audit.py."
        ),
        "fixture": fixture,
        "budget": BUDGET,
        "policy": POLICY,
        "verifiers": [
            {"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["answer.txt", "data/records.csv"]},
        ],
        "tags": ["long-context", "truncated-output"],
    }


AUDIT = '''"""Audit data/records.csv: one line per record, then a summary; exit 1 when a checksum does not match."""

import sys
from pathlib import Path

rows = Path("data/records.csv").read_text(encoding="utf-8").splitlines()[1:]
bad = 0
for row in rows:
    record, payload, stored = row.split(",")
    expected = sum(payload.encode()) * 31 % 65521
    if int(stored) == expected:
        print(f"{record} payload={payload} checksum={stored} status=ok")
    else:
        bad += 1
        print(f"{record} payload={payload} checksum={stored} status=MISMATCH expected={expected}")
print(f"audited {len(rows)} records: {bad} mismatch(es)")
sys.exit(1 if bad else 0)
'''

CHECK_AUDIT = '''"""The task's own check: the audit passes, answer.txt names the record that failed, nothing else changed."""

import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
# sha256 of the sorted ids and payloads: the records themselves must not change, only one checksum.
PAYLOADS = "{payloads}"
FAILED = "{failed}"
rows = (ROOT / "data" / "records.csv").read_text(encoding="utf-8").splitlines()
payloads = "\\n".join(",".join(row.split(",")[:2]) for row in rows)
failures = []
if hashlib.sha256(payloads.encode()).hexdigest() != PAYLOADS:
    failures.append("data/records.csv: ids or payloads changed (only the bad checksum may change)")
done = subprocess.run([sys.executable, "tools/audit.py"], cwd=ROOT, capture_output=True, text=True, check=False)
if done.returncode != 0:
    failures.append("python3 tools/audit.py still fails: " + done.stdout.strip().splitlines()[-1])
answer = ROOT / "answer.txt"
got = answer.read_text(encoding="utf-8").strip() if answer.is_file() else None
if got is None or hashlib.sha256(got.encode()).hexdigest() != FAILED:
    failures.append(f"answer.txt = {{got!r}}: not the record that failed the audit")
for failure in failures:
    print(failure)
print("ok" if not failures else f"{{len(failures)}} failing")
sys.exit(1 if failures else 0)
'''


# --- Task 3: a version pin from a long registry listing -----------------------------------------------


def registry(root: Path, rng: random.Random) -> dict[str, object]:
    fixture = "fixtures/registry-pin"
    lines = ["# package           version   channel   license     published"]
    packages = [f"{name(rng)}" for _ in range(600)]
    stable = "4.17.3"
    for index in range(4200):
        package = rng.choice(packages)
        version = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}"
        channel = rng.choice(("stable", "beta", "nightly", "stable"))
        license_ = rng.choice(("MIT", "Apache-2.0", "BSD-3", "MPL-2.0"))
        day = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        lines.append(f"{package:<19} {version:<9} {channel:<9} {license_:<11} {day}")
        extra = {
            1200: ("orrery-core", "4.18.0", "beta"),
            1900: ("orrery-core-extras", "4.19.1", "stable"),
            2100: ("orrery-core", stable, "stable"),
            2101: ("orrery-core", "4.18.0-rc.1", "nightly"),
            3300: ("orrery-cored", "5.0.2", "stable"),
        }.get(index)
        if extra is not None:
            lines.append(f"{extra[0]:<19} {extra[1]:<9} {extra[2]:<9} {'MIT':<11} 2026-06-1{index % 10}")
    write(root, f"{fixture}/data/registry.txt", "\n".join(lines) + "\n")
    pins = (
        '"""Pinned versions of the third-party packages we ship with."""\n\nPINS = {\n'
        '    "basalt-cedar": "2.4.0",\n    "orrery-core": "3.9.8",\n    "orrery-core-extras": "3.9.8",\n'
        '    "zephyr-umber": "0.14.2",\n}\n'
    )
    write(root, f"{fixture}/src/pins.py", pins)
    write(root, f"{fixture}/check.py", CHECK_PINS)
    write(root, "solutions/registry-pin/src/pins.py", pins.replace('"orrery-core": "3.9.8"', f'"orrery-core": "{stable}"'))
    return {
        "id": "registry-pin",
        "prompt": (
            "Update the pin of orrery-core in src/pins.py to the version that data/registry.txt lists for "
            "orrery-core on the stable channel (the registry is long and lists several packages with similar "
            "names; there is exactly one stable release of orrery-core itself). Leave every other pin as it is."
        ),
        "fixture": fixture,
        "budget": BUDGET,
        "policy": POLICY,
        "verifiers": [
            {"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["src/pins.py", "src/__pycache__/"]},
        ],
        "tags": ["long-context", "buried-fact"],
    }


CHECK_PINS = '''"""The task's own check: PINS["orrery-core"] is the registry's stable orrery-core; other pins unchanged."""

import sys
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "src"))

stable = [
    line.split()[1]
    for line in (ROOT / "data" / "registry.txt").read_text(encoding="utf-8").splitlines()
    if line.split()[:1] == ["orrery-core"] and line.split()[2] == "stable"
]
assert len(stable) == 1, "data/registry.txt must list one stable orrery-core"
try:
    from pins import PINS
except Exception as error:  # noqa: BLE001
    print(f"cannot import src/pins.py: {type(error).__name__}: {error}")
    sys.exit(1)
want = {"basalt-cedar": "2.4.0", "orrery-core": stable[0], "orrery-core-extras": "3.9.8", "zephyr-umber": "0.14.2"}
if PINS != want:
    print(f"PINS = {PINS}")
    sys.exit(1)
print("ok")
'''


def build(root: Path) -> None:
    rng = random.Random(SEED)
    tasks = [queue_routing(root, rng), audit(root, rng), registry(root, rng)]
    # The audit check holds hashes, not the answer in clear text.
    import hashlib

    rows = (root / "fixtures/truncated-audit-output/data/records.csv").read_text(encoding="utf-8").splitlines()
    payloads = "\n".join(",".join(row.split(",")[:2]) for row in rows)
    failed = (root / "solutions/truncated-audit-output/answer.txt").read_text(encoding="utf-8").strip()
    write(
        root,
        "fixtures/truncated-audit-output/check.py",
        CHECK_AUDIT.format(
            payloads=hashlib.sha256(payloads.encode()).hexdigest(),
            failed=hashlib.sha256(failed.encode()).hexdigest(),
        ),
    )
    for task in tasks:  # the reference solution, for alisio eval selfcheck
        task["solution"] = f"solutions/{task['id']}"
    suite = {
        "schemaVersion": 1,
        "suiteId": "long-context",
        "suiteVersion": "1.0.0",
        "description": (
            "Three tasks whose facts are buried in long files or in the middle of a command output longer "
            "than the bash truncation limit (20000 characters), so the agent must narrow its reads and "
            "commands. Live only; not yet measured with a real model."
        ),
        "tasks": tasks,
    }
    write(root, "suite.json", json.dumps(suite, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write a copy of the suite here instead of in place")
    args = parser.parse_args()
    root = HERE if args.out is None else args.out
    if args.out is not None:
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(__file__), root / "generate.py")
    for stale in ("fixtures", "solutions"):
        shutil.rmtree(root / stale, ignore_errors=True)
    build(root)
    print(f"wrote the long-context suite to {root}")


if __name__ == "__main__":
    main()
