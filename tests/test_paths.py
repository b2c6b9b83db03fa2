"""Ids are single safe path components: nothing escapes data/agents/."""

import pytest

from engine.errors import InvalidIdError
from engine.paths import character_paths, validate_id


@pytest.mark.parametrize("value", ["alice", "小月", "user_42", "a.b-c", "x" * 64])
def test_valid_ids(value):
    assert validate_id(value) == value


@pytest.mark.parametrize(
    "value",
    ["", "..", "../etc", "a/b", "a\\b", "/abs", ".hidden", "x" * 65, "a..b", "trailing.", "nul\x00", " space", 5],
    ids=lambda v: repr(v)[:20],
)
def test_invalid_ids(value):
    with pytest.raises(InvalidIdError):
        validate_id(value)


def test_user_paths_stay_inside_the_character(tmp_path):
    paths = character_paths(tmp_path, "xiaoyue")
    user = paths.user("alice")
    assert user.root.resolve().is_relative_to((tmp_path / "agents" / "xiaoyue").resolve())
    with pytest.raises(InvalidIdError):
        paths.user("../../x")
    with pytest.raises(InvalidIdError):
        character_paths(tmp_path, "../x")
