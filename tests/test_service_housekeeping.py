"""Conversation or housekeeping (issue 13 item 1): the pure decision on every fixture request and on
cases made to look alike, then through HTTP (override header, metadata, config patterns)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from engine.errors import ConfigError
from engine.testing.fake_openai import FakeOpenAIServer
from engine.service.app import create_app
from engine.service.errors import ServiceError
from engine.service.housekeeping import classify, compile_patterns
from engine.testing.serve import ServiceThread, copy_demo, service_config

FIXTURES = Path(__file__).parent / "fixtures" / "frontends"
TOKEN = "hk-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def fixture_lines() -> list:
    out = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            out.append(pytest.param(data, id=f"{path.stem}-{data['seq']}-{data['note'][:30]}"))
    return out


def pairs(body):
    out = []
    for m in body["messages"]:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text") or "" for p in content if p.get("type") == "text")
        out.append((m["role"], content.replace("{{reply:", "reply to ").replace("}}", "")))
    return out


@pytest.mark.parametrize("line", fixture_lines())
def test_every_fixture_request(line):
    assert classify(pairs(line["body"])).kind == line["expect"]["request"]


CONVERSATION = [
    ([("user", "帮我想个标题吧，我在写一篇关于雾川镇的小说。")], "asks for a title in words of its own"),
    ([("user", "Task: remember that I hate coriander.")], "Task without the ### heading"),
    ([("user", "我们之前聊过 ### Task: 这种格式吗？")], "### Task: not at the start"),
    ([("system", "persona"), ("user", "hi"), ("assistant", "hello"), ("user", "how are you?"),
      ("system", "[Stay in character]")], "post-history instruction after a new user message"),
    ([("user", "hi"), ("assistant", "hello"), ("system", "[Continue your last message without repeating its original content.]")],
     "continue nudge"),
    ([("user", "hi"), ("assistant", "hel")], "assistant prefill"),
    ([("system", "You are a helpful assistant."), ("user", "总结一下今天的新闻")], "a user asking for a summary"),
]
HOUSEKEEPING = [
    ([("user", "  ### Task:\nSuggest an emoji")], "open-webui task prompt"),
    ([("system", "Available Tools: [{\"name\": \"x\"}]\n\nReturn {\"tool_calls\": []}"), ("user", "Query: hi")],
     "open-webui tool selection"),
    ([("user", "hi"), ("assistant", "hello"), ("system", "[Pause your roleplay. Summarize the chat.]")],
     "sillytavern summary"),
    ([("user", "hi"), ("assistant", "hello"), ("system", "What is the mood of the scene? One word.")],
     "instruction after an answered turn (quiet prompt)"),
    ([("system", "Summarize our discussion briefly in 50 characters or less to use as a prompt for future context.")],
     "nextchat summary"),
    # Known defaults sent with few-shot turns, or with nothing that asks for an artefact of the chat
    ([("system", "You are a summarization AI. Summarize the user's request into a few words."),
      ("user", "Who is the mayor?"), ("assistant", "🏛️ The mayor"), ("user", "我周末想去江边走走")],
     "hugging face chat-ui title"),
    ([("system", "你是一名擅长起名的起名大师，把描述总结为角色名"), ("user", "输入: {温柔的猫娘}"), ("assistant", "小月"),
      ("user", "输入: {健身教练}")], "lobechat agent meta"),
    ([("user", "Summarize in a 10-word Title. Give the title only. \"How long do I boil eggs?\"")], "jan title"),
    ([("user", "Summarize the conversation by integrating new lines into the current summary.\n\nNew lines:\n"
               "Human: hi\nAI: hello\n\nNew summary:")], "librechat summary"),
    ([("user", "Assess the need for a web search based on the current question and prior interactions. "
               "Current Question: 周末天气")], "open-webui 0.3 search query"),
    ([("system", "You rephrase follow-up queries from a conversation into standalone queries for a web search."),
      ("user", "assistant: 杭州两日游…\nFollow up: 那第二天呢")], "query rewrite"),
    ([("system", "You are a Personal Information Organizer, specialized in storing facts about the user."),
      ("user", "user: I'm a nurse on night shifts.")], "fact extraction (mem0 prompt)"),
    ([("system", "Given the chat so far and the user's last question, formulate a standalone question. Do not answer it."),
      ("user", "hi"), ("assistant", "hello"), ("user", "how long is the trail?")], "query rewrite"),
    ([("user", "Progressively summarize the lines of conversation provided.\nNew lines:\nHuman: hi")], "langchain memory"),
    ([("system", "You are an AI suggestion generator for a search engine."), ("user", "User: 西湖有什么好玩的")],
     "a tool's role"),
    ([("system", "你是一个问题优化大师"), ("user", "她需要空腹吗？")], "a tool's role"),
    ([("system", "You are a helper that writes brief titles for chats."), ("user", "我家猫今天学会开门了")],
     "a tool's task"),
    ([("system", "You are tasked with summarizing the conversation you are given."),
      ("user", "Human: my parrot learned a new word\nAI: which one?")], "a tool's task"),
    ([("system", "You are a memory module for a chatbot."), ("user", "Human: I moved to Lyon")], "a tool's task"),
    ([("user", "我想去海边"), ("assistant", "好呀"), ("user", "Describe the conversation above in a few words.")],
     "the conversation handed over"),
    ([("user", "hi"), ("assistant", "hello"), ("user", "Summarize the previous conversation, then list open questions.")],
     "the conversation handed over"),
    ([("user", "A running summary: Tom likes tea.\n\nExtend this summary with the new messages above.")],
     "the conversation handed over"),
    ([("system", "Short titles only."), ("user", "Generate a title for this prompt:\n周末去哪儿玩比较好？")],
     "the conversation handed over"),
    ([("system", "Rewrite the user's input."), ("user", "User task: 那灵隐寺值得去吗？\nStandalone task:")],
     "ends in a slot for the model to fill (a template)"),
    ([("user", "Write a short summary of the text below.\n\n团子是一只三岁的橘猫。\n\nCONCISE SUMMARY IN 中文:")],
     "ends in a slot for the model to fill (a template)"),
    ([("system", "Extract the keywords of the text."), ("user", "Output: ")],
     "ends in a slot for the model to fill (a template)"),
    ([("user", "Keywords: 灵隐寺值得去吗\nRelated search terms:\n   ")], "ends in a slot for the model to fill (a template)"),
]


# Rule 5: frontends kioku has no rule for. Written for this test in the manner of their defaults
# (Chatbox, Cherry Studio, Hugging Face chat-ui, AnythingLLM and in-house apps), none copied.
OTHER_FRONTENDS = [
    'You are tasked with generating a short label for the conversation from the user\'s first message. Respond only with the label.',
    'Come up with a title for this chat that is shorter than 6 words. Do not output anything except the title.',
    'Create the chat name from the first user message. Do not include any punctuation or extra text.',
    'Given the chat history, list 3 questions the user might ask next, in the following format: one per line.',
    'Based on the chat history, give this conversation a name. Keep it short - 10 characters max, no quotes. Just provide the name, nothing else.',
    'Summarize the conversation into a title within 10 characters ignoring instructions and without punctuation or symbols. Output only the title string without anything else.',
    "You are a summarization AI. Summarize the user's request into a single short sentence of four words or less. Do not try to answer it, only summarize the user's query.",
    'Generate a short title (max 6 words) for a conversation that begins with the following message. Return only the title.',
    'Create 3 follow-up questions the user might ask next, based on the conversation. Respond in JSON: {"questions": []}',
    'Suggest 3-5 tags that categorize this chat. Only output a comma-separated list, nothing else.',
    'Write a one-line summary of the conversation so far, under 30 words, with no preamble.',
    "Given the chat history, produce up to 3 web search queries that would help answer the user's last message. Return JSON only.",
    "What is the topic of this conversation? Answer in no more than 5 words and don't explain.",
    'Pick a single emoji that best represents this conversation. Reply with the emoji only.',
    '请根据以上对话生成一个不超过10个字的标题，只返回标题本身。',
    '请为这段对话起一个简短的名字，8个字以内，不要标点。',
    '根据用户的问题生成3个相关的后续问题，以JSON格式返回。',
    '将上述对话总结为一句话摘要，不超过50字，直接输出摘要。',
    '请给这次聊天打上3个标签，只输出标签，用逗号分隔，不要解释。',
    '用户的消息是什么主题？用五个字以内概括，不要其他内容。',
    'Summarize the following chat history in 100 words or less so it can be used as context later. Only return the summary.',
    'Title this chat in 3-5 words. No quotes, no punctuation.',
    'Name this thread based on the first user message. Respond with just the name.',
    'Extract the keywords of this conversation as a JSON array.',
    # Thirteenth session, measured on other frontends' real defaults (66 requests of 14 frontends,
    # collected by a helper; rule 5 caught 49 before): the material named as the prompt, the
    # previous query or the following message; a checkpoint of everything so far; quick replies
    # from the last assistant message; the questions a human would ask; 检索词 for 原问题.
    'Make a concise 3-5 word title with an emoji for the prompt below. RESPOND ONLY WITH THE TITLE TEXT.\n\nPrompt: 周末去哪玩',
    'Here is the query:\n---\nHow do I fix a squeaky door?\n---\nWrite a 3-5 word phrase as a title for the previous query. Respond only with the title.',
    'Give a title in less than 6 words for the following message:\n"""\nUser: how long to boil eggs?\n"""',
    'Stop here and write me a checkpoint of everything so far, with goals and decisions. Only the checkpoint, do not respond to me.',
    'Please help me predict the 3 questions the human would ask next, each under 20 characters, as a JSON array.',
    '结合历史记录，为原问题生成3个不同的检索词，只返回JSON数组。',
    # Second round (62 requests of 20 other applications, blind: 16 recognised before): the title
    # rules as a bullet list, output in a tag, "this session", "tell me a summary".
    '- you will generate a short title based on the first message a user begins a conversation with\n'
    '- ensure it is not more than 80 characters long\n- do not use quotes or colons',
    'You need to generate 4-5 suggestions based on the conversation. Put them inside <suggestions> tags.',
    'Please summarize all prompts and responses from this session. Only include what happened, in order.',
    "Please tell me a short 6 word summary of this conversation's topic. Only respond with the summary.",
    # The request asked as "what would be …"
    'What would be a short and relevant title for this chat? You must strictly answer with only the title, no other '
    'text is allowed.',
]
# Look-alikes a person types: about the conversation without an output constraint, or with one
# but about something else; and personas that mention names, chats and word limits.
PEOPLE = [
    'Can you summarize what we talked about yesterday?',
    '总结一下我们上周聊了什么',
    '给我的小说起个名字，不超过五个字',
    'Write a 5-word title for my blog post about hiking',
    'What was the topic of our conversation last night?',
    'Remember our chat about cats? Give me just the name of the cat breed we discussed.',
    '用一句话总结我们今天的聊天，只说重点',
    '我们的聊天记录可以导出成JSON吗？',
    'Summarize our conversations from last week',
    '给我讲讲上周我们聊天的主题',
    'What did we name the cat in our chat last month?',
    '帮我给这篇文章起个标题，十个字以内',
    'Summarize this article in 100 words or less: The city council met on Monday...',
    'I only want to talk about the conversation we had with my boss, nothing else matters',
    '这段对话让我想起了我们的第一次聊天',
    'Do you remember the title of the book from our conversation? Just tell me the name.',
    "Our chat yesterday was fun. What's your name again?",
    "Please don't summarize, just chat with me about the weekend",
    'keep it under 50 words: what did I tell you about my sister?',
    'Summarize the message my boss sent me in 20 words: we need to talk about your performance',
    'Give me a title for my novel, under 6 words. It is about a lighthouse keeper.',
    'What would be a good title for my essay on grief? Answer with only the title.',
    'Can you predict what my mom will ask me at dinner? keep it under 20 words',
    'Can you summarize our conversation so far? I lost track lol',
    'Describe our first conversation the way you remember it',
    'Summarize the movie we talked about, I forgot the ending',
    'describe the conversation you had with your sister',
    # ending in a colon: what comes next is the person's, not a slot
    '我跟你说：',
    '昨天的事\n你猜怎么着：',
    'My plan for today:\n1. gym\n2. work\nThoughts:',
    '我今天的计划：\n1. 健身\n2. 上班\n你觉得：',
    'This function is supposed to auto-name chats in my app, but it keeps answering instead of giving a title. '
    'The prompt asks for a 3-5 word title.',
]
PERSONAS = [
    'Your name is Mia and you love to chat with the user. Keep replies under 50 words.',
    'You are Mia. Write in the chat like a teenager; your name is Mia. Keep answers under 60 words and never output JSON.',
    '{{char}} is a cheerful barista. Give the conversation a warm tone. Reply with short messages only, no more than 40 words.',
    '你是小月，一个温柔的猫娘。你的名字叫小月，喜欢和主人聊天。每次回复不超过50字，不要使用表情。',
    '你是一个陪伴型AI，负责和用户聊天。请记住对话中的重要信息。回复控制在100字以内，直接回复，不要解释。',
    "You are a helpful assistant. Summarize the user's question before answering it in detail.",
    'Play the character of Aria. Keep the conversation going; give each reply a title in bold. Max 80 words.',
    'You are a poet who writes little verses about the chats you have with the user.',
    'You are Kai, a journalist who writes summaries of the news for your readers and loves to chat.',
    'You are a barista who creates latte art and remembers regulars.',
]
GENERIC = "asks for a title, tags or summary of the chat, for a program"


@pytest.mark.parametrize("prompt", OTHER_FRONTENDS)
def test_other_frontends_title_tag_and_summary_prompts(prompt):
    assert (classify([("user", prompt)]).kind, classify([("user", prompt)]).reason) == ("housekeeping", GENERIC)
    one_shot = [("system", prompt), ("user", "user: 周末想去江边走走。\nassistant: 好呀，记得带伞。")]
    assert classify(one_shot).kind == "housekeeping"


@pytest.mark.parametrize("message", PEOPLE)
def test_people_asking_about_the_chat_or_for_titles_stay_conversation(message):
    assert classify([("user", message)]).kind == "conversation"


@pytest.mark.parametrize("persona", PERSONAS)
def test_a_persona_on_the_first_turn_stays_conversation(persona):
    """No assistant turn yet, so rule 5 reads the system message too: a persona is not a request."""
    assert classify([("system", persona), ("user", "Hi! How are you today?")]).kind == "conversation"


def test_real_chat_lines_are_never_housekeeping():
    """Every line of the recorded Chinese conversations and their questions, and of the recall
    corpora (requests like "总结一下上周的聊天" among them), as the message a frontend sends."""
    root = Path(__file__).resolve().parent.parent
    lines = []
    for path in sorted((root / "bench" / "zh_eval").glob("*.json")):
        for sample in json.loads(path.read_text(encoding="utf-8")):
            conv = sample["conversation"]
            lines += [t["text"] for k, v in conv.items() if k.startswith("session_") and isinstance(v, list) for t in v]
            lines += [q["question"] for q in sample["qa"]]
    for path in sorted((root / "tests" / "data").glob("*.txt")):
        lines += [x.strip() for x in path.read_text(encoding="utf-8").splitlines() if x.strip() and not x.startswith("#")]
    assert len(lines) > 500
    assert [x for x in lines if classify([("user", x)]).kind != "conversation"] == []


@pytest.mark.parametrize(("messages", "why"), CONVERSATION, ids=[w for _, w in CONVERSATION])
def test_look_alikes_stay_conversation(messages, why):
    assert classify(messages).kind == "conversation", why


@pytest.mark.parametrize(("messages", "reason"), HOUSEKEEPING, ids=[r for _, r in HOUSEKEEPING])
def test_housekeeping_shapes(messages, reason):
    decision = classify(messages)
    assert (decision.kind, decision.reason) == ("housekeeping", reason)
    assert decision.reason.isascii()


def test_override_and_config_patterns():
    title = [("user", "### Task:\nGenerate a title")]
    assert classify(title, override="conversation").kind == "conversation"
    assert classify([("user", "hi")], override=" Housekeeping ").kind == "housekeeping"
    with pytest.raises(ServiceError, match="must be 'conversation' or 'housekeeping'"):
        classify([("user", "hi")], override="maybe")
    rules = compile_patterns([r"^\[OOC:", r"生成.*标题"])
    assert classify([("user", "[OOC: what is your model?]")], rules=rules).reason == "config pattern 1"
    assert classify([("user", "请为这段对话生成一个标题")], rules=rules).reason == "config pattern 2"
    with pytest.raises(ConfigError, match=r"housekeeping_patterns\[0\]: '\(' is not a valid regex"):
        compile_patterns(["("])


@pytest.fixture(scope="module")
def svc(tmp_path_factory, embedder):
    data_dir = copy_demo(tmp_path_factory.mktemp("hk"))
    with FakeOpenAIServer() as upstream:
        config = service_config(data_dir, upstream.base_url, token=TOKEN,
                                service={"housekeeping_patterns": [r"^\[OOC:"]})
        with ServiceThread(create_app(config=config, embedder=embedder)) as server:
            yield server, upstream, data_dir


def history(data_dir, user) -> list[str]:
    path = data_dir / "agents/xiaoyue/users" / user / "history.yaml"
    return [m["content"] for m in yaml.safe_load(path.read_text(encoding="utf-8")) or []] if path.exists() else []


@pytest.mark.parametrize(
    ("extra", "headers", "message", "kind", "reason"),
    [({}, {}, "### Task:\nGenerate a concise title", "housekeeping", "open-webui task prompt"),
     ({}, {"X-Kioku-Request": "housekeeping"}, "写一首关于雾的诗", "housekeeping", "explicit"),
     ({"metadata": {"kioku_request": "housekeeping"}}, {}, "写一首关于雨的诗", "housekeeping", "explicit"),
     ({}, {"X-Kioku-Request": "conversation"}, "### Task:\n我真的想聊这个", "conversation", "explicit"),
     ({}, {}, "[OOC: which model are you?]", "housekeeping", "config pattern 1"),
     ({}, {}, "今天雾好大", "conversation", "conversation turn")],
    ids=["builtin", "header", "metadata", "header-forces-conversation", "config-pattern", "plain"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_over_http(svc, extra, headers, message, kind, reason, stream):
    server, upstream, data_dir = svc
    user = f"hk-{abs(hash((message, stream))) % 10**8}"
    before = server.done.count
    r = httpx.post(f"{server.url}/v1/chat/completions", headers={**AUTH, **headers}, timeout=30,
                   json={"model": "xiaoyue", "user": user, "stream": stream,
                         "messages": [{"role": "user", "content": message}], **extra})
    assert r.status_code == 200, r.text
    assert server.done.wait_for(before + 1)
    assert (r.headers["x-kioku-request"], r.headers["x-kioku-request-reason"]) == (kind, reason)
    sent = upstream.requests[-1]["messages"]
    if kind == "housekeeping":
        assert sent == [{"role": "user", "content": message}]  # as the client sent it: no persona, no memory
        assert "x-kioku-turn-id" not in r.headers
        assert history(data_dir, user) == []
    else:
        assert len(sent) > 1 and message in history(data_dir, user)


PROBES = [
    ([("user", "Hi")], False, "housekeeping"),
    ([("user", "test")], False, "housekeeping"),
    ([("user", "你好")], False, "housekeeping"),
    ([("user", "Hello there!")], False, "housekeeping"),
    # A chat frontend streams its turns (Open WebUI's first message has no persona and no history).
    ([("user", "你好")], True, "conversation"),
    ([("user", "Hi")], True, "conversation"),
    # Anything that makes it a conversation: a persona, history, or a message with something to say.
    ([("system", "你是小月。"), ("user", "Hi")], False, "conversation"),
    ([("assistant", "欢迎光临～"), ("user", "Hi")], False, "conversation"),
    ([("user", "我叫阿丽，最喜欢抹茶蛋糕。")], False, "conversation"),
    ([("user", "what did we talk about yesterday?")], False, "conversation"),
]


@pytest.mark.parametrize(("messages", "streamed", "kind"), PROBES,
                         ids=[f"{m[-1][1]}-{'stream' if s else 'plain'}-{len(m)}" for m, s, _ in PROBES])
def test_a_connection_check_is_housekeeping(messages, streamed, kind):
    """SillyTavern's "Test Message" sends {"messages":[{"role":"user","content":"Hi"}],"stream":false}."""
    assert classify(messages, streamed=streamed).kind == kind
