"""The wheel and the sdist hold everything zq needs, and the installed zq is the wheel's."""

from __future__ import annotations

import subprocess
import tarfile
import zipfile
from pathlib import Path

from tests.installed.conftest import ROOT, Installed, outside_env

# Files that only the checkout needs: the wheel leaves them out on purpose.
NOT_IN_THE_WHEEL: set[str] = set()


def tracked(*paths: str) -> list[str]:
    """Files git tracks under ``paths`` (what a fresh clone holds)."""
    listed = subprocess.run(["git", "ls-files", "--", *paths], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    return [line for line in listed.splitlines() if line]


def missing_from_wheel(names: set[str], data_dir: str) -> list[str]:
    """Every tracked file zq needs at run time that ``names`` (a wheel's listing) lacks.

    The package: every file under zq/, Python or not (Lua scripts, py.typed).
    The migrations: installed as data files under ``<data_dir>/data/share/zq/``.
    """
    needed = [name for name in tracked("zq") if name not in NOT_IN_THE_WHEEL]
    needed += [f"{data_dir}/data/share/zq/{name}" for name in tracked("migrations")]
    return sorted(name for name in needed if name not in names)


def test_the_wheel_holds_every_file_zq_needs_at_run_time(installed: Installed) -> None:
    wheel = installed.wheel()
    names = set(zipfile.ZipFile(wheel).namelist())
    data_dir = wheel.name.split("-py3")[0] + ".data"  # zq-0.1.0.data
    assert any(name.endswith(".lua") for name in names), "no Lua script in the wheel"
    assert missing_from_wheel(names, data_dir) == []


def test_the_check_would_see_a_missing_lua_script(installed: Installed) -> None:
    wheel = installed.wheel()
    names = set(zipfile.ZipFile(wheel).namelist())
    data_dir = wheel.name.split("-py3")[0] + ".data"
    names.discard("zq/storage/redis/lua/claim.lua")
    assert missing_from_wheel(names, data_dir) == ["zq/storage/redis/lua/claim.lua"]


def test_the_sdist_holds_what_building_the_wheel_needs(installed: Installed) -> None:
    # .ci/artifact builds the wheel from this sdist (python -m build), so a
    # file missing here also fails the build; this names it.
    with tarfile.open(installed.sdist()) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        names = {name.removeprefix(f"{top}/") for name in sdist.getnames()}
    needed = {"setup.cfg", "pyproject.toml", "README.md", "MANIFEST.in",
              *tracked("zq", "migrations")}
    assert sorted(needed - names) == []


def test_the_installed_zq_is_the_wheel_in_site_packages(installed: Installed,
                                                        outside: Path) -> None:
    site = installed.site_packages()
    assert site.is_relative_to(installed.venv)
    found = installed.run_python("import zq; print(zq.__file__)", cwd=outside).strip()
    assert Path(found) == site / "zq" / "__init__.py"
    assert not Path(found).is_relative_to(ROOT)
    lua = sorted(p.name for p in (site / "zq" / "storage" / "redis" / "lua").glob("*.lua"))
    assert lua == sorted(Path(name).name for name in tracked("zq/storage/redis/lua"))


def test_the_installed_zq_finds_its_migrations(installed: Installed, outside: Path) -> None:
    found = installed.run_python(
        "from zq.storage.sql import migrate; print(migrate.migrations_dir())", cwd=outside)
    directory = Path(found.strip())
    assert directory.is_relative_to(installed.venv) and (directory / "env.py").is_file()
    assert sorted(p.name for p in (directory / "versions").glob("*.py")) == sorted(
        Path(name).name for name in tracked("migrations/versions") if name.endswith(".py"))


def test_migrations_are_found_in_a_prefix_install_too(installed: Installed, outside: Path,
                                                       tmp_path: Path) -> None:
    # pip install --prefix (and --user) puts data files outside sys.prefix:
    # zq asks the installed distribution's RECORD where they went.
    prefix = tmp_path / "prefix"
    done = subprocess.run(
        [str(installed.python), "-m", "pip", "install", "--quiet", "--no-deps",
         "--ignore-installed", "--prefix", str(prefix), str(installed.wheel())],
        capture_output=True, text=True, timeout=300, cwd=outside)
    assert done.returncode == 0, done.stderr
    (site,) = prefix.glob("lib/python*/site-packages")
    found = subprocess.run(
        [str(installed.python), "-c",
         "import zq; from zq.storage.sql import migrate; "
         "print(zq.__file__); print(migrate.migrations_dir())"],
        capture_output=True, text=True, timeout=120, cwd=outside,
        env={**outside_env(), "PYTHONPATH": str(site)})
    assert found.returncode == 0, found.stderr
    module, migrations = found.stdout.split()
    assert Path(module).is_relative_to(site)
    assert Path(migrations) == prefix / "share" / "zq" / "migrations"
