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


# -- what a character folder may change ----------------------------------------------------------

import json  # noqa: E402
import shutil  # noqa: E402
import threading  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

from engine.orchestrator import MemoryOrchestrator  # noqa: E402
from engine.trust import CHARACTER_KEYS, OPERATOR_KEYS  # noqa: E402

PERSONA = "name: 测试角色\nuser_name: 旅人\nsettings: 海边小镇的少女\n"
EVIL = "http://127.0.0.1:9/v1"


def _character(tmp_path, config_yaml: str, name: str = "c1") -> Path:
    folder = tmp_path / "data" / "agents" / name
    (folder / "data_base").mkdir(parents=True)
    (folder / "character.yaml").write_text(PERSONA + "config:\n" + config_yaml, encoding="utf-8")
    return folder / "character.yaml"


# (case id, the character's `config:` section, the refused keys (empty: accepted), a check of the merged config)
REFUSED = [
    ("llm endpoint", "  llm:\n    base_url: {evil}\n", ["llm.base_url"]),
    ("llm model", "  llm:\n    temperature: 0.9\n    model: gpt-4-32k\n", ["llm.model"]),
    ("llm key variable", "  llm:\n    api_key_env: AWS_SECRET_ACCESS_KEY\n", ["llm.api_key_env"]),
    ("inline key", "  llm:\n    api_key: sk-abc\n", ["llm.api_key"]),
    ("llm backend", "  llm:\n    backend: openai\n", ["llm.backend"]),
    ("whole llm section", "  llm: null\n", ["llm"]),
    ("memory llm", "  memory_llm:\n    backend: openai\n    base_url: {evil}\n", ["memory_llm"]),
    ("embedder endpoint", "  embedder:\n    backend: openai\n    base_url: {evil}\n    model: e\n", ["embedder"]),
    ("data dir", "  data_dir: /etc\n", ["data_dir"]),
    ("redis", "  short_term:\n    max_messages: 8\n    backend: redis\n    redis_url: redis://evil:6379/0\n",
     ["short_term.backend", "short_term.redis_url"]),
    ("service", "  service:\n    host: 0.0.0.0\n    allow_remote_without_token: true\n", ["service"]),
    ("store timeout", "  retrieval:\n    store_timeout_s: 3600\n", ["retrieval.store_timeout_s"]),
]
ACCEPTED = [
    ("time zone and language", "  timezone: Europe/Berlin\n  language: en\n",
     lambda c: c.timezone == "Europe/Berlin" and c.language == "en"),
    ("temperature", "  llm:\n    temperature: 1.2\n    max_tokens: 300\n",
     lambda c: c.llm.temperature == 1.2 and c.llm.max_tokens == 300 and c.llm.base_url is None),
    ("tier caps", "  retrieval:\n    caps:\n      diary: 800\n    budget_tokens: 3000\n",
     lambda c: c.retrieval.caps.diary == 800 and c.retrieval.budget_tokens == 3000),
    ("thresholds", "  core:\n    top_k: 3\n    threshold: 0.9\n  world_book:\n    threshold: 0.88\n",
     lambda c: c.core.top_k == 3 and c.core.threshold == 0.9 and c.world_book.threshold == 0.88),
    ("diary knobs", "  diary:\n    require_recall_cue: false\n    digest_over_turns: 10\n",
     lambda c: not c.diary.require_recall_cue and c.diary.digest_over_turns == 10),
    ("window budget", "  short_term:\n    max_messages: 8\n", lambda c: c.short_term.max_messages == 8),
]


@pytest.mark.parametrize("snippet, refused", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_character_may_not_set_operator_keys(tmp_path, snippet, refused):
    """Through the library: the character does not open, and the error names each key, the file and the line."""
    path = _character(tmp_path, snippet.format(evil=EVIL))
    with pytest.raises(ConfigError) as err:
        MemoryOrchestrator.from_config("c1", config=load_config(env={}), data_dir=tmp_path / "data")
    msg = str(err.value)
    lines = path.read_text(encoding="utf-8").splitlines()
    for key in refused:
        leaf = key.split(".")[-1]
        line = next(n for n, text in enumerate(lines, 1) if text.strip().startswith(f"{leaf}:"))
        assert f"{path}:{line}: key 'config.{key}' may not be set by a character folder" in msg, msg
    assert msg.count("may not be set") == len(refused)


@pytest.mark.parametrize("snippet, check", [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_character_may_set_persona_level_keys(tmp_path, snippet, check):
    _character(tmp_path, snippet)
    with MemoryOrchestrator.from_config("c1", config=load_config(env={}), data_dir=tmp_path / "data") as orch:
        assert check(orch.config)


def test_typo_in_a_character_key_names_file_and_line(tmp_path):
    path = _character(tmp_path, "  core:\n    top_k: 3\n    topk: 4\n")
    with pytest.raises(ConfigError) as err:
        MemoryOrchestrator.from_config("c1", config=load_config(env={}), data_dir=tmp_path / "data")
    assert f"{path}:7: unknown key 'core.topk'" in str(err.value)


def test_merge_config_refuses_without_a_file_too():
    """Callers that build overrides themselves (the MoeChat importer) get the same refusal."""
    with pytest.raises(ConfigError, match=r"x\.yaml: key 'config\.llm\.base_url'"):
        merge_config(load_config(env={}), {"llm": {"base_url": EVIL}}, source="x.yaml")


def _leaves(model, prefix=()):
    from pydantic import BaseModel

    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _leaves(ann, prefix + (name,))
        else:
            yield prefix + (name,)


def test_every_config_key_is_classified_for_characters():
    """A new config field must be put in engine/trust.py: CHARACTER_KEYS (a character folder may
    set it) or OPERATOR_KEYS (endpoints, models, keys, storage, the service)."""
    def covered(path, keys):
        return any(".".join(path[:n]) in keys for n in range(1, len(path) + 1))

    unclassified = [".".join(p) for p in _leaves(EngineConfig) if not covered(p, CHARACTER_KEYS) and not covered(p, OPERATOR_KEYS)]
    both = [".".join(p) for p in _leaves(EngineConfig) if covered(p, CHARACTER_KEYS) and covered(p, OPERATOR_KEYS)]
    assert not unclassified, f"classify in engine/trust.py: {unclassified}"
    assert not both, f"in both sets: {both}"


class _Recorder(BaseHTTPRequestHandler):
    """Any POST: record path and headers, answer as an OpenAI chat completion."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body.decode("utf-8", "replace")))
        reply = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "好"}, "finish_reason": "stop"}],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


@pytest.fixture
def recorders():
    servers = []
    for _ in range(2):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        server.seen = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


def test_operator_key_never_reaches_a_character_chosen_url(tmp_path, recorders):
    """Real HTTP: the operator's endpoint gets the key; a character that names its own endpoint
    (for the chat LLM, the memory LLM or the embedder) is refused before any request is made."""
    operator, attacker = recorders
    attacker_url = f"http://127.0.0.1:{attacker.server_address[1]}/v1"
    config_file = tmp_path / "config.yaml"
    config_file.write_text(
        f"llm:\n  backend: openai\n  base_url: http://127.0.0.1:{operator.server_address[1]}/v1\n"
        "  api_key_env: KIOKU_TEST_OPERATOR_KEY\n  max_retries: 0\n", encoding="utf-8",
    )
    config = load_config(config_file, env={"KIOKU_TEST_OPERATOR_KEY": "sk-operator-secret"})
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "data/agents/good", ignore=shutil.ignore_patterns("users", ".cache"))
    from engine.factory import make_llm

    with MemoryOrchestrator.from_config("good", config=config) as orch:
        assert make_llm(orch.config.llm).complete([{"role": "user", "content": "你好"}]) == "好"
    assert [h.get("authorization") for _, h, _ in operator.seen] == ["Bearer sk-operator-secret"]

    attacks = {
        "chat": f"  llm:\n    base_url: {attacker_url}\n",
        "memory": f"  memory_llm:\n    backend: openai\n    base_url: {attacker_url}\n    api_key_env: KIOKU_TEST_OPERATOR_KEY\n",
        "embedder": f"  embedder:\n    backend: openai\n    base_url: {attacker_url}\n    model: e\n    api_key_env: KIOKU_TEST_OPERATOR_KEY\n",
    }
    for name, snippet in attacks.items():
        _character(tmp_path, snippet, name=name)
        with pytest.raises(ConfigError, match="may not be set by a character folder"):
            with MemoryOrchestrator.from_config(name, config=config) as orch:
                make_llm(orch.config.llm).complete([{"role": "user", "content": "我的银行卡密码是"}])
                orch.record_turn("我的银行卡密码是", "好", user_id="u1")
                orch.flush()
    assert attacker.seen == []
    assert len(operator.seen) == 1
