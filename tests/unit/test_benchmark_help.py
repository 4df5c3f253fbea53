"""Every benchmark script's ``--help`` runs, explains every option and shows an example."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT_S = 60

# An argument's line in argparse's help: two spaces, then the option (or a positional).
OPTION_LINE = re.compile(r"^  (-{1,2}\w.*)$")
ENTRY_LINE = re.compile(r"^  (\S.*)$")
# The invocation is separated from its help by at least two spaces.
HELP_ON_SAME_LINE = re.compile(r"\S  +\S")
EXAMPLE_COMMAND = re.compile(r"python (-m benchmarks\.|benchmarks/)")


def benchmark_scripts() -> list[str]:
    """Modules of benchmarks/ run as scripts: a ``__main__`` guard, or a package's __main__.py."""
    names = [path.stem for path in sorted(BENCHMARKS.glob("*.py"))
             if re.search(r"""__name__\s*==\s*["']__main__["']""", path.read_text())]
    names += [path.parent.name for path in sorted(BENCHMARKS.glob("*/__main__.py"))]
    return sorted(names)


SCRIPTS = benchmark_scripts()


def run_help(name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", f"benchmarks.{name}", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT_S)


@functools.cache
def all_help() -> dict[str, subprocess.CompletedProcess[str]]:
    """Every script's ``--help``, run four at a time (importing some takes a few seconds)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(SCRIPTS, pool.map(run_help, SCRIPTS), strict=True))


def bare_arguments(text: str) -> list[str]:
    """The argument lines of ``text`` with no help, on their own line or wrapped onto the next."""
    lines = text.splitlines()
    bare = []
    in_positionals = False
    for index, line in enumerate(lines):
        if line and not line.startswith(" "):
            in_positionals = line.startswith("positional arguments")
            continue
        entry = OPTION_LINE.match(line) or (in_positionals and ENTRY_LINE.match(line))
        if not entry or HELP_ON_SAME_LINE.search(entry.group(1)):
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        wrapped_help = following.startswith("    ") and following.strip() != ""
        if not wrapped_help:
            bare.append(line.strip())
    return bare


def test_scripts_are_found() -> None:
    assert "loadgen" in SCRIPTS
    assert "zaqar_side_by_side" in SCRIPTS
    assert "minimal_app" not in SCRIPTS and "scratch_storage" not in SCRIPTS


def test_bare_arguments_are_spotted() -> None:
    text = ("options:\n  -h, --help  show this help\n  --workers WORKERS\n"
            "  --a-very-long-option-name LONG_METAVAR\n                        wrapped help\n"
            "  --skip\n\npositional arguments:\n  URI\n  NAME  a name\n")
    assert bare_arguments(text) == ["--workers WORKERS", "--skip", "URI"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_explains_itself(name: str) -> None:
    result = all_help()[name]
    assert result.returncode == 0, (
        f"benchmarks.{name} --help: exit {result.returncode}\n{result.stderr}")
    out = result.stdout
    bare = bare_arguments(out)
    assert bare == [], f"benchmarks.{name}: arguments without help: {bare}"
    lines = out.splitlines()
    first = next((i for i, line in enumerate(lines) if "example" in line.lower()), None)
    assert first is not None, f"benchmarks.{name}: no example in --help"
    assert any(EXAMPLE_COMMAND.search(line) for line in lines[first + 1:]), (
        f"benchmarks.{name}: no command line after the word example")
