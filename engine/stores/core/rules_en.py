"""The offline fact rules for English: what a clause says about the user, as a fact and its slot.

Each row of `RULES` is a pattern and a kind; `FORMS` gives the kind's fact and slot, `SLOTS` the
slot of a fact already in that shape (an LLM's too), so a later statement in the slot updates it.
In a form, {obj} is the last group (cut where the clause goes on), {head} the first of two or more
groups ({Head} capitalised, {heads} as a third-person verb), {low} and {key} the object
lower-cased and without a leading eating / watching verb.
"""

from __future__ import annotations

import re

from engine.stores.core.statement import Statement

_I_AM = r"i(?:'m| am|m)"

# Lists that a pattern names rather than matches loosely: a bare "I have X" or "I'm X" is mostly no
# fact about oneself ("I have a question", "I'm so tired").
CONDITIONS = (
    r"asthma|diabetes|type [12] diabetes|adhd|autism|anxiety|depression|epilepsy|migraines|insomnia|celiac(?: disease)?|"
    r"arthritis|ibs|ocd|ptsd|dyslexia|eczema|high blood pressure|a heart condition|a peanut allergy|allergies|"
    r"hay fever|a bad back|bipolar(?: disorder)?|chronic pain|lupus|hypothyroidism|hyperthyroidism|pcos|"
    r"endometriosis|tinnitus|scoliosis|sleep apnea|a pacemaker|a food allergy|a nut allergy|a gluten intolerance"
)
STATUS = r"married|single|divorced|engaged|widowed|separated"
DIET = r"vegetarian|vegan|pescatarian|lactose intolerant|gluten[- ]free|teetotal|sober"
TRAITS = (
    r"nearsighted|short-sighted|farsighted|long-sighted|left-handed|right-handed|ambidextrous|colou?r-?blind|"
    r"deaf(?: in (?:my|one) \w+ ear)?|hard of hearing|introverted|extroverted|an introvert|an extrovert|"
    r"autistic|diabetic|pregnant|adopted|an only child|a twin|bilingual|trilingual|muslim|christian|catholic|"
    r"jewish|buddhist|hindu|sikh|atheist|agnostic|gay|lesbian|bisexual|trans|transgender|non-?binary|asexual|"
    r"retired|unemployed|self-employed|a night owl|a morning person|homeschooled|shy|outgoing|"
    r"an? (?:guy|girl|man|woman|dude|boy) (?:irl|in real life)"
)
FAMILY = (
    r"wife|husband|boyfriend|girlfriend|partner|fianc[ée]e?|son|daughter|kids?|children|mom|mum|mother|dad|"
    r"father|parents|brother|sister|grandma|grandpa|grandmother|grandfather|grandson|granddaughter|twin|dog|cat|"
    r"puppy|kitten|mum|stepdad|stepmom|roommate"
)
SKILLS = r"swim|drive|cook|dance|sing|ride a bike|skate|ski|read music|whistle|code|knit|sew"
_HABIT_VERBS = r"watch|play|eat|drink|smoke|read|listen to|like|love|hate|do"
HOBBIES = r"knit|crochet|sew|paint|draw|garden|surf|climb|boulder|run|swim|cycle|hike|skate|ski|fish|bake|cook|sing|dance|write|game"
AIDS = r"a wheelchair|a cane|hearing aids?|a hearing aid|glasses|contacts|an inhaler|a walker|crutches|a cpap|insulin"
_SOFT = r"(?:really |totally |absolutely |just |kind of |kinda |so |very |super |pretty |a bit |mostly |literally )?"

RULES: list[tuple[re.Pattern[str], str]] = [(re.compile(p, re.I), kind) for p, kind in [
    (rf"\bi (?:don't|do not|dont) (?:really )?({_HABIT_VERBS}) (.+?) any ?more\b", "no_longer"),
    (rf"\bi no longer ({_HABIT_VERBS}) (.+)", "no_longer"),
    (r"\bi (?:don't|do not|dont) (?:really )?(like|love) (.+)", "not"),
    (rf"\bi {_SOFT}(like|love|enjoy|hate|dislike|can't stand|adore|despise) (.+)", "pref"),
    (r"\bi(?:'ve| have) never (liked|loved|enjoyed) (.+)", "never_liked"),
    (r"\bi used to (love|like|enjoy) (.+?) but\b", "used_to"),
    (r"\bi (?:can't|cannot|cant) (handle|eat|tolerate|digest) (.+)", "cannot_eat"),
    (r"\bi (?:don't|do not|dont|never) (drink alcohol|drink coffee|eat meat|eat pork|eat beef|eat fish|eat dairy|drink|smoke)\b", "never"),
    (rf"\bi (?:can't|cannot|cant) ({SKILLS})\b", "cannot"),
    (r"\bmy (?:all[- ]time |absolute |very )?fav(?:ou?rite)? (.+?) (?:is|are|has to be|would be|'s)(?: probably| definitely| still)? (.+)", "fav"),
    (r"^(.+?) (?:is|are) (?:definitely |totally |probably )?my (?:all[- ]time |absolute )?fav(?:ou?rite)? (\w+(?: \w+)?)", "fav_reversed"),
    (rf"\b{_I_AM} {_SOFT}(?:severely |deathly )?allergic to (.+)", "allergy"),
    (rf"\bi(?:'m| am|m|'ve been| have been) (?:a |an |strictly |fully |now |currently |been )?({DIET})\b", "diet"),
    (r"\bi (?:keep|eat) (kosher|halal)\b", "diet"),
    (rf"\b{_I_AM} (?:now |happily |recently |newly |still )?({STATUS})\b", "status"),
    (rf"\b{_I_AM} {_SOFT}({TRAITS})\b", "trait"),
    (rf"\b(?:{_I_AM}|i come) (?:originally )?from (.+)", "from"),
    (r"\b(?:i grew up|born and raised) in (.+)", "grew_up"),
    (r"\bmy birthday(?: is|'s) (?:on |in )?(.+)", "birthday"),
    (r"\bmy (?:native|first|mother) (?:language|tongue) is (.+)", "native"),
    (r"\bmy pronouns are (.+)", "pronouns"),
    (r"\bi (?:can )?speak (.+)", "speaks"),
    (r"\bi(?:'m| am|m|'ve been| have been) (?:currently |slowly )?learning (.+)", "learning"),
    (rf"\b(?:{_I_AM} )?(?:study|studying|major in|majoring in) (.+)", "study"),
    (r"\bi (?:studied|majored in) (.+)", "studied"),
    (rf"\b{_I_AM} doing (?:my |a )?(phd|masters?|master's|degree|bachelor'?s?) (?:degree )?(.+)", "degree"),
    (r"\bi(?: play|'ve (?:been )?play(?:ed|ing)| have (?:been )?play(?:ed|ing)) (?:the )?(.+)", "plays"),
    (rf"\b{_I_AM} {_SOFT}(?:afraid|scared|terrified) of (.+)", "fear"),
    (r"\bmy (?:biggest |greatest |worst )?fear is (.+)", "fear"),
    (rf"\b{_I_AM} {_SOFT}(?:into|a (?:big |huge )?fan of|obsessed with|addicted to) (.+)", "into"),
    (rf"\bi(?: have|'ve)(?: got)? ({CONDITIONS})\b", "has"),
    (rf"\bmy ({CONDITIONS})\b", "has"),
    (r"\bi suffer from (.+)", "has"),
    (rf"\bi use ({AIDS})\b", "uses"),
    (r"\bi collect (.+)", "collects"),
    (rf"\bi ({HOBBIES})(?=\s*(?:$|[.,!]|a lot\b|every\b|regularly\b|competitively\b|for fun\b|as a hobby\b|daily\b|weekly\b))", "does"),
    (r"\bi do (\w+ing)\b", "does_ing"),
    (r"\bi(?: just)? turned (\d+)\b", "age"),
    (rf"\bmy ({FAMILY})(?:'s name is|'s called| is called| is named) (.+)", "named"),
    (rf"\bmy ({FAMILY}) (lives? in|lives? with|works? at|works? as|works? in|works? for) (.+)", "kin_does"),
    (rf"\bmy ({FAMILY}) are (divorced|separated|married|retired)\b", "kin_are"),
    (rf"\bmy ({FAMILY})(?: is|'s) (an? .+)", "kin_is"),
    (r"\bmy (?:\w+ )?(?:goal|dream|plan)(?: for| this| next)?(?: \w+)? is to (.+)", "goal"),
    (r"\bi(?:'ve| have)? always wanted to (?:be|become) (.+)", "wants_to_be"),
    (rf"\b{_I_AM} trying to (lose|quit|learn|save|get into|get) (.+)", "trying"),
    (r"\bmy name is (.+)", "name"),
    (r"\bcall me (.+)", "name"),
    (r"\bi (?:now |currently )?live in (.+)", "live"),
    (rf"\b{_I_AM} (?:now |currently )?(?:living|based) in (.+)", "live"),
    (r"\bi(?: have|'ve)? (?:just )?moved to (.+)", "live"),
    (r"\bi live with (.+)", "lives_with"),
    (r"\bi live (alone|by myself|on my own)\b", "lives_with"),
    (r"\bi(?:'ve| have) (?:been )?(?:living|lived|been) in (.+)", "live"),
    (r"\b(?:i|we) (?:just )?bought a (?:house|home|place|flat|condo|apartment) in (.+)", "live"),
    (r"\bi(?:'m| am|m) (\d{1,2})(?: years old| yo| y/o)?(?=\s*(?:$|[,.!]|and\b|so\b|but\b|don't\b|lol\b|btw\b))", "age"),
    (r"\bi(?:'m| am|m) (\d'\s?\d{1,2}\"?|\d\.\d{1,2} ?m|1\d\d ?cm)", "height"),
    (r"\bi (work|drive) (?:\w+ ){0,3}?(at|for|as|in) (.+)", "work"),
    (r"\bi drive (an? .+|my .+)", "drives"),
    (r"\bi teach (.+)", "teaches"),
    (r"\bi own (an? .+|my own .+)", "owns"),
    (r"(?:\b(?:i|we)(?: have|'ve)(?: got)?|^got) (an? .+|two .+|three .+|four .+|\d+ .+)", "has"),
    (rf"\b{_I_AM} (?:actually |really |just |also |still )?(an? .+)", "is"),
]]
# "Hi, I'm Priya": a name that opens a greeting, capitalised as a name is; "my husband Dave", "my
# daughter Emma": one of the family named beside them; "I am Korean", "I'm Brazilian".
GREETING_NAME = re.compile(r"(?i:\b(?:hi|hello|hey)\b[!,.]*\s+i'?m\s+)([A-Z][a-z]+)(?=\s*(?:[,.!]|and\b|$))")
KIN_NAMED = re.compile(rf"(?i:\bmy ({FAMILY}) )([A-Z][a-z]+)\b(?= and\b| is\b| just\b|,|\.|$| \()")
NATIONALITY = re.compile(r"(?i:\bi(?:'m| am) )([A-Z][a-z]+(?:an|ese|ish|ian|ch|i))\b(?!\s+(?:food|restaurant|movies?|music|class|lessons?))")

_VERB_FACT = {"like": "Likes", "love": "Loves", "enjoy": "Enjoys", "hate": "Hates", "dislike": "Dislikes",
              "can't stand": "Can't stand", "adore": "Adores", "despise": "Despises"}

FORMS: dict[str, tuple[str, str]] = {
    "no_longer": ("No longer {heads} {obj}", "pref:{key}"),
    "not": ("Doesn't {head} {obj}", "pref:{key}"),
    "pref": ("{Verb} {obj}", "pref:{key}"),
    "cannot_eat": ("Can't {head} {obj}", "pref:{key}"),
    "never": ("Doesn't {low}", "pref:{key}"),
    "cannot": ("Can't {low}", "can:{low}"),
    "fav": ("Favorite {head} is {obj}", "fav:{head}"),
    "fav_reversed": ("Favorite {head} is {obj}", "fav:{head}"),
    "allergy": ("Is allergic to {obj}", "allergy:{low}"),
    "diet": ("Is {low}", "diet"),
    "status": ("Is {low}", "status"),
    "trait": ("Is {low}", "is:{low}"),
    "from": ("Is from {obj}", "from"),
    "grew_up": ("Grew up in {obj}", "from"),
    "birthday": ("Birthday is {obj}", "birthday"),
    "pronouns": ("Pronouns are {obj}", "pronouns"),
    "speaks": ("Speaks {obj}", "speaks:{low}"),
    "learning": ("Is learning {obj}", "learning:{low}"),
    "study": ("Studies {obj}", "study"),
    "studied": ("Studied {obj}", "study"),
    "degree": ("Is doing a {head} {obj}", "study"),
    "plays": ("Plays {obj}", "plays:{low}"),
    "fear": ("Is afraid of {obj}", "fear:{low}"),
    "into": ("Is into {obj}", "pref:{key}"),
    "has": ("Has {obj}", "has:{low}"),
    "never_liked": ("Doesn't like {obj}", "pref:{key}"),
    "used_to": ("Used to {head} {obj}", "pref:{key}"),
    "native": ("Native language is {obj}", "native"),
    "kin_are": ("{Head} are {obj}", "kin:{head}:is"),
    "uses": ("Uses {obj}", "uses:{low}"),
    "collects": ("Collects {obj}", "collects:{low}"),
    "does": ("{Objs}", "does:{low}"),
    "does_ing": ("Does {obj}", "does:{low}"),
    "height": ("Is {obj} tall", "height"),
    "drives": ("Drives {obj}", "car"),
    "age": ("Is {obj} years old", "age"),
    "named": ("{Head}'s name is {obj}", "kin:{head}:name"),
    "kin_does": ("{Head} {mid} {obj}", "kin:{head}:{mid}"),
    "kin_is": ("{Head} is {obj}", "kin:{head}:is"),
    "goal": ("Goal is to {obj}", "goal:{low}"),
    "wants_to_be": ("Wants to be {obj}", "goal:{low}"),
    "trying": ("Is trying to {head} {obj}", "goal:{head} {low}"),
    "name": ("Name is {obj}", "name"),
    "live": ("Lives in {obj}", "live"),
    "lives_with": ("Lives with {obj}", "lives_with"),
    "work": ("{Head}s {mid} {obj}", "work"),
    "teaches": ("Teaches {obj}", "work"),
    "owns": ("Owns {obj}", "owns:{low}"),
    "is": ("Is {obj}", "is:{low}"),
}

# The slot of a fact in one of the shapes above (an LLM's "User is allergic to peanuts" too); the
# group, where there is one, is the slot's object, lower-cased (a liking's as `key` makes it).
SLOTS: list[tuple[re.Pattern[str], str]] = [(re.compile(p, re.I), kind) for p, kind in [
    (r"^(?:no longer \w+s|doesn't like|doesn't love|likes?|loves?|enjoys?|hates?|dislikes?|can't stand|adores?|"
     r"despises?|can't (?:handle|eat|tolerate|digest)|is into|used to (?:love|like|enjoy)) (.+)$", "pref"),
    (rf"^doesn't ({_HABIT_VERBS}|eat meat|eat pork|eat beef|eat fish|eat dairy|drink coffee|drink alcohol)$", "pref"),
    (rf"^can't ({SKILLS})$", "can"),
    (r"^favou?rite (.+?) is ", "fav"),
    (r"^is allergic to (.+)$", "allergy"),
    (rf"^is (?:{DIET}|kosher|halal)$", "diet"),
    (rf"^is (?:{STATUS})$", "status"),
    (r"^(?:is from|grew up in) ", "from"),
    (r"^birthday is ", "birthday"),
    (r"^pronouns are ", "pronouns"),
    (r"^speaks (.+)$", "speaks"),
    (r"^is learning (.+)$", "learning"),
    (r"^(?:studies|studied|is doing a) ", "study"),
    (r"^plays (.+)$", "plays"),
    (r"^is afraid of (.+)$", "fear"),
    (r"^name is ", "name"),
    (r"^lives in ", "live"),
    (r"^lives with ", "lives_with"),
    (r"^is \d+ years old$", "age"),
    (r"^(?:works|drives) (?:at|for|as|in) |^teaches ", "work"),
    (r"^owns (.+)$", "owns"),
    (r"^native language is ", "native"),
    (r"^uses (.+)$", "uses"),
    (r"^collects (.+)$", "collects"),
    (r"^does (.+)$", "does"),
    (rf"^({HOBBIES})e?s$", "does"),
    (r"^is .+ tall$", "height"),
    (r"^drives ", "car"),
    (r"^has (.+)$", "has"),
    (r"^(?:goal is to|wants to be|is trying to) (.+)$", "goal"),
    (rf"^is ((?:{TRAITS})|an? .+)$", "is"),
    (r"^is [a-z]+(?:an|ese|ish|ian|ch|i)$", "nationality"),
]]
_KIN_SLOT = re.compile(rf"^({FAMILY})(?:'s name is| is| are| (lives? in|lives? with|works? at|works? as|works? in|works? for)) ", re.I)

_TAIL = re.compile(r"\s+(?:now|anymore|any more|too|as well|though|either|originally|lol|haha|tbh|btw|actually)$", re.I)
# Where the object ends though the clause goes on ("allergic to peanuts so no satay for me").
_CLAUSE_END = re.compile(r"\s+(?:so|but|because|cause|cuz|coz|which|since|when|if|while|whilst|although|for (?:about |like )?\d+|"
                         r"and (?:i|i'm|im|my|it|that|so)|lol|haha)\b|\s+[-–—(]", re.I)
# What an object is when the clause is no fact about the user ("I love that idea", "I love you", "I
# play it safe", "I speak my mind", "I have a question").
_NOT_AN_OBJECT = re.compile(r"^(?:that|this|it|these|those|your|you|them|him|her|how|when|what|the way|my mind|up|"
                            r"out|along|around|with|to|for|about|the truth|nice|dumb|games? with|a (?:bit|little|lot|tad)\b)\b",
                            re.I)
# A state of the moment, not of the person ("I'm a mess today").
_TRANSIENT = re.compile(r"\b(?:today|tonight|right now|this morning|this afternoon|this evening|at the moment|rn|atm)\b", re.I)
# How people text "I'm", "I've", "don't", "can't" without the apostrophe.
_TEXTED_AS = {"im": "i'm", "ive": "i've", "dont": "don't", "cant": "can't", "didnt": "didn't", "doesnt": "doesn't"}
_TEXTED = re.compile(r"\b(?:im|ive|dont|cant|didnt|doesnt)\b", re.I)
_NOT_A_NAME = re.compile(r"^(?:on|in|at|not|also|already|the|down|written|spelled|misspelled)\b", re.I)
_OBJECT_KINDS = {"pref", "not", "no_longer", "plays", "speaks", "into", "is", "has", "learning", "cannot_eat"}
_NOT_A_POSSESSION = re.compile(
    r"^an? (?:question|idea|headache|cold|fever|meeting|date|test|exam|feeling|problem|plan|suggestion|moment|minute|"
    r"second|long day|busy day|good day|bad day|favou?r|request|quick question|doubt|call|appointment|deadline|lot)\b",
    re.I)


def _third_person(verb: str) -> str:
    head, _, rest = verb.partition(" ")
    head = head + "es" if head.endswith(("ch", "sh", "s", "x", "o")) else head + "s"
    return f"{head} {rest}".strip()


def statement(clause: str) -> Statement | None:
    """The fact one English clause tells about the user, or None."""
    clause = _TEXTED.sub(lambda m: _TEXTED_AS[m.group().lower()], clause.replace("\u2019", "'"))  # I’m, im, ive
    greeting = GREETING_NAME.search(clause)
    if greeting:
        return Statement(f"Name is {greeting.group(1)}", "name")
    kin = KIN_NAMED.search(clause)
    if kin:
        who = kin.group(1).lower()
        return Statement(f"{who.capitalize()}'s name is {kin.group(2)}", f"kin:{who}:name")
    nationality = NATIONALITY.search(clause)
    if nationality:
        return Statement(f"Is {nationality.group(1)}", "nationality")
    for pattern, kind in RULES:
        match = pattern.search(clause)
        if not match:
            continue
        groups = [g or "" for g in match.groups()]
        head, obj = (groups[1], groups[0]) if kind == "fav_reversed" else (groups[0] if len(groups) > 1 else "", groups[-1])
        mid = groups[1].lower() if len(groups) > 2 else ""
        obj = _CLAUSE_END.split(obj.strip(), 1)[0].strip()
        if len(obj) > 60 or kind == "name":  # a long clause goes on after a comma ("a farmer, we grow …")
            obj = obj.split(",", 1)[0]
        obj = _TAIL.sub("", obj.strip()).strip(" .!,")
        if not obj or len(obj) > 60 or _TRANSIENT.search(obj):
            return None
        if kind in _OBJECT_KINDS and (_NOT_AN_OBJECT.match(obj) or _NOT_A_POSSESSION.match(obj)):
            return None
        if kind == "name" and _NOT_A_NAME.match(obj):
            return None
        fields = {
            "obj": obj, "low": obj.lower(), "key": key(obj), "head": head.lower(),
            "Head": head[:1].upper() + head[1:].lower(), "heads": _third_person(head.lower()), "mid": mid,
            "Verb": _VERB_FACT.get(head.lower(), ""), "Objs": _third_person(obj.lower()).capitalize(),
        }
        text, slot = FORMS[kind]
        return Statement(text.format(**fields), slot.format(**fields))
    return None


def key(obj: str) -> str:
    """A liking's object as its slot names it: without a leading eating / watching verb."""
    return re.sub(r"^(?:eating|to eat|drinking|watching|playing|eat|drink)\s+", "", obj.lower()).strip()


def kin_slot(fact: str) -> str | None:
    """The slot of a fact about one of the family (`kin:<who>:<what>`), else None."""
    kin = _KIN_SLOT.match(fact)
    if kin:
        return f"kin:{kin.group(1).lower()}:{(kin.group(2) or ('name' if 'name' in kin.group(0) else 'is')).lower()}"
    return None
