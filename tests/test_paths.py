"""Ids are single safe path components of any script: nothing escapes data/agents/."""

import shutil
from pathlib import Path

import pytest

from engine.errors import InvalidIdError
from engine.paths import character_paths, validate_id

ROOT = Path(__file__).resolve().parent.parent

VALID = ["alice", "小月", "林舟_2", "user_42", "a.b-c", "x" * 64, "ゆき", "Zoë", "नमस्ते", "Алиса", "مريم", "_x", "42", "𠀀" * 48]
INVALID = [
    "", "..", "../etc", "a/b", "a\\b", "/abs", ".hidden", "x" * 65, "a..b", "trailing.", "nul\x00", " space", 5,
    "u1\n", "u1\r\n", "\nu1", "u1\t", "u1 ", "小月\n", "a\u200bb", "a\u202eb", "a／b", "a:b", "-x", "𠀀" * 49, "\ud800",
]


@pytest.mark.parametrize("value", VALID)
def test_valid_ids(value):
    assert validate_id(value) == value


@pytest.mark.parametrize("value", INVALID, ids=lambda v: repr(v)[:20])
def test_invalid_ids(value):
    with pytest.raises(InvalidIdError) as err:
        validate_id(value, kind="user id")
    assert "user id" in str(err.value) and repr(value)[:10] in str(err.value)


def test_user_paths_stay_inside_the_character(tmp_path):
    paths = character_paths(tmp_path, "xiaoyue")
    user = paths.user("alice")
    assert user.root.resolve().is_relative_to((tmp_path / "agents" / "xiaoyue").resolve())
    with pytest.raises(InvalidIdError):
        paths.user("../../x")
    with pytest.raises(InvalidIdError):
        character_paths(tmp_path, "../x")


@pytest.mark.parametrize("user", ["u1\n", "小月\n", "u1\r"], ids=repr)
def test_library_refuses_a_trailing_newline_and_creates_nothing(tmp_path, user):
    """Through the library: the id `u1\\n` used to pass the `$`-anchored regex and create a folder `u1\\n`."""
    from engine.orchestrator import MemoryOrchestrator

    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    with MemoryOrchestrator.from_config("xiaoyue", data_dir=tmp_path) as orch:
        with pytest.raises(InvalidIdError):
            orch.build_prompt("你好", user_id=user)
        with pytest.raises(InvalidIdError):
            orch.record_turn("你好", "你好呀", user_id=user)
        orch.record_turn("你好", "你好呀", user_id=user.strip())
        orch.flush()
    users = tmp_path / "agents/xiaoyue/users"
    assert sorted(p.name for p in users.iterdir()) == [user.strip()]
    with pytest.raises(InvalidIdError):
        MemoryOrchestrator.from_config("xiaoyue\n", data_dir=tmp_path)
