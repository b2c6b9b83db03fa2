"""Per-chat windows and regenerate, request side (issue 13 item 3): `engine.conversation` as tables
(what the client sent x what is stored -> new, regenerate, edit, continue, branch), and the service's
adapter passing chat_id / history / replaces to an orchestrator only when its signature takes them."""

from __future__ import annotations

import asyncio

import pytest

from engine.conversation import ClientTurn, StoredTurn, plan_turn, read_client
from engine.orchestrator import MemoryOrchestrator
from engine.service.port import OrchestratorPort
from engine.service.testing import copy_demo, service_config

T1 = StoredTurn("t1", "晚上好", "晚上好呀，今天下雨了。")
T2 = StoredTurn("t2", "昨天我们聊了什么？", "昨天你说你讨厌香菜。")


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


class TestReadClient:
    @pytest.mark.parametrize(
        ("messages", "expected"),
        [([("system", "persona"), ("user", "hi")], ClientTurn("hi", ())),
         ([("user", "a"), ("assistant", "b"), ("user", "c"), ("system", "[nudge]")], ClientTurn("c", (u("a"), a("b")))),
         ([("user", "a"), ("assistant", "b"), ("tool", "x"), ("user", "c")], ClientTurn("c", (u("a"), a("b")))),
         ([("user", "a"), ("assistant", "par"), ("system", "[Continue]")], ClientTurn("a", (), "par")),
         ([("assistant", "greeting"), ("user", "hi"), ("assistant", "")], ClientTurn("hi", (a("greeting"),))),
         ([("system", "only")], None)],
        ids=["system-dropped", "trailing-instruction", "tool-dropped", "continue", "empty-assistant", "no-user"],
    )
    def test_table(self, messages, expected):
        assert read_client(messages) == expected


H1 = (u(T1.user), a(T1.assistant))
H2 = (*H1, u(T2.user), a(T2.assistant))


@pytest.mark.parametrize(
    ("client", "stored", "chat_known", "expected"),
    [(ClientTurn("新消息", H2), [T1, T2], True, ("new", H2, None)),
     (ClientTurn(T2.user, H1), [T1, T2], True, ("regenerate", H1, "t2")),
     (ClientTurn("昨天我们聊了啥？", H1), [T1, T2], True, ("edit", H1, "t2")),
     (ClientTurn("新消息", (u("别的"), a("别的回答"))), [T1, T2], True, ("branch", (u("别的"), a("别的回答")), None)),
     (ClientTurn(T2.user, (u("更早"), a("更早的回答"))), [T1, T2], True, ("regenerate", (u("更早"), a("更早的回答")), "t2")),
     (ClientTurn(T2.user, H2), [T1, T2], True, ("new", H2, None)),
     (ClientTurn("新消息", ()), [T1, T2], True, ("new", None, None)),
     (ClientTurn(T1.user, ()), [T1], True, ("regenerate", (), "t1")),
     (ClientTurn(T1.user, ()), [T1], False, ("new", None, None)),
     (ClientTurn("hi", H1), [], True, ("new", H1, None)),
     (ClientTurn(T2.user, H1, "昨天你说"), [T1, T2], True, ("continue", H1, "t2")),
     (ClientTurn("别的", H1, "部分"), [T1, T2], True, ("continue", H1, None)),
     (ClientTurn("新消息", (u(T2.user), a("昨天你说你讨厌香"))), [T1, T2], True,
      ("new", (u(T2.user), a("昨天你说你讨厌香")), None)),
     (ClientTurn("新消息", (u(T2.user), a("<think>想一想</think>昨天你说你讨厌香菜。"))), [T1, T2], True,
      ("new", (u(T2.user), a("<think>想一想</think>昨天你说你讨厌香菜。")), None)),
     (ClientTurn(T2.user, (u(T2.user), a(T2.assistant))), [T1, T2], True,
      ("new", (u(T2.user), a(T2.assistant)), None))],
    ids=["continues-stored", "regenerate", "edit-last", "branch", "regenerate-other-history", "same-message-again",
         "stateless-client", "regenerate-first-message", "first-message-again-no-chat-id", "unknown-chat",
         "continue-stored-reply", "continue-unknown", "reply-trimmed-by-frontend", "reasoning-stripped",
         "says-the-same-twice"],
)
def test_plan(client, stored, chat_known, expected):
    plan = plan_turn(client, stored, chat_known=chat_known)
    assert (plan.kind, plan.history, plan.replaces) == expected
    assert plan.message == client.message and plan.prefix == client.prefix


class ContractOrchestrator(MemoryOrchestrator):
    """The real orchestrator with contract 4's signatures (journal's part), recording what it was given
    and delegating to today's methods: it checks the adapter's wiring, not chat windows themselves."""

    calls: list

    def build_prompt(self, message, *, user_id, chat_id=None, history=None, now=None):
        self.calls.append(("build_prompt", chat_id, history))
        return super().build_prompt(message, user_id=user_id, now=now)

    def record_turn(self, user_message, assistant_message, *, user_id, at=None, turn_id=None, chat_id=None,
                    replaces=None):
        self.calls.append(("record_turn", chat_id, replaces))
        return super().record_turn(user_message, assistant_message, user_id=user_id, at=at, turn_id=turn_id)

    def recent_turns(self, user_id, *, chat_id=None, n=2):
        self.calls.append(("recent_turns", chat_id, n))
        return [("t1", "晚上好", "晚上好呀")]


@pytest.mark.parametrize("cls", [MemoryOrchestrator, ContractOrchestrator], ids=["today", "contract-4"])
def test_adapter_passes_what_the_orchestrator_takes(tmp_path, embedder, cls):
    config = service_config(copy_demo(tmp_path), "http://127.0.0.1:9/v1")
    with cls.from_config("xiaoyue", config=config, embedder=embedder) as orch:
        orch.calls = []
        port = OrchestratorPort(orch)

        async def run():
            stored = await port.recent_turns(user="u1", chat="c1")
            result = await port.build_prompt("你好", user="u1", chat="c1", history=[u("早"), a("早呀")])
            await port.record("你好", "你好呀", user="u1", chat="c1", turn_id="20261123T000000000000-abcdef",
                              replaces="t1")
            return stored, result

        stored, result = asyncio.run(run())
        assert result.messages[-1] == {"role": "user", "content": "你好"}
        # With contract 4 the turn is in chat c1's window; an orchestrator without it keeps one window.
        chat = "c1" if not OrchestratorPort.missing_in(MemoryOrchestrator) and cls is MemoryOrchestrator else None
        state = orch.short_term.state("u1", chat_id=chat) if chat else orch.short_term.state("u1")
        assert "你好" in [m.content for m in state.messages]
    if cls is ContractOrchestrator:
        assert stored == [StoredTurn("t1", "晚上好", "晚上好呀")] and OrchestratorPort.missing_in(orch) == []
        assert orch.calls == [("recent_turns", "c1", 2), ("build_prompt", "c1", [u("早"), a("早呀")]),
                              ("record_turn", "c1", "t1")]
    elif "record_turn(replaces=)" in OrchestratorPort.missing_in(orch):
        assert stored == []  # a regenerate could not be acted on: every request is planned as new
