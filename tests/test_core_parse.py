"""Pure parts of core memory: the LLM reply parser, the offline rule extractor, the fact file."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from engine.errors import DataFileError
from engine.stores.base import Turn
from engine.stores.core import Fact, FactOp, ReplyError, parse_reply, rule_ops, statements
from engine.stores.core.rules import slot_of
from engine.stores.core.facts import dump_facts, parse_facts

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 2, 10, 0, tzinfo=TZ)
ALIASES = {1: "fa", 2: "fb"}


def test_public_names_are_exported():
    import engine.stores.core as core

    for name in core.__all__:
        assert hasattr(core, name), name
    assert "CoreMemoryStore" in core.__all__ and "Fact" in core.__all__


GOOD_REPLIES = {
    "plain": '{"operations": [{"op": "ADD", "text": "讨厌吃香菜"}, {"op": "UPDATE", "id": 2, "text": "住在成都"}]}',
    "fenced": '```json\n{"operations": [{"op": "ADD", "text": "讨厌吃香菜"}, {"op": "UPDATE", "id": 2, "text": "住在成都"}]}\n```',
    "prose_around": '好的，结果如下：\n{"operations": [{"op": "add", "text": "讨厌吃香菜"}, {"op": "update", "id": "2", "text": "住在成都"}]}\n以上。',
    "single_quotes": "{'operations': [{'op': 'ADD', 'text': '讨厌吃香菜'}, {'op': 'UPDATE', 'id': 2, 'text': '住在成都'}]}",
    "trailing_commas": '{"operations": [{"op": "ADD", "text": "讨厌吃香菜",}, {"op": "UPDATE", "id": 2, "text": "住在成都",},]}',
    "bare_list": '[{"event": "ADD", "memory": "讨厌吃香菜"}, {"event": "UPDATE", "id": "[2]", "memory": "住在成都"}]',
    "with_none_and_null": '{"operations": [{"op": "NONE"}, {"op": "ADD", "text": "讨厌吃香菜", "id": null}, {"op": "UPDATE", "id": 2, "text": "住在成都"}]}',
    "fence_no_lang_and_brace_in_text": '```\n{"operations": [{"op": "ADD", "text": "讨厌吃香菜"}, {"op": "UPDATE", "id": 2, "text": "住在成都"}]}\n```\n别的 {x}',
}


@pytest.mark.parametrize("reply", GOOD_REPLIES.values(), ids=GOOD_REPLIES.keys())
def test_reply_shapes_that_parse(reply):
    assert parse_reply(reply, ALIASES) == [FactOp("ADD", "讨厌吃香菜"), FactOp("UPDATE", "住在成都", "fb")]


BAD_REPLIES = {
    "empty": "",
    "no_json": "我觉得没有新的事实。",
    "truncated": '{"operations": [{"op": "ADD", "text": "讨厌',
    "not_a_list": '{"operations": "ADD 讨厌吃香菜"}',
    "list_of_strings": '["ADD 讨厌吃香菜"]',
    "unknown_op": '{"operations": [{"op": "MERGE", "text": "x"}]}',
    "add_without_text": '{"operations": [{"op": "ADD"}]}',
    "update_without_text": '{"operations": [{"op": "UPDATE", "id": 1}]}',
    "object_without_ops": '{"facts_found": 0}',
    "nested_50000_deep": "[" * 50_000 + "]" * 50_000,
    "nested_ops_5000_deep": '{"operations": ' + "[" * 5000 + "]" * 5000 + "}",
    "nested_operation": '{"operations": [' + "[" * 3000 + "]" * 3000 + "]}",
    "nested_text": '{"operations": [{"op": "ADD", "text": ' + "[" * 900 + "]" * 900 + "}]}",
}


@pytest.mark.parametrize("reply", BAD_REPLIES.values(), ids=BAD_REPLIES.keys())
def test_reply_shapes_that_are_rejected(reply):
    with pytest.raises(ReplyError):
        parse_reply(reply, ALIASES)


def test_unknown_alias_drops_only_that_operation():
    reply = '{"operations": [{"op": "DELETE", "id": 7}, {"op": "DELETE", "id": 1}]}'
    assert parse_reply(reply, ALIASES) == [FactOp("DELETE", fact_id="fa")]


STATEMENTS = {
    "zh_hate": ("我讨厌吃香菜", [("讨厌吃香菜", "pref:香菜")]),
    "zh_live_and_pet": ("我住在重庆，养了一只猫叫小白。", [("住在重庆", "live"), ("养了一只猫叫小白", "pet:一只猫叫小白")]),
    "zh_move": ("我上个月搬到成都了", [("住在成都", "live")]),
    "zh_move_plain": ("我搬到成都了", [("住在成都", "live")]),
    "zh_no_longer": ("其实我不讨厌香菜了", [("不再讨厌香菜", "pref:香菜")]),
    "zh_name": ("我叫小明。", [("名字叫小明", "name")]),
    "zh_is": ("我是程序员", [("是程序员", "is:程序员")]),
    "zh_is_filler": ("我是说你别这样", []),
    "zh_question": ("你喜欢什么？", []),
    "zh_question_ma": ("我是不是很烦吗", []),
    "zh_like": ("我最喜欢的动物是猫", [("最喜欢的动物是猫", "fav:动物")]),
    "en_live": ("I live in Chongqing.", [("Lives in Chongqing", "live")]),
    "en_hate": ("I really hate coriander", [("Hates coriander", "pref:coriander")]),
    "en_no_longer": ("I don't hate coriander anymore.", [("No longer hates coriander", "pref:coriander")]),
    "en_name": ("My name is Alex", [("Name is Alex", "name")]),
    "en_pet": ("I have a cat named 小白", [("Has a cat named 小白", "has:a cat named 小白")]),
    "en_question": ("Where do I live?", []),
    # Traditional characters and written Cantonese: the words as written, the slot as in Simplified
    "zh_hant_like": ("我很喜歡喝烏龍茶", [("喜歡喝烏龍茶", "pref:乌龙茶")]),
    "zh_hant_live_and_pet": ("我住在臺北，養了一隻貓。", [("住在臺北", "live"), ("養了一隻貓", "pet:一只猫")]),
    "zh_hant_fav": ("我最喜歡的動物是貓", [("最喜歡的動物是貓", "fav:动物")]),
    "zh_hant_age": ("我今年二十八歲", [("今年二十八歲", "age")]),
    "zh_hant_question": ("你喜歡什麼嗎", []),
    "yue_like": ("我鍾意飲奶茶", [("鍾意飲奶茶", "pref:饮奶茶")]),
    "yue_live": ("我而家住喺沙田", [("住在沙田", "live")]),
    "yue_pet": ("我養咗一隻貓", [("養了一隻貓", "pet:一只猫")]),
    # the other durable things people tell of themselves (allergies, diet, family, where they are
    # from, languages, birthdays, studies, instruments, conditions, fears), and what looks like them
    "zh_allergy": ("我对花生过敏，吃了会起疹子", [("对花生过敏", "allergy:花生")]),
    "zh_allergy_bare": ("我海鲜过敏", [("对海鲜过敏", "allergy:海鲜")]),
    "zh_allergy_vague": ("我有点过敏", []),
    "zh_vegetarian": ("我吃素好几年了", [("吃素", "diet")]),
    "zh_not_eat": ("我不吃辣", [("不吃辣", "pref:辣")]),
    "zh_birthday": ("我生日是5月3号", [("生日是5月3号", "birthday")]),
    "zh_from": ("我老家是四川的", [("老家在四川", "from")]),
    "zh_speaks": ("我会说粤语", [("会说粤语", "speaks:粤语")]),
    "zh_speaks_idiom": ("我会说到做到", []),
    "zh_study": ("我的专业是计算机", [("专业是计算机", "study")]),
    "zh_plays": ("我在学拉小提琴", [("在学拉小提琴", "plays:小提琴")]),
    "zh_family": ("我有个妹妹，在上大学", [("有妹妹", "has:妹妹")]),
    "zh_condition": ("我有哮喘", [("有哮喘", "has:哮喘")]),
    "zh_status": ("我结婚了", [("结婚", "status")]),
    "zh_age_bare": ("我才18岁", [("今年18岁", "age")]),
    "zh_call_me": ("叫我小林就好", [("名字叫小林", "name")]),
    "zh_call_me_to_do": ("你叫我起床吧", []),
    "zh_habit": ("我平时喜欢打篮球", [("喜欢打篮球", "pref:打篮球")]),
    "zh_fav_love": ("我最爱的歌手是周杰伦", [("最喜欢的歌手是周杰伦", "fav:歌手")]),
    "en_fav": ("My favorite color is blue", [("Favorite color is blue", "fav:color")]),
    "en_allergy_texting": ("btw im allergic to peanuts so no satay for me lol", [("Is allergic to peanuts", "allergy:peanuts")]),
    "en_diet": ("I’m vegetarian", [("Is vegetarian", "diet")]),
    "en_status": ("I'm married with two kids", [("Is married", "status")]),
    "en_from": ("I'm from Brazil originally", [("Is from Brazil", "from")]),
    "en_birthday": ("My birthday is on March 3rd", [("Birthday is March 3rd", "birthday")]),
    "en_speaks": ("I speak Spanish", [("Speaks Spanish", "speaks:spanish")]),
    "en_study": ("I study nursing at Leeds", [("Studies nursing at Leeds", "study")]),
    "en_plays": ("I play the guitar in a band", [("Plays guitar in a band", "plays:guitar in a band")]),
    "en_fear": ("I'm terrified of spiders", [("Is afraid of spiders", "fear:spiders")]),
    "en_into": ("I'm really into K-pop", [("Is into K-pop", "pref:k-pop")]),
    "en_condition": ("I have asthma", [("Has asthma", "has:asthma")]),
    "en_turned": ("I just turned 30", [("Is 30 years old", "age")]),
    "en_work_in": ("I work in marketing", [("Works in marketing", "work")]),
    "en_based": ("I'm based in Berlin but I work in Potsdam", [("Lives in Berlin", "live"), ("Works in Potsdam", "work")]),
    "en_love_that": ("I love that idea!", []),
    "en_love_you": ("I love you", []),
    "en_idiom_play": ("I play it safe usually", []),
    "en_idiom_speak": ("I speak my mind", []),
    "en_tired": ("I am so tired", []),
    "zh_fronted": ("香菜我是真的接受不了", [("接受不了香菜", "pref:香菜")]),
    "zh_abstain": ("我戒烟三年了", [("戒烟", "abstain:戒烟")]),
    "zh_personality": ("我这个人比较慢热", [("性格慢热", "personality")]),
    "zh_height": ("我一米九，买裤子老是短", [("身高一米九", "height")]),
    "zh_habit": ("周末我一般都去钓鱼", [("常去钓鱼", "habit:去钓鱼")]),
    "zh_school": ("我在武汉大学读计算机", [("在武汉大学读书", "work")]),
    "zh_work_as": ("我在深圳一家外企做会计", [("在深圳一家外企当会计", "work")]),
    "zh_pet_named": ("我家那只柯基叫豆豆", [("养了一只柯基叫豆豆", "pet:一只柯基叫豆豆")]),
    "zh_dialect_i": ("俺是山东人", [("是山东人", "is:山东人")]),
    "zh_cook_at_home": ("我在家做饭", []),
    "en_kin_named": ("My husband Dave and I just celebrated 30 years", [("Husband's name is Dave", "kin:husband:name")]),
    "en_texted_diet": ("ive been vegan for like 4 years now", [("Is vegan", "diet")]),
    "en_long_clause": ("I'm a farmer, we grow mostly soybeans and corn on about 400 acres", [("Is a farmer", "is:a farmer")]),
    "en_work_shifts": ("I work night shifts as an ICU nurse so I'm asleep till 3", [("Works as an ICU nurse", "work")]),
    "en_hobby": ("i knit. like a lot", [("Knits", "does:knit")]),
    "en_aid": ("I use a wheelchair", [("Uses a wheelchair", "uses:a wheelchair")]),
    "en_texted_age": ("lol im 13 dont tell my mom", [("Is 13 years old", "age")]),
    "en_nationality": ("I am Korean, living in Busan", [("Is Korean", "nationality")]),
    "en_transient": ("I'm a mess today", []),
}


@pytest.mark.parametrize("text,expected", STATEMENTS.values(), ids=STATEMENTS.keys())
def test_rule_statements(text, expected):
    found = statements(text)
    assert [(s.text, s.slot) for s in found] == expected
    # a kept fact is found in its slot again, so the next statement there updates it
    assert [slot_of(s.text) for s in found] == [s.slot for s in found]


def _turn(text, i=0):
    return Turn(id=f"t{i}", user_id="u", at=NOW, user=text, assistant="嗯嗯")


def _fact(fid, text):
    return Fact(fid, text, NOW, NOW)


class TestRuleOps:
    """The offline extractor reconciles by slot: same slot -> UPDATE, same text -> nothing."""

    def test_new_statement_adds(self):
        assert rule_ops([_turn("我讨厌吃香菜")], []) == [FactOp("ADD", "讨厌吃香菜")]

    def test_repeat_is_a_no_op(self):
        assert rule_ops([_turn("我讨厌吃香菜！")], [_fact("f1", "讨厌吃香菜")]) == []

    def test_conflict_updates_the_slot(self):
        facts = [_fact("f1", "住在重庆"), _fact("f2", "讨厌吃香菜")]
        ops = rule_ops([_turn("我搬到成都了"), _turn("我不讨厌香菜了")], facts)
        assert ops == [FactOp("UPDATE", "住在成都", "f1"), FactOp("UPDATE", "不再讨厌香菜", "f2")]

    def test_llm_written_fact_with_subject_shares_the_slot(self):
        assert rule_ops([_turn("I live in Chengdu")], [_fact("f1", "用户住在重庆")]) == [
            FactOp("UPDATE", "Lives in Chengdu", "f1")
        ]

    def test_two_statements_in_one_batch_add_once(self):
        assert rule_ops([_turn("我住在重庆"), _turn("我住在成都")], []) == [FactOp("ADD", "住在成都")]

    def test_only_the_user_side_is_read(self):
        turn = Turn(id="t", user_id="u", at=NOW, user="你好", assistant="我讨厌吃香菜")
        assert rule_ops([turn], []) == []


class TestFactFile:
    """core_mem.yml: hand-written shortcuts are accepted, mistakes name the file and line."""

    def test_round_trip(self, tmp_path):
        fact = Fact("f1", "住在成都", NOW, NOW, ("t1",))
        assert parse_facts(dump_facts([fact]), path=tmp_path / "c.yml", tz=TZ, default_time=NOW) == [fact]

    def test_hand_written_minimal_entries(self, tmp_path):
        text = "- 讨厌吃香菜\n- text: 住在重庆\n  learned_at: 2026-10-01\n"
        facts = parse_facts(text, path=tmp_path / "c.yml", tz=TZ, default_time=NOW)
        assert [f.text for f in facts] == ["讨厌吃香菜", "住在重庆"]
        assert facts[0].learned_at == NOW and facts[1].learned_at == datetime(2026, 10, 1, tzinfo=TZ)
        assert facts[0].id != facts[1].id

    @pytest.mark.parametrize(
        "text,line,words",
        [
            ("- id: f1\n  text: a\n- id: f2\n  txet: b\n", 4, "unknown key 'txet'"),
            ("- id: f1\n  text: a\n- id: f1\n  text: b\n", 3, "duplicate id"),
            ("- id: f1\n  text: a\n  learned_at: yesterday\n", 3, "ISO"),
            ("- id: f1\n  text: [a\n", 3, ""),
            ("a: 1\n", 1, "list of facts"),
        ],
        ids=["misspelt_key", "duplicate_id", "bad_time", "yaml_syntax", "not_a_list"],
    )
    def test_errors_name_file_and_line(self, tmp_path, text, line, words):
        path = tmp_path / "core_mem.yml"
        with pytest.raises(DataFileError) as info:
            parse_facts(text, path=path, tz=TZ, default_time=NOW)
        assert info.value.path == str(path) and info.value.line == line
        assert words in str(info.value) and f"{path}:{line}" in str(info.value)


def test_a_fact_said_in_either_script_fills_one_slot():
    assert rule_ops([_turn("我不喜歡烏龍茶了")], [_fact("fa", "喜欢喝乌龙茶")]) == [FactOp("UPDATE", "不再喜歡烏龍茶", "fa")]
    assert rule_ops([_turn("我住喺沙田")], [_fact("fb", "住在重慶")]) == [FactOp("UPDATE", "住在沙田", "fb")]
