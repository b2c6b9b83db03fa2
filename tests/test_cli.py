"""The public surface: exported names, every CLI command has help and an example, the demo runs."""

import subprocess
import sys
from pathlib import Path

import engine
from engine.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parent.parent


def test_public_names_are_exported():
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name
    for name in ["MemoryOrchestrator", "PromptResult", "Hit", "Store", "load_config", "ScriptedLLM", "EngineError"]:
        assert name in engine.__all__


def test_every_command_has_help_and_an_example():
    build_parser()
    assert set(COMMANDS) >= {"demo", "prompt", "chat", "check", "reindex", "facts"}
    for name, (parser, _) in COMMANDS.items():
        text = parser.format_help()
        assert parser.description, name
        assert "example:" in text and "kioku " in text.split("example:")[1], name


def test_importing_engine_prints_nothing():
    out = subprocess.run([sys.executable, "-c", "import engine, engine.timeparse, engine.cli"], capture_output=True, text=True, check=True)
    assert out.stdout == ""


def test_check_reports_file_and_line(tmp_path, capsys):
    (tmp_path / "good.yaml").write_text("雾川镇: 多雾的小镇\n", encoding="utf-8")
    (tmp_path / "bad.yaml").write_text("a: 1\n  b: 2\n", encoding="utf-8")
    assert main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "bad.yaml:" in out and "good.yaml" not in out
    (tmp_path / "bad.yaml").unlink()
    assert main(["check", str(tmp_path)]) == 0


def test_prompt_command_shows_hits(tmp_path, capsys):
    import shutil

    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    assert main(["prompt", "xiaoyue", "我想去看看阿黄", "--data-dir", str(tmp_path), "--now", "2026-11-22T20:30"]) == 0
    out = capsys.readouterr().out
    assert "[world_book]" in out and 'key "阿黄"' in out and "messages:" in out


def test_config_error_is_reported_not_raised(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("retrieval:\n  budjet: 1\n", encoding="utf-8")
    assert main(["prompt", "xiaoyue", "hi", "--config", str(bad)]) == 2
    assert "retrieval.budjet" in capsys.readouterr().err


def test_demo_prints_a_built_prompt(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "engine.cli", "demo", "--keep", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "follow-up at 2026-11-22 20:30" in text and "messages:" in text
    assert 'expression "昨天"' in text and "[diary" in text
    assert "晚上加班做完了灯会的海报" in text
    assert (tmp_path / "demo/agents/xiaoyue/users/linzhou/memorys/2026-11-21.yaml").is_file()


def test_every_subpackage_ships_in_the_wheel():
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "engine").rglob("__init__.py")}
    assert on_disk <= listed, f"add to pyproject packages: {sorted(on_disk - listed)}"
