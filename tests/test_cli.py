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


# -- user errors: one line naming the value, exit 2, no traceback ------------------------------

import os  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="module")
def cli_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    shutil.copytree(ROOT / "data/agents/xiaoyue", root / "data/agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    shutil.copytree(ROOT / "data/agents/xiaoyue", root / "data/agents/thief", ignore=shutil.ignore_patterns("users", ".cache"))
    with open(root / "data/agents/thief/character.yaml", "a", encoding="utf-8") as f:
        f.write("  llm:\n    base_url: http://127.0.0.1:9/v1\n")
    (root / "bad.yaml").write_text("retrieval:\n  budjet: 1\ncore:\n  top_k: many\n", encoding="utf-8")
    (root / "bomb.yaml").write_text("a: &a [1, 2]\nb: [*a, *a]\n", encoding="utf-8")
    return root


D = "--data-dir=data"
# (case id, argv after `kioku`, what the one line must say)
USER_ERRORS = [
    ("facts add without text", ["facts", "xiaoyue", "add", D], "'facts add' needs the fact text"),
    ("facts add blank text", ["facts", "xiaoyue", "add", "  ", D], "'facts add' needs the fact text"),
    ("facts edit without id", ["facts", "xiaoyue", "edit", "新的", D], "'facts edit' needs --id"),
    ("facts delete without id", ["facts", "xiaoyue", "delete", D], "'facts delete' needs --id"),
    ("now is not a time", ["prompt", "xiaoyue", "hi", "--now", "yesterday", D], "argument --now: 'yesterday' is not an ISO date-time"),
    ("invalid UTF-8 argument", ["prompt", "xiaoyue", b"\xff\xfe", D], "argument b'\\xff\\xfe' is not valid UTF-8"),
    ("invalid UTF-8 option value", ["prompt", "xiaoyue", "hi", "--user", b"u\xff", D], "argument b'u\\xff' is not valid UTF-8"),
    ("port too large", ["serve", "--port", "70000", D], "argument --port: '70000' is not a port number (1-65535)"),
    ("port not a number", ["serve", "--port", "http", D], "argument --port: 'http' is not a port number"),
    ("no workers", ["serve", "--workers", "0", D], "argument --workers: '0' is not a whole number of at least 1"),
    ("missing config file", ["prompt", "xiaoyue", "hi", "--config", "nowhere/config.yaml", D], "nowhere/config.yaml: no such config file"),
    ("missing config to check", ["config", "--check", "nowhere.yaml"], "nowhere.yaml: no such config file"),
    ("config is a folder", ["prompt", "xiaoyue", "hi", "--config", "data", D], "data: is a folder, not a config file"),
    ("bad config: every problem on one line", ["prompt", "xiaoyue", "hi", "--config", "bad.yaml", D],
     "bad.yaml:2: unknown key 'retrieval.budjet'; "),
    ("alias in config", ["config", "--check", "bomb.yaml"], "bomb.yaml:2: YAML aliases (*a) are not allowed"),
    ("unknown character", ["prompt", "nobody", "hi", D], "nobody/character.yaml: no character.yaml"),
    ("character id escapes", ["prompt", "../x", "hi", D], "character id '../x' is not allowed"),
    ("user id with a newline", ["prompt", "xiaoyue", "hi", "--user", "u1\n", D], "user id 'u1\\n' is not allowed"),
    ("character steals the key", ["prompt", "thief", "hi", D], "key 'config.llm.base_url' may not be set by a character folder"),
    ("unknown command", ["frobnicate"], "invalid choice: 'frobnicate'"),
    ("missing argument", ["prompt", "xiaoyue"], "the following arguments are required: message"),
    ("unknown option", ["prompt", "xiaoyue", "hi", "--frob"], "unrecognized arguments: --frob"),
]


@pytest.mark.parametrize("argv, expected", [c[1:] for c in USER_ERRORS], ids=[c[0] for c in USER_ERRORS])
def test_user_errors_are_one_line_and_exit_2(cli_data, argv, expected):
    """The real CLI in a subprocess, from a folder that is not the source tree."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"engine.cli", *(a if isinstance(a, bytes) else a.encode() for a in argv)],
        capture_output=True, timeout=300, cwd=cli_data, env=env,
    )
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert expected in lines[0], lines[0]
    assert lines[0].startswith("kioku")
    assert not (cli_data / "data/agents/xiaoyue/users/u1\n").exists()


def test_reindex_dates_resolves_old_turns_again(tmp_path, capsys):
    """Turns written by an earlier version keep the dates it resolved (here none, and a coming weekend
    read as the last one); `kioku reindex --dates` resolves them again and rewrites only those."""
    from datetime import datetime

    import yaml

    from engine.stores.diary.entry import DiaryEntry, format_entry

    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    day = tmp_path / "agents/xiaoyue/users/amy/memorys/2026-11-20.yaml"
    day.parent.mkdir(parents=True)
    at = datetime.fromisoformat("2026-11-20T20:00:00+08:00")
    old = [DiaryEntry("t1", at, "爬山", "昨天去爬山了", "累吗？"),
           DiaryEntry("t2", at, "周末", "周末要过得开心点", "好呀", (("周末", "2026-11-14–2026-11-15"),)),
           DiaryEntry("t3", at, "闲聊", "今天天气真好", "是呀")]
    day.write_text("".join(format_entry(e) for e in old), encoding="utf-8")
    before = day.read_text(encoding="utf-8")
    assert main(["reindex", "xiaoyue", "--dates", "--data-dir", str(tmp_path)]) == 0
    assert "user amy: dates of 2 turns resolved again" in capsys.readouterr().out
    dates = {e["id"]: e.get("dates") for e in yaml.safe_load(day.read_text(encoding="utf-8"))}
    assert dates == {"t1": [["昨天", "2026-11-19"]], "t2": [["周末", "2026-11-21–2026-11-22"]], "t3": None}
    assert before.split("- id: \"t3\"")[1] == day.read_text(encoding="utf-8").split("- id: \"t3\"")[1]
    assert main(["reindex", "xiaoyue", "--dates", "--data-dir", str(tmp_path)]) == 0
    assert "user amy: dates of 0 turns resolved again" in capsys.readouterr().out
