"""The offline fact rules for Chinese: what a clause says about the user, as a fact and its slot.

Each row of `RULES` is a pattern and a kind; `FORMS` gives the kind's fact and slot ({g0} {g1}
are the pattern's groups, {obj} the last one without its sentence-final particles, {key} the
object without a leading eating / watching verb), `SLOTS` the slot of a fact already in that
shape (an LLM's too), so a later statement in the slot updates it. The patterns read the clause
as Simplified Mandarin (`as_tables_read`); the fact keeps the words as written.
"""

from __future__ import annotations

import re

from engine.stores.core.statement import Statement
from engine.timeparse.script import in_traditional

_ADV = (r"(?:现在|也|还|一直|已经|真的|其实|最近|刚刚|刚|上个月|上周|去年|今年|前几天|平时|平常|每天|经常|从小|一向|本身|天生|"
        r"就|也就|主要|本来|一般|总是|向来)*")
_DEG = r"(?:很|非常|最|特别|超|挺|超级|有点|十分|好|太|怎么|是很|大|蛮|贼|巨)*"
_TAIL = re.compile(r"[了啦呀哦呢的吧啊哈～~]+$")
_IS_STOP = ("说", "不是", "在", "想", "觉得", "真", "挺", "因为", "不", "要", "来", "去", "问", "开玩笑", "第")
# What an object of liking is when the clause is no fact about the user (我喜欢你这个回答, 我就喜欢你).
_NOT_AN_OBJECT = ("你", "这", "那", "他", "她", "它", "您")
# What follows 我妈叫 / 我老公是 when it is no fact about them (我妈叫我回家吃饭, 我老公是不是傻).
_NOT_OF_KIN = ("我", "你", "他", "她", "不", "在", "说", "怎么", "什么", "谁")

# Lists that a pattern names rather than matches loosely: a bare 我有X is mostly not about oneself
# (我有事, 我有点累).
CONDITIONS = (r"哮喘|糖尿病|高血压|低血糖|贫血|抑郁症|焦虑症|强迫症|多动症|胃病|胃炎|鼻炎|偏头痛|失眠|近视|散光|色盲|心脏病|癫痫|"
              r"过敏性鼻炎|湿疹|乳糖不耐受?|社恐|恐高症?|洁癖|选择困难症|晕车|晕船|路痴|甲亢|甲减|痛风|颈椎病|腰椎间盘突出")
FAMILY = r"哥哥|姐姐|弟弟|妹妹|女朋友|男朋友|老婆|老公|对象|孩子|儿子|女儿|双胞胎|猫|狗"
KIN = r"男朋友|女朋友|老公|老婆|丈夫|妻子|爱人|对象|媳妇|闺女|儿子|女儿|孩子|婆婆|公公|爸爸|妈妈|爸|妈|爸妈|父母|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|姥姥|姥爷"
INSTRUMENTS = r"钢琴|吉他|小提琴|大提琴|古筝|琵琶|二胡|笛子|萨克斯|尤克里里|贝斯|架子鼓|手风琴|长笛|口琴|竖琴|电子琴|鼓"
SKILLS = r"游泳|开车|做饭|喝酒|骑车|骑自行车|滑雪|溜冰|滑冰|画画|唱歌|跳舞|编程|织毛衣|抽烟"
RELIGIONS = r"佛教|佛|基督教|基督|天主教|伊斯兰教|道教|耶稣|主"
_COUNT = r"(?:(?:两|三|四|\d)(?:个|位))?"

_JOB_END = (r"(?:师|员|家|工|长|手|者|官|匠|会计|销售|客服|前台|司机|主播|模特|编辑|记者|设计|运营|产品|开发|测试|裁缝|保姆|"
            r"老板|护士|医生|大夫|老师|教练|律师|厨师|警察|军人|保安|快递|外卖)")
_HABIT_START = r"(?:每天(?:早上|晚上)?|每周|每个?周末|周末|平时|一般|每晚)"
_CANT_TAKE = r"接受不了|受不了|吃不了|看不了|听不了|欣赏不来|吃不惯|喝不惯|不吃|不喝|不看|不听|不碰"

RULES: list[tuple[re.Pattern[str], str]] = [(re.compile(p), kind) for p, kind in [
    (rf"^([^我你他她，。]{{1,6}}?)我(?:是)?{_ADV}(?:真的|是真|真|一点都|从来都|从来|实在|完全|根本)?({_CANT_TAKE})", "fronted"),
    (rf"^(?:我)?以前{_DEG}(喜欢|爱)(.+)", "used_to"),
    (rf"我{_ADV}(?:已经)?(?:去年|前年|今年)?(?:开始)?(滴酒不沾|戒烟|戒酒|戒糖|戒奶茶|戒咖啡)", "abstain"),
    (r"我(?:这个人|的?性格)(?:比较|很|挺|有点|特别|超)?([^，。]{1,5})$", "personality"),
    (rf"我{_ADV}(?:身高)?(?:是|有)?(一米[一二三四五六七八九]{{1,2}}|1米?[.．]?\d{{1,2}}|1\d\d ?(?:cm|厘米|公分))", "height"),
    (rf"我{_ADV}{_HABIT_START}(?:都|会|都会|都要|要)?(去[^，。]{{1,8}})$", "habit"),
    (rf"我{_ADV}(?:在)?收集([^，。]{{1,10}})", "collects"),
    (rf"我{_ADV}(?:刚|去年|今年)?买了(?:一)?(?:辆|台)([^，。]{{1,8}})", "car"),
    (rf"我{_ADV}在([^，。]{{1,8}}?)(?:住|生活)了", "live"),
    (rf"我{_ADV}家是([^，。]{{1,8}}?)的", "from"),
    (rf"我{_ADV}在([^，。]{{2,10}}?(?:大学|学院|学校|中学|高中|小学|大))(?:读|学|上学|念)", "school"),
    (rf"我{_ADV}最(?:喜欢|爱)的(.+?)是(.+)", "fav"),
    (rf"我{_ADV}的?(?:最大的)?爱好(?:就)?是(.+)", "hobby"),
    (rf"我{_ADV}对(.+?)(?:严重|有点|特别|很)?过敏", "allergy"),
    (rf"我{_ADV}([^有是会不好还也都就对很][^，。]{{0,7}}?)过敏", "allergy"),
    (rf"我{_ADV}(?:是)?(?:吃素|素食主义者|素食者)", "vegetarian"),
    (r"我的?生日(?:是|在)(.+)", "birthday"),
    (rf"我{_ADV}(?:来自|老家(?:在|是))(.+)", "from"),
    (rf"我{_ADV}会(?:说|讲)([^，。,]{{1,12}}(?:语|话|文))", "speaks"),
    (rf"我{_ADV}(?:正在|在)(?:自)?学([^，。,]{{1,6}}?(?:语|文))", "learning"),
    (rf"我{_ADV}的?专业是(.+)", "study"),
    (rf"我{_ADV}(?:大学|研究生|本科)?(?:学的|读的)是(.+?)(?:专业)?$", "study"),
    (rf"我{_ADV}(?:今年|现在)?(?:在|正在)?(?:读|上)?(大[一二三四]|高[一二三]|初[一二三]|研[一二三]|博[一二三四五])", "grade"),
    (rf"我{_ADV}(?:在|正在)读(研究生|博士|研|博|大学|高中|初中)", "grade"),
    (rf"我{_ADV}(会|在学)?(弹|拉|吹|打)({INSTRUMENTS})", "plays"),
    (rf"我{_ADV}(不会|会)({SKILLS})", "skill"),
    (rf"我{_ADV}信({RELIGIONS})", "religion"),
    (rf"我{_ADV}有(?:个|一个|一位)?({_COUNT}(?:{FAMILY}))", "family"),
    (rf"我{_ADV}{_DEG}有(?:点|一点|轻微的?|严重的?)?({CONDITIONS})", "condition"),
    (rf"我{_ADV}{_DEG}({CONDITIONS})", "condition_bare"),
    (rf"我{_ADV}(?:已经)?(结婚|离婚|单身|订婚|脱单)了?", "status"),
    (rf"我{_ADV}(?:已经)?(退休|毕业)了?", "career"),
    (rf"我(?:的)?({KIN})(?:叫|的名字是|名字叫)(.+)", "kin_named"),
    (rf"我(?:的)?({KIN})是(.+)", "kin_is"),
    (rf"我{_ADV}(?:的)?(梦想|目标|理想)(?:就)?是(.+)", "goal"),
    (rf"我{_ADV}(?:一直|从小就?)?想(?:当|成为)(.+)", "wants_to_be"),
    (rf"我{_ADV}最怕的(?:就)?是(.+)", "fear"),
    (rf"我{_ADV}{_DEG}(?:怕|害怕)([^你他她明今会被，。]{{1,4}})$", "fear"),
    (rf"我{_ADV}(?:自己)?开了(?:一)?家(.+)", "owns"),
    (rf"我{_ADV}身高(?:是|有)?(.+)", "height"),
    (rf"我{_ADV}只(吃|喝|穿|用|听|看)(.+)", "only"),
    (rf"我{_ADV}不(吃|喝)(.+)", "not_eat"),
    (rf"我{_ADV}(?:不再|再也不)(喜欢|讨厌|爱|恨)(.+)", "no_longer"),
    (rf"我{_ADV}不(喜欢|讨厌|爱|恨)(.+?)了$", "no_longer"),
    (rf"我{_ADV}不{_DEG}(喜欢|爱)(.+)", "not"),
    (rf"我以前{_DEG}(喜欢|爱)(.+)", "used_to"),
    (rf"我{_ADV}{_DEG}(喜欢|讨厌|爱|恨|迷|热爱|喜爱)(.+)", "pref"),
    (r"我的名字(?:叫|是)(.+)", "name"),
    (rf"我{_ADV}叫(.+)", "name"),
    (rf"我{_ADV}(?:搬家?到|搬去)了?(.+?)(?:住)?$", "live"),
    (rf"我{_ADV}(?:住在|家在|住)([^的了过着].*)", "live"),
    (rf"我{_ADV}今年(\d+|[一二三四五六七八九十百]+)(?:岁|了)", "age"),
    (rf"我{_ADV}(?:才|都)?(\d+|[一二三四五六七八九十]+)岁了?$", "age"),
    (r"(?:^|大家|朋友们?|你)(?:都|可以|就)?叫我(.+?)(?:就好|就行|就可以)$", "name"),
    (r"大家都叫我(.+)", "name"),
    (rf"我{_ADV}在(.+?)(工作|上班|打工|上学|读书|念书|读研|读博|读(?:大|高|初|研)[一二三四]|实习)", "work"),
    (rf"我{_ADV}在(.+?)当(.{{1,8}})$", "work_as"),
    (rf"我{_ADV}在(.+?)做(.{{0,6}}?{_JOB_END})", "work_as"),
    (r"我家(?:里)?(?:那|这|的)?(?:只|条)([^，。]{1,6}?)叫([^，。]{1,6})", "pet_named"),
    (rf"我{_ADV}(?:家里?|屋头|家里头)?(?:养了|家有|家里有|有)((?:一|两|三|\d)?[只条匹头缸].+)", "pet"),
    (rf"我{_ADV}(?:家里?)?养了(.+)", "pet"),
    (rf"我{_ADV}(?:应该|也)?(?:算)?是(.+)", "is"),
]]


FORMS: dict[str, tuple[str, str]] = {
    "fav": ("最喜欢的{g0}是{obj}", "fav:{g0}"),
    "hobby": ("爱好是{obj}", "hobby:{obj}"),
    "no_longer": ("不再{g0}{obj}", "pref:{key}"),
    "not": ("不{g0}{obj}", "pref:{key}"),
    "used_to": ("以前{g0}{obj}", "pref:{key}"),
    "pref": ("{g0}{obj}", "pref:{key}"),
    "name": ("名字叫{obj}", "name"),
    "live": ("住在{obj}", "live"),
    "age": ("今年{obj}岁", "age"),
    "work": ("在{obj}{g1}", "work"),
    "work_as": ("在{g0}当{obj}", "work"),
    "fronted": ("{g1}{obj}", "pref:{key}"),
    "abstain": ("{obj}", "abstain:{obj}"),
    "personality": ("性格{obj}", "personality"),
    "habit": ("常{obj}", "habit:{obj}"),
    "collects": ("收集{obj}", "collects:{obj}"),
    "car": ("有辆{obj}", "car"),
    "school": ("在{obj}读书", "work"),
    "pet_named": ("养了一只{g0}叫{obj}", "pet:一只{g0}叫{obj}"),
    "pet": ("养了{obj}", "pet:{obj}"),
    "is": ("是{obj}", "is:{obj}"),
    "allergy": ("对{obj}过敏", "allergy:{obj}"),
    "vegetarian": ("吃素", "diet"),
    "birthday": ("生日是{obj}", "birthday"),
    "from": ("老家在{obj}", "from"),
    "speaks": ("会说{obj}", "speaks:{obj}"),
    "learning": ("在学{obj}", "learning:{obj}"),
    "study": ("专业是{obj}", "study"),
    "grade": ("在读{obj}", "grade"),
    "plays": ("{g0}{g1}{obj}", "plays:{obj}"),
    "skill": ("{g0}{obj}", "can:{obj}"),
    "religion": ("信{obj}", "religion"),
    "family": ("有{obj}", "has:{obj}"),
    "condition": ("有{obj}", "has:{obj}"),
    "condition_bare": ("{obj}", "has:{obj}"),
    "status": ("{obj}", "status"),
    "career": ("{obj}", "career"),
    "kin_named": ("{g0}叫{obj}", "kin:{g0}:name"),
    "kin_is": ("{g0}是{obj}", "kin:{g0}:is"),
    "goal": ("{g0}是{obj}", "goal:{obj}"),
    "wants_to_be": ("想当{obj}", "goal:{obj}"),
    "fear": ("怕{obj}", "fear:{obj}"),
    "owns": ("开了家{obj}", "owns:{obj}"),
    "height": ("身高{obj}", "height"),
    "only": ("只{g0}{obj}", "pref:{key}"),
    "not_eat": ("不{g0}{obj}", "pref:{key}"),
}
_TRADITIONAL_FORM_WORDS = {"最喜欢的": "最喜歡的", "岁": "歲", "养了": "養了"}
"""The words of `FORMS` that Traditional characters write otherwise: a fact told in them is kept in them."""

# The slot of a fact in one of the shapes of `FORMS`; the group, where there is one, is the slot's
# object (a liking's as `key` makes it).
SLOTS: list[tuple[re.Pattern[str], str]] = [(re.compile(p), kind) for p, kind in [
    (r"^最喜欢的(.+?)是", "fav"),
    (r"^爱好是(.+)$", "hobby"),
    (r"^(?:不再|不|以前)?(?:喜欢|讨厌|爱|恨|迷|热爱|喜爱)(.+)$", "pref"),
    (r"^(?:不|只)(?:吃|喝|穿|用|听|看)(.+)$", "pref"),
    (r"^名字(?:叫|是)", "name"),
    (r"^住在", "live"),
    (r"^今年.+岁$", "age"),
    (r"^在.+(?:工作|上班|上学|读书|念书|读研|读博|读(?:大|高|初|研)[一二三四]|实习)$|^在.+当", "work"),
    (r"^养了(.+)$", "pet"),
    (r"^对(.+)过敏$", "allergy"),
    (r"^吃素$", "diet"),
    (r"^生日是", "birthday"),
    (r"^老家在", "from"),
    (r"^会说(.+)$", "speaks"),

    (r"^专业是", "study"),
    (r"^在读", "grade"),
    (rf"^(?:会|在学)?(?:弹|拉|吹|打)({INSTRUMENTS})$", "plays"),
    (rf"^(?:不会|会)({SKILLS})$", "can"),
    (r"^在学(.+)$", "learning"),
    (r"^信", "religion"),
    (rf"^有(.+)$|^({CONDITIONS})$", "has"),
    (r"^(?:结婚|离婚|单身|订婚|脱单)$", "status"),
    (r"^(?:退休|毕业)$", "career"),
    (r"^(?:(?:梦想|目标|理想)是|想当)(.+)$", "goal"),
    (r"^怕(.+)$", "fear"),
    (r"^开了家(.+)$", "owns"),
    (r"^身高", "height"),
    (rf"^(?:{_CANT_TAKE})(.+)$", "pref"),
    (r"^(滴酒不沾|戒烟|戒酒|戒糖|戒奶茶|戒咖啡)$", "abstain"),
    (r"^性格", "personality"),
    (r"^常(.+)$", "habit"),
    (r"^收集(.+)$", "collects"),
    (r"^有辆", "car"),
    (r"^是(.+)$", "is"),
]]
_KIN_SLOT = re.compile(rf"^({KIN})(叫|是)")


def key(obj: str) -> str:
    """A liking's object as its slot names it: without a leading eating / watching verb."""
    return re.sub(r"^(?:吃|喝|看|玩|听|养)", "", obj).strip()


def statement(clause: str, read: str) -> Statement | None:
    """The fact one Chinese clause tells about the user, or None. `read`: the clause as the patterns
    read it (`as_tables_read`: Simplified Mandarin, the same length). The fact keeps the words as
    written; its slot is the reading's, so the same thing said in either script fills one slot."""
    read = read.replace("俺", "我")  # the northern dialect's "I", one character for one
    for pattern, kind in RULES:
        match = pattern.search(read)
        if not match:
            continue
        spans = [match.span(i) for i in range(1, len(match.groups()) + 1)] or [match.span()]
        written = [clause[a:b] if a >= 0 else "" for a, b in spans]
        reading = [read[a:b] if a >= 0 else "" for a, b in spans]
        at = 0 if kind in ("work", "fronted") else -1
        obj_read = _TAIL.sub("", reading[at])  # the tail is cut where the reading ends it (嘅 reads 的)
        obj, obj_read = written[at][: len(obj_read)].strip(), obj_read.strip()
        if not obj or len(obj) > 30:
            return None
        if kind == "is" and (obj_read.startswith(_IS_STOP) or len(obj) > 15):
            return None
        if kind in ("pref", "not", "no_longer", "used_to") and obj_read.startswith(_NOT_AN_OBJECT):
            return None
        if kind in ("kin_named", "kin_is") and obj_read.startswith(_NOT_OF_KIN):
            return None
        text, slot = FORMS[kind]
        if in_traditional(clause):
            for simplified, traditional in _TRADITIONAL_FORM_WORDS.items():
                text = text.replace(simplified, traditional)
        said = {"g0": written[0], "g1": written[1] if len(written) > 1 else "", "obj": obj}
        slot_fields = {"g0": reading[0], "g1": reading[1] if len(reading) > 1 else "", "obj": obj_read,
                       "key": key(obj_read)}
        return Statement(text.format(**said), slot.format(**slot_fields))
    return None


def kin_slot(fact: str) -> str | None:
    """The slot of a fact about one of the family (`kin:<who>:<what>`), else None."""
    kin = _KIN_SLOT.match(fact)
    if kin:
        return f"kin:{kin.group(1)}:{'name' if kin.group(2) == '叫' else 'is'}"
    return None
