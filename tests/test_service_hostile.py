"""Hostile HTTP input (issue 12 items 5 and 6), through uvicorn on 127.0.0.1: no 500 for bad dates or
lone surrogates, a keep-alive connection survives a 500, no absolute server path in any error body or
in the world-book route, and an app started by plain uvicorn on 0.0.0.0 without a token refuses
every request that did not arrive on loopback."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest

from engine.testing.fake_openai import FakeOpenAIServer
from engine.service.app import create_app
from engine.testing.serve import ServiceProcess, ServiceThread, copy_demo, service_config

TOKEN = "hostile-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def svc(tmp_path_factory, embedder):
    data_dir = copy_demo(tmp_path_factory.mktemp("hostile"))
    with FakeOpenAIServer() as upstream:
        app = create_app(config=service_config(data_dir, upstream.base_url, token=TOKEN), embedder=embedder)

        async def boom() -> None:
            # Fault injection: an unexpected exception whose message names a server path.
            raise RuntimeError(f"exploded reading {data_dir.resolve()}/agents/xiaoyue/secret.yaml and /etc/kioku/x")

        app.add_api_route("/boom", boom, methods=["GET"])
        with ServiceThread(app) as server:
            yield server, upstream, data_dir


def raw_exchange(port: int, requests: list[bytes]) -> list[tuple[int, dict[bytes, bytes], bytes]]:
    """Send `requests` one after another on ONE TCP connection; each response is read fully first."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock, sock.makefile("rb") as f:
        for request in requests:
            sock.sendall(request)
            status = f.readline()
            assert status, f"the server closed the connection before answering request {len(out) + 1}"
            headers = {}
            while (line := f.readline()) not in (b"\r\n", b""):
                key, _, value = line.partition(b":")
                headers[key.strip().lower()] = value.strip()
            out.append((int(status.split()[1]), headers, f.read(int(headers[b"content-length"]))))
    return out


def get(path: str) -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").encode()


def post_json(path: str, raw_body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(raw_body)}\r\n\r\n").encode() + raw_body


DIARY = "/v1/characters/xiaoyue/users/u1/diary"


class TestNo500:
    @pytest.mark.parametrize(
        "params",
        [{"start": "9999-12-31"}, {"start": "0001-01-01"}, {"start": "9999-12-30", "end": "9999-12-31T23:59:59"},
         {"start": "9999-12-31T00:00:00", "end": "9999-12-31T23:59:59"}, {"start": "0001-01-01T00:00:00+14:00"},
         {"start": "0001-01-01T00:00:00-12:00"}, {"start": "9999-12-31T23:59:59.999999+00:00"},
         {"start": "2026-02-30"}, {"start": "2026-11-20", "end": "+inf"}, {"start": "2026-11-20T25:00"}],
        ids=["start-9999-12-31", "start-0001-01-01", "end-9999-12-31T23:59:59", "both-last-day", "start-year1-plus14",
             "start-year1-minus12", "last-microsecond", "feb-30", "end-inf", "hour-25"],
    )
    def test_diary_dates_at_the_ends_of_the_calendar_are_400(self, svc, params):
        server, _, _ = svc
        r = httpx.get(f"{server.url}{DIARY}", params=params, headers=AUTH, timeout=30)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] in ("bad_range", "bad_time")

    def test_diary_dates_just_inside_the_range_work(self, svc):
        server, _, _ = svc
        for params in ({"start": "0001-01-03"}, {"start": "9999-12-28"}):
            r = httpx.get(f"{server.url}{DIARY}", params=params, headers=AUTH, timeout=30)
            assert r.status_code == 200, r.text
            assert r.json()["entries"] == []

    @pytest.mark.parametrize(
        ("path", "body"),
        [("/v1/chat/completions", '{"model": "xiaoyue", "messages": [{"role": "user", "content": "hi \\ud800"}]}'),
         ("/v1/chat/completions",
          '{"model": "xiaoyue", "messages": [{"role": "user", "content": [{"type": "text", "text": "\\udfff"}]}]}'),
         ("/v1/chat/completions", '{"model": "xiaoyue", "user": "\\ud800", "messages": [{"role": "user", "content": "x"}]}'),
         ("/v1/chat/completions", '{"model": "\\ud800", "messages": [{"role": "user", "content": "x"}]}'),
         ("/v1/chat/completions",
          '{"model": "xiaoyue", "messages": [{"role": "assistant", "content": "\\ud800"}, {"role": "user", "content": "x"}]}'),
         ("/v1/chat/completions", '{"model": "xiaoyue", "messages": [{"role": "user", "content": "x"}], "stop": ["\\ud83d"]}'),
         ("/v1/chat/completions", '{"model": "xiaoyue", "messages": [{"role": "user", "content": "x"}], "\\ud800": 1}'),
         ("/v1/characters/xiaoyue/users/u1/prompt", '{"message": "\\ud800"}'),
         ("/v1/characters/xiaoyue/users/u1/facts", '{"text": "a\\udc00b"}')],
        ids=["content", "content-part", "user", "model", "history", "stop", "extra-key", "prompt", "fact"],
    )
    def test_lone_surrogates_are_422(self, svc, path, body):
        server, upstream, data_dir = svc
        before = len(upstream.requests)
        [(status, _, payload)] = raw_exchange(server.port, [post_json(path, body.encode())])
        assert status == 422, payload
        assert "surrogate" in json.loads(payload)["error"]["message"]
        assert len(upstream.requests) == before
        assert not (data_dir / "agents/xiaoyue/users/u1/history.yaml").exists()


class TestErrorsKeepTheConnection:
    def test_a_500_leaves_the_keep_alive_connection_usable(self, svc):
        server, _, _ = svc
        replies = raw_exchange(server.port, [get("/boom"), get("/v1/models"), get("/boom"), get("/health")])
        assert [status for status, _, _ in replies] == [500, 200, 500, 200]
        assert all(b"close" not in h.get(b"connection", b"") for _, h, _ in replies)
        assert json.loads(replies[1][2])["data"][0]["id"] == "xiaoyue"

    def test_a_500_body_names_no_server_path_and_gives_a_log_reference(self, svc):
        server, _, data_dir = svc
        r = httpx.get(f"{server.url}/boom", headers=AUTH, timeout=30)
        assert r.status_code == 500
        error = r.json()["error"]
        assert error["code"] == "internal_error" and "ref " in error["message"]
        assert str(data_dir) not in r.text and "/etc/kioku" not in r.text and "secret.yaml" not in r.text


class TestNoServerPaths:
    def test_unknown_character_404_names_no_path(self, svc):
        server, _, data_dir = svc
        for path in ("/v1/characters/nobody/world-book", "/v1/characters/nobody/users/u/facts"):
            r = httpx.get(f"{server.url}{path}", headers=AUTH, timeout=30)
            assert r.status_code == 404
            assert "available: xiaoyue" in r.text and str(data_dir) not in r.text and str(Path.home()) not in r.text
        r = httpx.post(f"{server.url}/v1/chat/completions", headers=AUTH, timeout=30,
                       json={"model": "nobody", "messages": [{"role": "user", "content": "x"}]})
        assert r.status_code == 404 and str(data_dir) not in r.text

    def test_world_book_route_shows_paths_relative_to_the_data_folder(self, tmp_path, embedder):
        data_dir = copy_demo(tmp_path)
        (data_dir / "agents/xiaoyue/data_base/坏.yaml").write_text("key: [unclosed\n", encoding="utf-8")
        with FakeOpenAIServer() as upstream:
            app = create_app(config=service_config(data_dir, upstream.base_url, token=TOKEN), embedder=embedder)
            with ServiceThread(app) as server:
                r = httpx.get(f"{server.url}/v1/characters/xiaoyue/world-book", headers=AUTH, timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["folder"] == "agents/xiaoyue/data_base"
        assert [e["file"] for e in body["errors"]] == ["agents/xiaoyue/data_base/坏.yaml"]
        assert str(tmp_path) not in r.text

    def test_a_broken_data_file_500_names_the_file_relative_to_the_data_folder(self, svc):
        server, _, data_dir = svc
        user = data_dir / "agents/xiaoyue/users/broken"
        user.mkdir(parents=True)
        (user / "core_mem.yml").write_text("- [unclosed\n", encoding="utf-8")
        r = httpx.get(f"{server.url}/v1/characters/xiaoyue/users/broken/facts", headers=AUTH, timeout=60)
        assert r.status_code < 500 or "agents/xiaoyue/users/broken/core_mem.yml" in r.text, r.text
        assert str(data_dir) not in r.text


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (the one a LAN client would reach), if any."""
    candidates = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("203.0.113.1", 9))  # no packet is sent; this only picks the outgoing interface
            candidates.append(s.getsockname()[0])
        except OSError:
            pass
    try:
        candidates += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)]
    except OSError:
        pass
    return next((a for a in candidates if not a.startswith("127.") and a != "0.0.0.0"), None)


class TestBindWithoutToken:
    """`uvicorn engine.service.app:factory --factory --host 0.0.0.0` (the README's command) as a real process."""

    @pytest.fixture
    def config_file(self, tmp_path):
        copy_demo(tmp_path / "data")
        path = tmp_path / "config.yaml"
        path.write_text("llm:\n  backend: none\n", encoding="utf-8")
        return path

    @pytest.mark.timeout(180)
    @pytest.mark.parametrize("token", [None, "bind-token"], ids=["no-token", "token"])
    def test_factory_on_all_interfaces(self, config_file, tmp_path, token):
        lan = non_loopback_address()
        if lan is None:
            pytest.skip("this machine has no non-loopback address to connect to")
        env = {"KIOKU_CONFIG": str(config_file), "KIOKU_API_TOKEN": token}
        with ServiceProcess(workers=1, host="0.0.0.0", env=env, log_file=tmp_path / "uvicorn.log") as proc:
            auth = {"Authorization": f"Bearer {token}"} if token else {}
            local = httpx.get(f"http://127.0.0.1:{proc.port}/v1/models", headers=auth, timeout=30)
            assert local.status_code == 200 and local.json()["data"][0]["id"] == "xiaoyue"
            remote = [httpx.get(f"http://{lan}:{proc.port}{path}", headers=auth, timeout=30)
                      for path in ("/v1/models", "/health", "/openapi.json")]
            if token is None:
                assert [r.status_code for r in remote] == [403, 403, 403]
                assert "answers only on loopback" in remote[0].json()["error"]["message"]
            else:
                assert [r.status_code for r in remote] == [200, 200, 200]
                assert httpx.get(f"http://{lan}:{proc.port}/v1/models", timeout=30).status_code == 401
        if token is None:
            assert "refusing requests that reach" in (tmp_path / "uvicorn.log").read_text(encoding="utf-8")
