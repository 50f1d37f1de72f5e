"""The code's floors (README, "How the code is laid out") hold: the import contracts in
pyproject.toml pass, and they do fail when a module imports upward or two modules import each
other."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dashboard", "todos", "planmode")
# The `lint-imports` command, run by the interpreter running the tests.
LINT_IMPORTS = (
    "import sys; from importlinter.cli import lint_imports_command as run; sys.exit(run())"
)


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache", "--no-logo"],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_of_the_code(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_imports_go_down_the_floors_and_in_no_circle() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_an_upward_import_breaks_the_floors(tmp_path: Path) -> None:
    root = copy_of_the_code(tmp_path)
    sql = root / "dashboard" / "core" / "sql.py"
    sql.write_text(sql.read_text() + "\nfrom dashboard.live import publisher  # noqa\n")

    result = lint_imports(root)

    assert result.returncode == 1
    assert "Floors: each imports only the floors below it BROKEN" in result.stdout
    assert "dashboard.core.sql -> dashboard.live.publisher" in result.stdout


def test_two_modules_that_import_each_other_are_a_circle(tmp_path: Path) -> None:
    root = copy_of_the_code(tmp_path)
    enforcer = root / "todos" / "enforcer.py"
    enforcer.write_text(enforcer.read_text() + "\nfrom todos import services  # noqa\n")

    result = lint_imports(root)

    assert result.returncode == 1
    assert "No circles between modules or packages side by side BROKEN" in result.stdout
    assert "No cycles are allowed in todos." in result.stdout
    assert ".services -> .enforcer" in result.stdout
