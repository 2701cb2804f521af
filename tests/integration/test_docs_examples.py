"""Every page of the documentation is true: its examples run, its links resolve, the help links to it.

The pages are README.md, CONTRIBUTING.md and docs/*.md. From each, every fenced block is extracted (indented
fences in lists too) and checked by its language:

- ``console``: each ``$ `` line is a command, run in order in one directory per page (the checkout's suites,
  examples and Makefile linked in, the page's named blocks such as ```` ```json compare.json ```` written there,
  ``/tmp/`` standing for a directory of the test, an empty configuration and data home). A plain ``alisio ...`` command runs in-process; one that needs a shell (a pipe, ``$?``, a redirect,
  another program) runs under bash. The lines under a command are its output, stdout and stderr interleaved:
  they must appear in that order, a ``...`` line standing for any lines; run ids, timestamps, durations, the
  number of runs at once and the data directory may differ, and the order of the ``[i/n]`` lines of runs
  finishing at once does not matter. A command shown without output must exit 0; ``$ echo $?`` shows the
  previous command's exit code. A run id in a command stands for the newest run of the page.
- ``sh``: each line (comments and blank lines aside) is a command, run as above, and must exit 0.
- ``toml``: loaded as config.toml by alisio's own reader.
- ``json``: parsed (one document, or one per line); a script (``turns``) is loaded by the scripted provider, a
  compare.json (``variants``) by the variants parser against the default configuration.
- ``python``: executed; a line ``expression  # value`` must evaluate to that value (``...`` ends a prefix).

An example that cannot run here (a live endpoint, a Ray cluster, the test suite itself) has
``<!-- not-run: reason -->`` on the line before its fence; those are counted, and only those are skipped. An
example that needs files the page does not show (a report of another version) has ``<!-- setup: command -->``
lines before its fence, each run as a command before the block (its exit code is not checked: the example
after it shows whether it did its job).
docs/suite-format.md's suites and commands are run by test_suite_format_doc.py, docs/agents.md's by
test_agents_doc.py (they need their files on disk and a scripted endpoint), and docs/sandbox.md's by
test_sandbox_doc.py, which needs bubblewrap; here their links are checked and their blocks parsed.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")))
RUN_ELSEWHERE = {ROOT / "docs" / "suite-format.md", ROOT / "docs" / "agents.md", ROOT / "docs" / "sandbox.md"}
"""Pages whose commands another test runs (test_suite_format_doc.py, test_agents_doc.py; test_sandbox_doc.py,
which needs bubblewrap and skips where it is missing)."""
CHECKED = ("console", "sh", "toml", "json", "python")
"""The languages of examples: every block in one of them is run or checked, or marked not-run."""
BIN = Path(sys.executable).parent

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`\n]*)$")
_NOT_RUN = re.compile(r"^\s*<!-- not-run: (?P<reason>[^>]+?) -->\s*$")
_SETUP = re.compile(r"^\s*<!-- setup: (?P<command>.+?) -->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    path: str
    body: str
    not_run: str | None
    setup: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, outermost only, with their indentation removed."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        if not opened:
            index += 1
            continue
        indent, fence = opened["indent"], opened["fence"]
        info = opened["info"].split()
        end = index + 1
        while end < len(lines) and not re.fullmatch(rf"[ \t]*{fence}`*[ \t]*", lines[end]):
            end += 1
        assert end < len(lines), f"{page.name}:{index + 1}: a fence that never closes"
        body = "".join(line.removeprefix(indent) + "\n" for line in lines[index + 1 : end])
        comments = _comments_before(lines, index)
        reasons = [m["reason"] for m in map(_NOT_RUN.match, comments) if m]
        setup = tuple(m["command"] for m in map(_SETUP.match, comments) if m)
        language = info[0] if info else ""
        path = info[1] if len(info) > 1 else ""
        found.append(Block(page, index + 1, language, path, body, reasons[0] if reasons else None, setup))
        index = end + 1
    return found


def _comments_before(lines: list[str], index: int) -> list[str]:
    """The HTML comment lines just before line ``index`` (blank lines between them allowed), in order."""
    found: list[str] = []
    for line in reversed(lines[:index]):
        if line.strip().startswith("<!--"):
            found.insert(0, line)
        elif line.strip():
            break
    return found


def every_block() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


# Links and anchors


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped but ``-`` and ``_``, spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def code_lines(page: Path) -> set[int]:
    """The line numbers of ``page`` inside fenced blocks, their fences included."""
    inside: set[int] = set()
    for block in blocks(page):
        inside.update(range(block.line, block.line + block.body.count("\n") + 2))
    return inside


def anchors(page: Path) -> set[str]:
    inside = code_lines(page)
    lines = page.read_text(encoding="utf-8").splitlines()
    headings = (re.match(r"^#{1,6} (.+)$", line) for n, line in enumerate(lines, 1) if n not in inside)
    return {slug(heading[1]) for heading in headings if heading}


_LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def links(page: Path) -> Iterator[tuple[int, str]]:
    """Every Markdown link of ``page`` outside code blocks and inline code, with its line."""
    inside_lines = code_lines(page)
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if number in inside_lines:
            continue
        for match in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            yield number, match["target"]


def resolve(page: Path, target: str) -> str | None:
    """Why ``target`` (a link of ``page``) does not resolve, or None when it does (web links are not followed)."""
    if re.match(r"^[a-z]+:", target):
        return None
    path_part, _, anchor = target.partition("#")
    file = (page.parent / path_part).resolve() if path_part else page
    if not file.exists():
        return f"{path_part}: no such file"
    if anchor and (file.suffix != ".md" or anchor not in anchors(file)):
        return f"{file.relative_to(ROOT)} has no heading #{anchor}"
    return None


def test_every_page_has_a_table_of_contents_and_its_links_resolve() -> None:
    broken = [
        f"{page.relative_to(ROOT)}:{number}: ({target}) {why}"
        for page in PAGES
        for number, target in links(page)
        if (why := resolve(page, target))
    ]
    assert not broken, "\n".join(broken)
    for page in PAGES:
        if page.name == "README.md":
            continue
        own = anchors(page)
        toc = [target[1:] for _, target in links(page) if target.startswith("#")]
        assert len(toc) >= 2 and set(toc) <= own, f"{page.name}: no table of contents of its headings"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    listed = {(ROOT / target).resolve() for _, target in links(ROOT / "README.md")}
    assert set(PAGES) - {ROOT / "README.md"} <= listed, "the README links every page"


def help_text(*argv: str) -> str:
    """``alisio ARGV -h``, in-process, as a terminal 100 columns wide would show it."""
    from alisio.shell.cli.main import run_cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), _environ({"COLUMNS": "100", "TERM": "dumb"}):
        assert run_cli([*argv, "-h"]) == 0
    return out.getvalue()


def test_each_command_help_ends_with_the_page_that_documents_it() -> None:
    """``alisio run -h``, ``alisio eval -h`` and each eval command's help end with ``Docs: alisio help
    TOPIC#HEADING``; the page and its heading exist (a renamed heading fails here), and ``alisio help`` prints
    that section of it."""
    from alisio.shell.cli.eval_app import COMMANDS
    from alisio.shell.cli.main import run_cli

    commands = [("run",), ("eval",), *(("eval", name) for name in COMMANDS)]
    for argv in commands:
        last = [line.strip() for line in help_text(*argv).splitlines() if line.strip()][-1]
        assert last.startswith("Docs: alisio help "), (argv, last)
        reference = last.removeprefix("Docs: alisio help ")
        topic, _, anchor = reference.partition("#")
        target = ("README.md" if topic == "readme" else f"docs/{topic}.md") + (f"#{anchor}" if anchor else "")
        assert resolve(ROOT / "README.md", target) is None, (argv, resolve(ROOT / "README.md", target))
        assert argv == ("eval",) or anchor, (argv, "link the heading, not only the page")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert run_cli(["help", reference]) == 0, reference
        heading = out.getvalue().splitlines()[0]
        assert heading.startswith("#") and (not anchor or slug(heading.lstrip("#")) == anchor), (
            reference,
            heading,
        )


# toml, json and python examples


def test_the_examples_are_marked_or_checked_and_the_not_run_ones_counted() -> None:
    """Every example block is of a language this test checks or marked not-run with its reason; the
    not-run ones are few and each says why."""
    found = every_block()
    examples = [b for b in found if b.language in CHECKED]
    unknown = [b.where for b in found if b.language not in (*CHECKED, "text", "markdown", "yaml")]
    assert not unknown, f"blocks without a known language: {unknown}"
    not_run = [b for b in examples if b.not_run]
    assert all(len(b.not_run or "") >= 10 for b in not_run)
    assert [b.where for b in found if b.not_run and b.language not in CHECKED] == []
    assert len(examples) >= 40 and len(not_run) <= 17, (len(examples), [b.where for b in not_run])


@pytest.mark.parametrize("block", [b for b in every_block() if b.language == "toml"], ids=lambda b: b.where)
def test_toml_examples_load_as_config_toml(block: Block, tmp_path: Path) -> None:
    from returns.result import Success

    from alisio.shell.config_home import load_config

    (tmp_path / "config.toml").write_text(block.body, encoding="utf-8")
    loaded = load_config({"ALISIO_CONFIG_HOME": str(tmp_path)})
    assert isinstance(loaded, Success) and loaded.unwrap().found, f"{block.where}: {loaded}"


def config_keys() -> set[str]:
    """Every key config.toml accepts, dotted and spelt as in the file, from the configuration's own model."""
    import msgspec

    from alisio.core.harness import config

    def keys(prefix: str, struct: type) -> set[str]:
        return {f"{prefix}{field.encode_name}" for field in msgspec.structs.fields(struct)}

    tables = {"provider.": config.ProviderSettings, "lab.": config.LabSettings, "limits.": config.Limits}
    tables |= {
        "compaction.": config.Compaction,
        "reasoning.": config.Reasoning,
        "sampling.": config.Sampling,
        "tools.": config.ToolSettings,
        "retries.": config.Retries,
    }
    found = {key for prefix, struct in tables.items() for key in keys(prefix, struct)}
    agent = {f"agents.NAME.{field.encode_name}" for field in msgspec.structs.fields(config.AgentConfig)}
    from alisio.core.harness.prices import PRICE_KEYS

    prices = {f"prices.MODEL.{key}" for key in PRICE_KEYS}
    from alisio.core.harness.mcp import McpServer

    prices |= {
        f"mcp.servers.NAME.{f.encode_name}" for f in msgspec.structs.fields(McpServer) if f.name != "name"
    }
    return found | (agent - {"agents.NAME.name"}) | prices | {"instructions", "cache"}


def test_the_configuration_page_documents_every_key() -> None:
    """docs/configuration.md's table has a row for every key the configuration accepts, and its complete
    config.toml sets every one (an added key fails here until it is documented)."""
    page = ROOT / "docs" / "configuration.md"
    section = page.read_text(encoding="utf-8").split("\n## Every key\n")[1].split("\n## ")[0]
    rows = set(re.findall(r"^\| `([\w.]+)` \|", section, re.MULTILINE))
    assert rows == config_keys()
    (example,) = [b for b in blocks(page) if b.language == "toml"]
    import tomllib

    def flat(prefix: str, table: dict[str, object]) -> set[str]:
        leaves = ("provider.headers",)  # a table of free names: one key
        nested = {k: v for k, v in table.items() if isinstance(v, dict) and f"{prefix}{k}" not in leaves}
        plain = {f"{prefix}{k}" for k in table if k not in nested}
        return plain.union(*(flat(f"{prefix}{k}.", v) for k, v in nested.items()))

    named = {"agents": "NAME", "prices": "MODEL", "mcp.servers": "NAME"}  # tables of free names: any name
    written = {
        re.sub(r"^(agents|prices|mcp\.servers)\.[\w-]+\.", lambda m: f"{m[1]}.{named[m[1]]}.", key)
        for key in flat("", tomllib.loads(example.body))
    }
    assert written == config_keys()


def _json_documents(body: str) -> list[object]:
    try:
        return [json.loads(body)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in body.splitlines() if line.strip()]


@pytest.mark.parametrize(
    "block", [b for b in every_block() if b.language == "json" and not b.not_run], ids=lambda b: b.where
)
def test_json_examples_parse_and_validate(block: Block) -> None:
    from alisio.core.harness.config import MeasuredConfig
    from alisio.core.lab.comparisons.variants import parse_variants
    from alisio.shell.harness.providers.scripted import ScriptedProvider

    documents = _json_documents(block.body)
    assert documents and all(isinstance(d, dict) and d for d in documents), block.where
    for document in documents:
        assert isinstance(document, dict)
        if "turns" in document:
            ScriptedProvider.from_json(json.dumps(document), block.where)
        if "variants" in document:
            result = parse_variants(json.dumps(document).encode(), block.where, MeasuredConfig())
            assert len(result.unwrap().variants) >= 2, result


def _expected_value(comment: str) -> str | None:
    """The value a ``# comment`` states: a literal or a call-like repr at its start, or None."""
    if comment.startswith(("(", "Interval(")):
        depth = 0
        for index, char in enumerate(comment):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and char == ")":
                return comment[: index + 1]
    token = comment.split()[0].rstrip(":")
    return token if re.match(r"^(-?\d|None$)", token) else None


def _matches(value: object, expected: str) -> bool:
    if "..." in expected:
        pattern = ".*".join(re.escape(part) for part in expected.split("..."))
        return re.match(pattern, repr(value)) is not None
    if expected.startswith("Interval("):
        return repr(value) == expected
    literal = ast.literal_eval(expected)
    if isinstance(literal, tuple):
        return isinstance(value, tuple) and all(map(math.isclose, value, literal))
    if literal is None:
        return value is None
    return isinstance(value, int | float) and math.isclose(value, literal, rel_tol=1e-12)


@pytest.mark.parametrize(
    "block", [b for b in every_block() if b.language == "python" and not b.path], ids=lambda b: b.where
)
def test_python_examples_run_and_give_the_values_they_state(block: Block) -> None:
    namespace: dict[str, object] = {}
    stated = 0
    for line in block.body.splitlines():
        code, _, comment = line.partition("  #")
        if not code.strip():
            continue
        expected = _expected_value(comment.strip()) if comment.strip() else None
        if expected is None:
            exec(code, namespace)
            continue
        value = eval(code, namespace)
        assert _matches(value, expected), (
            f"{block.where}: {code.strip()} is {value!r}, the page says {expected}"
        )
        stated += 1
    assert stated >= 1


# console and sh examples


_RUN_ID = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z")
_SHELL = re.compile(r"[|;&<>$`*]|^\w+=|^(?!alisio )")


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class Page:
    """Where one page's commands run: its directory, its data home, the exit code of the last command."""

    cwd: Path
    tmp: Path
    data: Path
    env: dict[str, str]
    code: int = 0

    def newest_run(self) -> str:
        runs = sorted(p.name for p in (self.data / "eval").iterdir() if _RUN_ID.fullmatch(p.name))
        return runs[-1]

    def normalise(self, text: str) -> str:
        text = text.replace(str(self.data), "/home/you/.local/state/alisio").replace(str(self.tmp), "/tmp")
        text = text.replace(str(self.cwd), "<checkout>").replace(str(ROOT), "<checkout>")
        text = _RUN_ID.sub("<run-id>", text)
        text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "<time>", text)
        text = re.sub(r"[+-]?\b\d+\.\d s\b", "<s>", text)  # a time delta's sign varies with load too
        text = re.sub(r"\(\d+ ms\)", "(<ms>)", text)
        text = re.sub(r"\balisio \d+\.\d+\.\d+[\w+-]*", "alisio <version>", text)  # the built-in agent
        return re.sub(r"\b\d+ at once\b", "<n> at once", text)

    def run(self, command: str) -> str:
        """Run one command of the page; its stdout and stderr interleaved, as the page shows them."""
        if command == "echo $?":
            return f"{self.code}\n"
        command = command.replace("/tmp/", f"{self.tmp}/")
        if _RUN_ID.search(command):
            command = _RUN_ID.sub(self.newest_run(), command)
        if _SHELL.search(command):
            done = subprocess.run(
                ["bash", "-c", command], cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, check=False,
            )  # fmt: skip
            self.code = done.returncode
            return done.stdout
        from alisio.shell.cli.main import run_cli

        out = io.StringIO()
        with (
            contextlib.chdir(self.cwd),
            _environ(self.env),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(out),
        ):
            self.code = run_cli(shlex.split(command, comments=True)[1:])
        return out.getvalue()


def _progress(line: str) -> bool:
    return re.match(r"^\[\d+/\d+\] ", line) is not None


def _as_progress(line: str) -> str:
    return re.sub(r" rep \d+:", " rep <r>:", re.sub(r"^\[\d+/", "[", line))


def check_output(shown: list[str], actual: list[str], where: str) -> None:
    """``shown`` lines appear in ``actual`` in order (``...`` for any lines); ``[i/n]`` lines in any order."""
    done = {_as_progress(line) for line in actual if _progress(line)}
    missing = [line for line in shown if _progress(line) and _as_progress(line) not in done]
    assert not missing, f"{where}: not printed: {missing}\n" + "\n".join(actual)
    rest = [line for line in actual if not _progress(line)]
    position, gap = 0, False
    for line in (line for line in shown if not _progress(line)):
        if line.strip() == "...":
            gap = True
            continue
        found = next((i for i in range(position, len(rest)) if rest[i] == line), None)
        assert found is not None and (gap or found == position), (
            f"{where}: expected {line!r} at line {position + 1} of:\n" + "\n".join(rest)
        )
        position, gap = found + 1, False
    assert gap or position == len(rest) or not shown, f"{where}: printed more:\n" + "\n".join(rest[position:])


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """A block's commands and the output shown under each (continuation lines joined)."""
    text = block.body.replace("\\\n", " ")
    if block.language == "sh":
        return [(line, []) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    found: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            found.append((" ".join(line[2:].split()) if "\\" in block.body else line[2:], []))
        else:
            found[-1][1].append(line)
    return found


def page_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.language in ("console", "sh") and not b.not_run]


@pytest.fixture
def page_dir(tmp_path: Path) -> Page:
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    for name in ("suites", "examples", "bench", "tests", "Makefile", "pyproject.toml", ".venv"):
        (cwd / name).symlink_to(ROOT / name)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "config").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PYTHONUNBUFFERED="1",
        ALISIO_CONFIG_HOME=str(tmp_path / "config"), ALISIO_DATA_HOME=str(tmp_path / "data"),
    )  # fmt: skip
    return Page(cwd=cwd, tmp=tmp_path / "tmp", data=tmp_path / "data", env=env)


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p not in RUN_ELSEWHERE and page_blocks(p)], ids=lambda p: p.name
)
def test_every_command_of_the_page_prints_what_the_page_shows(page: Path, page_dir: Page) -> None:
    for named in (b for b in blocks(page) if b.path):
        (page_dir.cwd / named.path).parent.mkdir(parents=True, exist_ok=True)
        (page_dir.cwd / named.path).write_text(named.body, encoding="utf-8")
    ran = 0
    for block in page_blocks(page):
        for setup in block.setup:
            page_dir.run(setup)
        for command, shown in commands(block):
            output = page_dir.normalise(page_dir.run(command))
            where = f"{block.where}: $ {command}"
            if shown:
                check_output([page_dir.normalise(line) for line in shown], output.splitlines(), where)
            else:
                assert page_dir.code == 0, f"{where}: exit {page_dir.code}\n{output}"
            ran += 1
    assert ran >= 1
