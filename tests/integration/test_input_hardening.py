"""Hostile input files through the real CLI (issue 9): each one is refused with one line naming the file and
the field, exit 1, never a traceback, and one bad suite never hides the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_eval_run import FIX, make_suite, write_script
from tests.integration.test_eval_variants import refused, variants


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty configuration directory and a data directory, both under tmp_path."""
    (tmp_path / "config").mkdir()
    return tmp_path


# --- duplicate keys --------------------------------------------------------------------------------------


def test_a_repeated_override_in_compare_json_is_refused_before_any_run(home: Path) -> None:
    """compare.json giving compaction.threshold twice (0.6 then 0.9) is refused naming the key and the
    variant, before anything runs; it is not run with the last value."""
    suite = make_suite(home)
    compare = home / "compare.json"
    compare.write_text(
        '{"suite": "calc-suite", "variants": [{"id": "baseline"}, {"id": "early", "overrides": '
        '{"compaction.threshold": 0.6, "compaction.threshold": 0.9}}]}'
    )
    script = write_script(home / "fix.json", FIX)
    result = variants(home, suite, compare, "--allow-write", "--script", str(script))
    assert refused(home, result).splitlines()[0] == (
        f"alisio eval variants: {compare}: variants[1].overrides.compaction.threshold: duplicate key "
        '(only one value may be given) in variant "early"'
    )
