"""The package works once installed: build the wheel, install it into a fresh venv, and run
`kioku --help` and `kioku demo` from a folder that is not the source tree.

Offline throughout: the wheel is built with the setuptools already in this venv
(`--no-build-isolation --no-index`), installed with `--no-deps --no-index` into a venv created
without pip (this venv's pip installs into it with `--python`), and the new venv sees the
dependencies already installed here through a .pth line that puts this venv's site-packages
*after* its own. A .pth line only adds a path — the .pth files in that folder (among them the
editable install of the checkout) are not run — so `engine` can only come from the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list, *, cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    out = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(map(str, args))} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with only the built wheel installed; returns its bin folder."""
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    assert (major, minor) >= (70, 1), "building the wheel offline needs setuptools>=70.1 (the dev extra installs it)"
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy: an in-tree build would leave build/ and *.egg-info in the checkout.
    src = tmp / "src"
    ignore = shutil.ignore_patterns("users", ".cache", "__pycache__", "*.pyc")
    for name in ("engine", "prompts"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    shutil.copytree(ROOT / "data/agents/xiaoyue", src / "data/agents/xiaoyue", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    dist = tmp / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--disable-pip-version-check", "-q", "-w", dist, src], cwd=tmp)
    [wheel] = dist.glob("kioku-*.whl")

    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", "-q", wheel], cwd=tmp)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp).stdout.strip())
    (site / "zz_shared_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return venv / "bin"


def _env() -> dict:
    # Nothing may point back at the checkout.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KIOKU_CONFIG", "VIRTUAL_ENV")} | {
        "HF_HUB_OFFLINE": "1"
    }


def test_the_wheel_ships_the_demo_character_and_the_prompts(installed):
    [wheel] = installed.parent.parent.glob("dist/kioku-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"engine/demo_character/character.yaml", "engine/demo_character/data_base/雾川镇.yaml",
            "engine/default_prompts/zh/persona.txt", "engine/cli.py"} <= names
    assert not [n for n in names if "/users/" in n or "/.cache/" in n]


def test_engine_comes_from_the_installed_wheel(installed, tmp_path):
    out = _run([installed / "python", "-c", "import engine, engine.demo; print(engine.__file__); print(engine.demo.demo_character_dir())"],
               cwd=tmp_path, env=_env())
    engine_file, character_dir = out.stdout.split()
    assert Path(engine_file).is_relative_to(installed.parent) and not Path(engine_file).is_relative_to(ROOT)
    assert Path(character_dir) == Path(engine_file).parent / "demo_character"


def test_kioku_help_outside_the_source_tree(installed, tmp_path):
    out = _run([installed / "kioku", "--help"], cwd=tmp_path, env=_env())
    assert "kioku demo" in out.stdout and "prompt" in out.stdout


def test_kioku_demo_outside_the_source_tree(installed, tmp_path):
    out = _run([installed / "kioku", "demo", "--keep", tmp_path / "demo"], cwd=tmp_path, env=_env())
    assert "follow-up at 2026-11-22 20:30" in out.stdout and 'expression "昨天"' in out.stdout
    assert "晚上加班做完了灯会的海报" in out.stdout
    assert (tmp_path / "demo/agents/xiaoyue/users/linzhou/memorys/2026-11-21.yaml").is_file()
    assert "Traceback" not in out.stderr
