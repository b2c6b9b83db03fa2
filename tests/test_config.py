"""Config: strict validation with key, file and line in errors; env overrides; per-character merge."""

from pathlib import Path

import pytest
import yaml

from engine.config import EngineConfig, load_config, merge_config
from engine.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def _keys(d, prefix=()):
    for k, v in d.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _keys(v, prefix + (k,))


def test_shipped_config_states_every_default():
    raw = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    defaults = EngineConfig().model_dump(mode="json")
    defaults.pop("memory_llm")  # None by default; documented as a comment in config.yaml
    missing = set(_keys(defaults)) - set(_keys(raw))
    assert not missing, f"config.yaml lacks: {sorted('.'.join(m) for m in missing)}"
    loaded = load_config(ROOT / "config.yaml", env={})
    expect = EngineConfig(data_dir=ROOT / "data")
    assert loaded.model_dump(exclude={"data_dir"}) == expect.model_dump(exclude={"data_dir"})
    assert loaded.data_dir == ROOT / "data"


def test_unknown_key_names_key_file_and_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("language: zh\nretrieval:\n  budget_tokens: 100\n  budjet: 3\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    msg = str(err.value)
    assert "retrieval.budjet" in msg and f"{path}:4" in msg and "unknown key" in msg


def test_wrong_type_names_key_and_value(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("core:\n  top_k: many\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    assert "core.top_k" in str(err.value) and "'many'" in str(err.value) and f"{path}:2" in str(err.value)


def test_bad_yaml_names_file_and_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("language: zh\nllm:\n  model: [unclosed\n", encoding="utf-8")
    with pytest.raises(Exception) as err:
        load_config(path, env={})
    assert str(path) in str(err.value)


def test_secrets_come_from_the_environment_only(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("llm:\n  backend: openai\n  api_key_env: MY_KEY\n", encoding="utf-8")
    config = load_config(path, env={"MY_KEY": "sk-test"})
    assert config.llm.api_key.get_secret_value() == "sk-test"
    assert "sk-test" not in repr(config)
    path.write_text("llm:\n  api_key: sk-inline\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="llm.api_key"):
        load_config(path, env={})


def test_env_overrides_any_key():
    config = load_config(env={"KIOKU__RETRIEVAL__BUDGET_TOKENS": "1234", "KIOKU__LLM__BACKEND": "scripted"})
    assert config.retrieval.budget_tokens == 1234 and config.llm.backend == "scripted"


def test_character_overrides_are_merged_and_validated():
    base = load_config(env={"OPENAI_API_KEY": "sk-x"})
    merged = merge_config(base, {"timezone": "Europe/Berlin", "core": {"top_k": 9}}, source="character.yaml")
    assert merged.timezone == "Europe/Berlin" and merged.core.top_k == 9
    assert merged.llm.api_key.get_secret_value() == "sk-x"
    assert base.core.top_k == 5  # the shared preset is not mutated
    with pytest.raises(ConfigError, match="core.topk"):
        merge_config(base, {"core": {"topk": 1}}, source="character.yaml")


def test_shipped_config_is_the_generated_one():
    """config.yaml is `kioku config` output: regenerate it when a default or its docstring changes."""
    from engine.config import render_default_config

    assert (ROOT / "config.yaml").read_text(encoding="utf-8") == render_default_config()
