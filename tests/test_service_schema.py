"""schemathesis against the served OpenAPI schema, in-process (ASGI): no request gets a 5xx."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from engine.config import load_config
from engine.testing.fake_openai import FakeOpenAIServer
from engine.service.app import create_app

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "schema-token"


@pytest.fixture(scope="module")
def served_app(tmp_path_factory, embedder):
    data_dir = tmp_path_factory.mktemp("schema")
    shutil.copytree(ROOT / "data/agents/xiaoyue", data_dir / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    with FakeOpenAIServer() as upstream:
        config = load_config(
            overrides={
                "data_dir": str(data_dir),
                "llm": {"backend": "openai", "base_url": upstream.base_url, "model": "fake", "max_retries": 0, "timeout_s": 5},
                "memory_llm": {"backend": "none"},
            },
            env={"KIOKU_API_TOKEN": TOKEN},
        )
        app = create_app(config=config, embedder=embedder)
        yield app
        app.state.registry.close()


def without_lifespan(app):
    """The ASGI transport runs the app's lifespan around every call; the module fixture owns it instead."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await app(scope, receive, send)

    return wrapped


@pytest.fixture(scope="module")
def api_schema(served_app):
    return schemathesis.openapi.from_asgi("/openapi.json", without_lifespan(served_app))


def operations():
    # The operation labels, for readable test ids; the schema itself needs the app (a fixture).
    app = create_app(config=load_config(overrides={"data_dir": "/nonexistent"}, env={}))
    return sorted(f"{method.upper()} {path}" for path, item in app.openapi()["paths"].items() for method in item)


@pytest.mark.parametrize("label", operations())
@pytest.mark.parametrize(
    ("mode", "known"),
    [(GenerationMode.POSITIVE, False), (GenerationMode.POSITIVE, True), (GenerationMode.NEGATIVE, False)],
    ids=["valid", "valid-xiaoyue", "invalid"],
)
def test_no_server_errors(api_schema, label, mode, known):
    """`valid-xiaoyue` pins the character to the demo one, so the stores answer, not a 404."""
    if known and "{character}" not in label:
        pytest.skip("no character in the path")
    operation = api_schema.find_operation_by_label(label)
    strategy = operation.as_strategy(mode, path_parameters={"character": "xiaoyue"} if known else None)

    @given(case=strategy)
    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case):
        response = case.call(headers={"Authorization": f"Bearer {TOKEN}"})
        assert response.status_code < 500, (
            f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:500]}\n{case.as_curl_command()}"
        )

    try:
        run()
    except Unsatisfiable:
        pytest.skip(f"{label}: nothing to generate in {mode.value} mode (no parameters to make invalid)")
