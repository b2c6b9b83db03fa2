"""Per-chat windows and regenerate, request side (issue 13 item 3): `engine.conversation` as tables
(what the client sent x what is stored -> new, regenerate, edit, continue, branch), and the service's
the evidence a replacement needs."""

from __future__ import annotations


import pytest

from engine.conversation import ClientTurn, StoredTurn, choose_chat, plan_turn, read_client

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
T0 = StoredTurn("t0", "更早", "更早的回答")
H0 = (u(T0.user), a(T0.assistant))
GREETING = (a("欢迎光临～"),)


@pytest.mark.parametrize(
    ("client", "stored", "chat_known", "expected"),
    [(ClientTurn("新消息", H2), [T1, T2], True, ("new", H2, None, set())),
     (ClientTurn(T2.user, H1), [T1, T2], True, ("regenerate", H1, "t2", {"t2"})),
     (ClientTurn("昨天我们聊了啥？", H1), [T1, T2], True, ("edit", H1, "t2", {"t2"})),
     (ClientTurn("新消息", (u("别的"), a("别的回答"))), [T1, T2], True,
      ("branch", (u("别的"), a("别的回答")), None, set())),
     # The last message alone is no evidence: another chat may say it too (nothing deleted, the
     # stored reply still kept out of this prompt in case it is the one swiped away).
     (ClientTurn(T2.user, (u("更早"), a("更早的回答"))), [T1, T2], True,
      ("branch", (u("更早"), a("更早的回答")), None, {"t2"})),
     (ClientTurn(T2.user, (*GREETING,)), [T0, T1, T2], True, ("branch", GREETING, None, {"t2"})),
     (ClientTurn(T1.user, GREETING), [T1], True, ("branch", GREETING, None, {"t1"})),
     (ClientTurn(T2.user, (*GREETING, *H0, *H1)), [T0, T1, T2], True, ("regenerate", (*GREETING, *H0, *H1), "t2", {"t2"})),
     (ClientTurn(T2.user, H1), [T0, T1, T2], True, ("regenerate", H1, "t2", {"t2"})),
     (ClientTurn(T2.user, (*H0, *H1)), [T1, T2], True, ("regenerate", (*H0, *H1), "t2", {"t2"})),
     (ClientTurn(T2.user, (*H0, u("插进来的"), a("另一个回答"), *H1)), [T0, T1, T2], True,
      ("branch", (*H0, u("插进来的"), a("另一个回答"), *H1), None, {"t2"})),
     (ClientTurn(T2.user, (u("别的"), a("别的回答"), *H1)), [T0, T1, T2], True,
      ("branch", (u("别的"), a("别的回答"), *H1), None, {"t2"})),
     (ClientTurn(T2.user, H2), [T1, T2], True, ("new", H2, None, set())),
     (ClientTurn("新消息", ()), [T1, T2], True, ("new", None, None, set())),
     (ClientTurn(T1.user, ()), [T1], True, ("regenerate", (), "t1", {"t1"})),
     (ClientTurn(T1.user, ()), [T1], False, ("new", None, None, set())),
     (ClientTurn("hi", H1), [], True, ("new", H1, None, set())),
     (ClientTurn(T2.user, H1, "昨天你说"), [T1, T2], True, ("continue", H1, "t2", {"t2"})),
     (ClientTurn(T2.user, GREETING, "昨天你说"), [T1, T2], True, ("continue", GREETING, None, {"t2"})),
     (ClientTurn("别的", H1, "部分"), [T1, T2], True, ("continue", H1, None, set())),
     (ClientTurn("新消息", (u(T2.user), a("昨天你说你讨厌香"))), [T1, T2], True,
      ("new", (u(T2.user), a("昨天你说你讨厌香")), None, set())),
     (ClientTurn("新消息", (u(T2.user), a("<think>想一想</think>昨天你说你讨厌香菜。"))), [T1, T2], True,
      ("new", (u(T2.user), a("<think>想一想</think>昨天你说你讨厌香菜。")), None, set())),
     (ClientTurn("新消息", (u(T2.user), a("昨天你说你 讨厌香菜。"))), [T1, T2], True,
      ("new", (u(T2.user), a("昨天你说你 讨厌香菜。")), None, set())),
     (ClientTurn(T2.user, (u(T2.user), a(T2.assistant))), [T1, T2], True,
      ("new", (u(T2.user), a(T2.assistant)), None, set()))],
    ids=["continues-stored", "regenerate", "edit-last", "branch", "same-message-other-history",
         "same-message-new-chat", "first-turn-swipe-or-new-chat", "regenerate-whole-history",
         "regenerate-client-cut-its-context", "regenerate-client-has-more-than-the-window",
         "history-differs-in-the-middle",
         "same-message-history-differs-earlier", "same-message-again", "stateless-client",
         "regenerate-first-message", "first-message-again-no-chat-id", "unknown-chat", "continue-stored-reply",
         "continue-unconfirmed", "continue-unknown", "reply-trimmed-by-frontend", "reasoning-stripped",
         "respaced-by-frontend", "says-the-same-twice"],
)
def test_plan(client, stored, chat_known, expected):
    plan = plan_turn(client, stored, chat_known=chat_known)
    assert (plan.kind, plan.history, plan.replaces, set(plan.exclude)) == expected
    assert plan.message == client.message and plan.prefix == client.prefix


class TestChooseChat:
    """One chat id, many conversations (SillyTavern sends one chat id per connection): each gets
    its own window, `chat`, `chat~1`, ..., found again by what the client sends."""

    T3 = StoredTurn("t3", "你好呀", "你好，欢迎来到书茶馆。")

    def choose(self, client, windows):
        return choose_chat(client, "c", lambda chat: windows.get(chat, []))

    @pytest.mark.parametrize(
        ("client", "windows", "expected"),
        [(ClientTurn("新消息", H2), {"c": [T1, T2]}, ("c", 2, set())),
         (ClientTurn(T2.user, H1), {"c": [T1, T2]}, ("c", 1, set())),
         (ClientTurn("新消息", ()), {"c": [T1, T2]}, ("c", 0, set())),
         (ClientTurn("你好呀", GREETING), {}, ("c", 0, set())),
         (ClientTurn("你好呀", GREETING), {"c": [T1, T2]}, ("c~1", 0, set())),
         (ClientTurn("你好呀", GREETING), {"c": [T1, T2], "c~1": [T3]}, ("c~2", 0, {"t3"})),
         (ClientTurn("新消息", (*GREETING, u(T3.user), a(T3.assistant))), {"c": [T1, T2], "c~1": [T3]},
          ("c~1", 1, set())),
         (ClientTurn("新消息", (u("别的"), a("别的回答"))), {"c": [T1, T2], "c~1": [T3]}, ("c~2", 0, set())),
         (ClientTurn("新消息", H2), {"c": [T3], "c~1": [T1, T2]}, ("c~1", 2, set()))],
        ids=["continues-the-chat", "regenerates-in-the-chat", "no-history-uses-the-named-window",
             "first-chat-takes-the-named-window", "a-new-chat-gets-a-window", "second-new-chat-same-start",
             "found-again-by-its-last-exchange", "unknown-conversation-new-window", "best-aligned-window"],
    )
    def test_table(self, client, windows, expected):
        choice = self.choose(client, windows)
        assert (choice.chat_id, choice.matched, set(choice.exclude)) == expected
        assert choice.stored == tuple(windows.get(choice.chat_id, []))  # what plan_turn compares: read once
