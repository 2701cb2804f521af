"""eval runs --html DIR: one static page over the stored (or given) runs, whose links resolve from file://."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import unquote

from tests.integration.helpers import FIX, alisio, eval_run, make_suite, task, write_script


def _hrefs(page: str) -> list[str]:
    return [unquote(html.unescape(h)) for h in re.findall(r'href="([^"]*)"', page) if h != "data:,"]


def test_the_page_lists_every_run_with_its_rate_and_links_that_resolve(home: Path) -> None:
    suite = make_suite(home, task("fix-add"))
    script = write_script(home / "fix.json", FIX)
    label = "<script>alert(1)</script> & co"
    done = eval_run(home, suite, "-k", "3", "--allow-write", "--label", label, script=script)
    assert done.returncode == 0, done.stderr
    compare = home / "compare.json"
    compare.write_text(json.dumps({"suite": "calc-suite", "variants": [
        {"id": "base", "overrides": {}}, {"id": "early", "overrides": {"compaction.threshold": 0.6}}]}))  # fmt: skip
    variants = alisio(home, "eval", "variants", "calc-suite", "--suite-dir", suite, "--yes", "--variants", compare,
                      "--script", script, "-k", "2", "--allow-write", "--out", home / "job with space")  # fmt: skip
    assert variants.returncode == 0, variants.stderr
    target = home / "site"
    written = alisio(home, "eval", "runs", "--html", target)
    assert written.returncode == 0, written.stderr
    assert written.stderr == f"wrote {target / 'index.html'} (3 runs)\n"
    page = (target / "index.html").read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page and "<script" not in page
    assert html.escape(label, quote=False) in page
    assert "100.0% [43.9%, 100.0%]" in page and "3/3" in page and "calc-suite 1.0.0" in page
    links = _hrefs(page)
    assert len(links) == 5  # three report.html, and the job's comparison.html beside each of its two variants
    assert all((target / link).resolve().is_file() for link in links)
    assert sum(link.endswith("comparison.html") for link in links) == 2
    assert all(not link.startswith("/") for link in links)  # relative: the folder can move as a whole


def test_the_runs_given_are_indexed_and_arguments_need_html(home: Path) -> None:
    suite = make_suite(home, task("fix-add"))
    script = write_script(home / "fix.json", FIX)
    for name in ("a", "b"):
        out = home / name
        assert eval_run(home, suite, "-k", "1", "--allow-write", "--out", out, script=script).returncode == 0
    given = alisio(home, "eval", "runs", "--html", home / "b" / "pages", home / "a")
    assert given.returncode == 0, given.stderr
    page = (home / "b" / "pages" / "index.html").read_text()
    assert _hrefs(page) == ["../../a/report.html"] and "1 run, newest first." in page
    refused = alisio(home, "eval", "runs", home / "a")
    assert refused.returncode == 1 and "RUN|DIR arguments go with --html DIR" in refused.stderr
