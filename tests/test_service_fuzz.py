"""A bounded fuzz run of the HTTP API with schemathesis against a real uvicorn on 127.0.0.1 (issue 12):
every operation, valid and invalid data, character and user ids drawn from Chinese (and other
scripts) as well as ASCII, then a stateful run that chains operations (add a fact, change it, delete
it, read the diary...). Counts every request by status; asserts 0 responses >= 500 and 0 hangs.

The size is bounded by KIOKU_FUZZ_EXAMPLES (examples per operation and mode, default 15); the counts
are printed (`pytest -s -n0`: xdist workers swallow -s)."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from engine.service.app import create_app
from engine.testing.serve import demo_service, service_config

TOKEN = "fuzz-token"
EXAMPLES = int(os.environ.get("KIOKU_FUZZ_EXAMPLES", "15"))
TIMEOUT_S = 30.0
"""A request that takes longer than this counts as a hang."""
CHARACTERS = ["xiaoyue", "小月"]
KNOWN_USERS = ["林舟", "阿丽", "ü", "小月-fan.2", "ユーザー", "alice"]
CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
# Ids from the scripts users type: CJK, kana, hangul, Latin with diacritics, plus ASCII.
SCRIPTS = st.characters(codec="utf-8", categories=["Lo", "Ll", "Lu", "Nd"])
USER_IDS = st.one_of(st.sampled_from(KNOWN_USERS), st.text(CJK, min_size=1, max_size=8),
                     st.text(SCRIPTS, min_size=1, max_size=12))
CHARACTER_IDS = st.one_of(st.sampled_from(CHARACTERS), st.text(CJK, min_size=1, max_size=4), st.text(SCRIPTS, min_size=1))


@dataclass
class Tally:
    statuses: Counter = field(default_factory=Counter)
    by_operation: Counter = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)

    def call(self, case, url: str, headers: dict[str, str]):
        """The response, counted; None for a hang."""
        label = f"{case.method} {case.path}"
        try:
            response = case.call(base_url=url, headers=headers, timeout=TIMEOUT_S)
        except requests.Timeout:
            self.hangs.append(f"{label}: no answer within {TIMEOUT_S:g}s\n{case.as_curl_command()}")
            self.statuses["hang"] += 1
            return None
        self.statuses[response.status_code] += 1
        self.by_operation[f"{label} {response.status_code}"] += 1
        if response.status_code >= 500:
            self.server_errors.append(f"{label} -> {response.status_code} {response.text[:300]}\n{case.as_curl_command()}")
        return response

    def report(self, title: str) -> str:
        total = sum(self.statuses.values())
        by_class = Counter(f"{s // 100}xx" if isinstance(s, int) else s for s in self.statuses.elements())
        return (f"{title}: {total} requests; {dict(sorted(by_class.items()))}; 5xx={len(self.server_errors)} "
                f"hangs={len(self.hangs)}; statuses={dict(sorted(self.statuses.items(), key=str))}")


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    data_dir = tmp_path_factory.mktemp("fuzz")
    with demo_service(data_dir, characters=CHARACTERS, token=TOKEN, embedder=embedder) as (server, upstream):
        yield server.url, schemathesis.openapi.from_url(f"{server.url}/openapi.json")


def auth_headers(user: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if user is not None:
        headers["X-Kioku-User"] = quote(user)
    return headers


def labels() -> list[str]:
    app = create_app(config=service_config("/nonexistent", "http://127.0.0.1:9/v1", token=TOKEN))
    return sorted(f"{method.upper()} {path}" for path, item in app.openapi()["paths"].items() for method in item)


STATELESS = Tally()


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("label", labels())
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_fuzz_operation(served, label, mode):
    url, schema = served
    operation = schema.find_operation_by_label(label)
    params = [p for p in ("character", "user") if "{" + p + "}" in label]

    @st.composite
    def cases(draw):
        fixed = {}
        if mode is GenerationMode.NEGATIVE:
            params.clear()  # let schemathesis make the path itself invalid
        if "character" in params:
            fixed["character"] = draw(st.sampled_from(CHARACTERS) if draw(st.booleans()) else CHARACTER_IDS)
        if "user" in params:
            fixed["user"] = draw(USER_IDS)
        return draw(operation.as_strategy(mode, path_parameters=fixed or None)), draw(st.none() | USER_IDS)

    @given(drawn=cases())
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(drawn):
        case, header_user = drawn
        STATELESS.call(case, url, auth_headers(header_user if "chat" in label else None))

    try:
        run()
    except Unsatisfiable:
        pytest.skip(f"{label}: nothing to generate in {mode.value} mode")
    assert not STATELESS.server_errors, "\n\n".join(STATELESS.server_errors)
    assert not STATELESS.hangs, "\n\n".join(STATELESS.hangs)


def _pick(options: list[str], generated: object) -> str:
    """The same generated value always maps to the same id, so linked steps keep talking about one user
    (a value already mapped, as a link passes it on, stays)."""
    if generated in options:
        return str(generated)
    digest = hashlib.blake2b(str(generated).encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return options[int.from_bytes(digest, "little") % len(options)]


@pytest.mark.timeout(1800)
def test_fuzz_stateful(served):
    """Chains of calls that follow the links schemathesis infers (POST a fact, then PUT/DELETE it by its
    id...), with the generated character and user ids mapped onto real characters and Chinese users."""
    url, schema = served
    tally = Tally()

    class Machine(schema.as_state_machine()):
        def before_call(self, case):
            if case.path_parameters:
                if "character" in case.path_parameters:
                    case.path_parameters["character"] = _pick(CHARACTERS, case.path_parameters["character"])
                if "user" in case.path_parameters:
                    case.path_parameters["user"] = _pick(KNOWN_USERS, case.path_parameters["user"])

        def call(self, case, **kwargs):
            response = tally.call(case, url, auth_headers(_pick(KNOWN_USERS, case.id)))
            assert response is not None, f"{case.method} {case.formatted_path}: no answer within {TIMEOUT_S:g}s"
            return response

        def validate_response(self, response, case, **kwargs):
            assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.status_code}"

    Machine.run(settings=settings(max_examples=EXAMPLES * 4, stateful_step_count=8, deadline=None,
                                  suppress_health_check=list(HealthCheck), database=None))
    print("\n" + tally.report("stateful"))
    print("  " + "\n  ".join(f"{k}: {n}" for k, n in sorted(tally.by_operation.items())))
    assert not tally.server_errors, "\n\n".join(tally.server_errors)
    assert not tally.hangs, "\n\n".join(tally.hangs)


def test_fuzz_report():
    """Runs last in this file: the stateless counts over every operation."""
    print("\n" + STATELESS.report("stateless"))
    assert sum(STATELESS.statuses.values()) > 0
