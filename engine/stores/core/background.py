"""Reference texts for the relevance decision: facts about nobody in particular, and everyday
messages about nothing in particular, in Chinese and English.

A query's cosine with a fact means little on its own: multilingual-e5 puts almost any two short
Chinese texts above 0.8, and a vague message ("昨天我们聊了什么？") sits close to everything. What
a message scores against these reference facts says how close it sits to facts *in general*, and
what a fact scores against these reference messages says how close it sits to messages in
general; `relevance.py` asks a fact to stand out from both. The texts are deliberately ordinary
and cover the usual kinds of personal facts and chat; none of them is about a particular user.
"""

from __future__ import annotations

FACTS: tuple[str, ...] = (
    # zh: the shapes the offline rules and memory LLMs write
    "名字叫王芳", "住在杭州", "今年三十岁", "在银行上班", "养了一条狗", "喜欢吃甜食", "讨厌下雨天",
    "是一名大学老师", "有两个孩子", "每天早上跑步", "对海鲜过敏", "最喜欢的颜色是蓝色", "正在学日语",
    "周末喜欢去钓鱼", "开一辆红色的车", "爸爸是医生", "大学学的是化学", "不喝酒", "怕黑",
    "下个月要去云南旅游", "最近在减肥", "喜欢看科幻电影", "用户的女儿在读高中", "用户在一家超市做收银员",
    "用户小时候在农村长大", "用户每周末都会给父母打电话", "用户最近换了新工作", "用户喜欢收集邮票",
    "用户不太会做饭", "用户的哥哥在国外工作", "用户有轻微的近视", "用户晚上十一点前睡觉",
    "用户会弹吉他", "用户支持皇家马德里", "用户正在装修新房子", "用户喜欢喝绿茶", "用户骑自行车上班",
    # en
    "Name is Mark", "Lives in Denver", "Is 41 years old", "Works as an accountant", "Has two cats",
    "Loves Italian food", "Hates cold weather", "Is a high school teacher", "Has a daughter named Emma",
    "Goes to the gym every morning", "Is allergic to shellfish", "Favorite color is green",
    "Is learning Spanish", "Likes fishing on weekends", "Drives a blue pickup truck",
    "Her father is a firefighter", "Studied biology in college", "Doesn't drink coffee",
    "Is afraid of heights", "Is planning a trip to Japan next spring", "Is trying to lose weight",
    "Enjoys horror movies", "The user volunteers at an animal shelter", "The user grew up in Ohio",
    "The user plays the piano", "The user recently got engaged", "The user is a vegetarian",
    "The user works night shifts at a factory", "The user collects vinyl records",
)

MESSAGES: tuple[str, ...] = (
    # zh: everyday chat that asks for no particular fact
    "你好呀", "晚上好", "我睡了，明天聊", "哈哈，笑死我了", "今天好热啊", "外面在下雪", "你吃饭了吗",
    "给我讲个故事", "你知道长城有多长吗", "帮我翻译一句话", "现在是几月份", "上次我们聊到哪了",
    "你在想什么", "今天心情还不错", "我有点累了", "随便聊聊吧", "你觉得呢", "说得对", "然后呢",
    "我出门了", "周末快乐", "这个问题好难", "你懂得真多", "我们聊点别的吧", "对了，问你个事",
    "今天是个好日子", "天气预报说明天降温", "你喜欢音乐吗", "我刚看完一部电影", "有什么新鲜事吗",
    "好的，知道啦", "嗯……让我想想", "太阳下山了",
    # en
    "Hey, what's up?", "Good evening", "I'm going to bed, talk tomorrow", "Haha that's hilarious",
    "It's so hot today", "It's snowing outside", "Did you eat yet?", "Tell me something interesting",
    "How long is the Great Wall?", "Can you translate a sentence for me?", "What month is it now?",
    "Where did we leave off last time?", "What are you thinking about?", "I'm in a pretty good mood today",
    "I'm a bit tired", "Let's just chat", "What do you think?", "You're right", "And then?",
    "I'm heading out", "Happy weekend", "That's a hard question", "You know a lot", "Let's talk about something else",
    "Oh, one more thing", "What a nice day", "Do you like music?", "I just finished a movie",
    "Anything new?", "Okay, got it", "Hmm, let me think about it", "The sun is setting",
)
