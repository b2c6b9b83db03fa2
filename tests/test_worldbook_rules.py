"""The per-entry rules imported lorebooks carry (engine/stores/worldbook/rules.py), through the
store: probability, inclusion groups, recursion flags, scan depth, sticky / cooldown / delay."""

from __future__ import annotations

import pytest

from test_worldbook_match import make_store
from worldbook_kit import retrieve


def _chat(*pairs: tuple[str, str]) -> tuple:
    out = []
    for user, assistant in pairs:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return tuple(out)


def _uids(hits) -> list[str]:
    return [h.meta["uid"] for h in hits]


def test_probability_uses_an_entry_as_often_as_it_says_and_the_same_request_draws_the_same(tmp_path):
    store = make_store(tmp_path, {"w.yaml": "- keys: 雨\n  content: 下雨天\n  probability: 30\n"})
    used = [bool(retrieve(store, f"今天又下雨了 {n}")) for n in range(400)]
    assert 0.22 < sum(used) / len(used) < 0.38
    assert [bool(retrieve(store, f"今天又下雨了 {n}")) for n in range(40)] == used[:40]
    never = make_store(tmp_path / "b", {"w.yaml": "- keys: 雨\n  content: 下雨天\n  probability: 0\n"})
    assert not any(retrieve(never, f"雨 {n}") for n in range(50))


def test_an_inclusion_group_uses_one_entry_drawn_by_weight(tmp_path):
    text = "".join(f"- keys: weather\n  content: sky {c}\n  group: sky\n  group_weight: {w}\n" for c, w in
                   (("grey", 10), ("blue", 30), ("red", 60)))
    store = make_store(tmp_path, {"w.yaml": text})
    picks = [retrieve(store, f"how is the weather {n}") for n in range(600)]
    assert all(len(p) == 1 for p in picks)
    share = {c: sum(p[0].text == f"sky {c}" for p in picks) / 600 for c in ("grey", "blue", "red")}
    assert 0.05 < share["grey"] < 0.16 and 0.23 < share["blue"] < 0.38 and 0.52 < share["red"] < 0.68


def test_group_override_wins_by_order_and_several_groups_are_each_decided(tmp_path):
    text = ("- keys: weather\n  content: A\n  group: sky\n  order: 5\n  group_override: true\n"
            "- keys: weather\n  content: B\n  group: sky\n  order: 9\n  group_override: true\n"
            "- keys: weather\n  content: C\n  group: sky, mood\n"
            "- keys: weather\n  content: D\n  group: [mood]\n  group_override: true\n")
    store = make_store(tmp_path, {"w.yaml": text})
    for n in range(20):
        assert sorted(h.text for h in retrieve(store, f"weather {n}")) == ["B", "D"]


@pytest.mark.parametrize("flag, message, expected", [
    # A fires B through its content; each flag cuts one side of that.
    ("", "dragon", ["w.yaml#1", "w.yaml#2"]),
    ("prevent_recursion", "dragon", ["w.yaml#1"]),       # on A: its content fires nothing
    ("exclude_recursion", "dragon", ["w.yaml#1"]),       # on B: not fired by content
    ("delay_until_recursion", "egg", []),                # on B: its own key in the message is not enough
    ("delay_until_recursion", "dragon", ["w.yaml#1", "w.yaml#2"]),
])
def test_recursion_flags(tmp_path, flag, message, expected):
    a_flag = "  prevent_recursion: true\n" if flag == "prevent_recursion" else ""
    b_flag = f"  {flag}: true\n" if flag in ("exclude_recursion", "delay_until_recursion") else ""
    text = f"- keys: dragon\n  content: the dragon guards an egg\n{a_flag}- keys: egg\n  content: the egg is gold\n{b_flag}"
    store = make_store(tmp_path, {"w.yaml": text}, recursion_depth=2)
    assert sorted(_uids(retrieve(store, message))) == expected


def test_scan_depth_per_entry(tmp_path):
    text = ("- keys: lantern\n  content: deep\n  scan_depth: 5\n"
            "- keys: lantern\n  content: default\n"
            "- keys: lantern\n  content: current only\n  scan_depth: 1\n")
    store = make_store(tmp_path, {"w.yaml": text}, scan_messages=2)
    recent = _chat(("I found a lantern", "nice"), ("ok", "sure"))
    assert [h.text for h in retrieve(store, "what now", recent)] == ["deep"]
    assert sorted(h.text for h in retrieve(store, "what now", _chat(("hm", "the lantern glows")))) == ["deep", "default"]
    assert len(retrieve(store, "the lantern", recent)) == 3


# Chat of user/assistant pairs before the current message; the key "secret" said in user messages
# at the given pair indices. Messages in the chat now = 2 * pairs + 1.
@pytest.mark.parametrize("rule, said_at, pairs, said_now, on", [
    ("sticky: 2", [4], 5, False, True),      # fired 2 messages ago (the previous user message): still on
    ("sticky: 2", [3], 5, False, False),     # fired 4 messages ago: off again
    ("sticky: 4", [3], 5, False, True),
    ("sticky: 0", [4], 5, False, False),
    ("cooldown: 3", [4], 5, True, False),    # fired 2 messages ago: cooling down, a new mention waits
    ("cooldown: 3", [3], 5, True, True),     # 4 messages ago: free again
    ("cooldown: 1", [4], 5, True, True),
    ("sticky: 2\n  cooldown: 2", [3], 5, True, False),  # on until 2 after, then off for 2 more
    ("sticky: 2\n  cooldown: 2", [2], 5, True, True),
    ("delay: 8", [], 3, True, False),        # 7 messages in the chat
    ("delay: 7", [], 3, True, True),
])
def test_sticky_cooldown_delay_count_messages_of_the_chat(tmp_path, rule, said_at, pairs, said_now, on):
    store = make_store(tmp_path, {"w.yaml": f"- keys: secret\n  content: the secret is out\n  {rule}\n"})
    recent = _chat(*[("the secret!" if n in said_at else f"hello {n}", f"reply {n}") for n in range(pairs)])
    hits = retrieve(store, "tell me the secret" if said_now else "and then?", recent)
    assert bool(hits) is on, [h.reason for h in hits]
    if on and not said_now:
        assert hits[0].reason.startswith("sticky:")


def test_a_sticky_entry_keeps_its_group_and_skips_its_draw(tmp_path):
    text = ("- keys: secret\n  content: first\n  group: g\n  sticky: 4\n  probability: 1\n"
            "- keys: [secret, now]\n  content: second\n  group: g\n")
    store = make_store(tmp_path, {"w.yaml": text})
    recent = _chat(("hello", "hi"), ("a secret", "ok"))
    # The first entry won its earlier draw or not; once it is sticky-on it stays and wins the group.
    hits = retrieve(store, "now", recent)
    assert [h.text for h in hits] == ["first"]


def test_rule_fields_are_validated_with_their_line(tmp_path):
    from engine.stores.worldbook.parse import parse_text

    _, errors = parse_text("- keys: a\n  content: b\n  probability: 150\n", file="w.yaml", name="w.yaml")
    assert errors and errors[0].line == 3 and "probability" in errors[0].message
    _, errors = parse_text("- keys: a\n  content: b\n  sticky: -1\n", file="w.yaml", name="w.yaml")
    assert errors and errors[0].line == 3 and "sticky" in errors[0].message
