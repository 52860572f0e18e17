"""The prompts of the three phases and of the CoT baseline. Text only.

Small models follow a prompt that shows how to reference data and earlier results with one worked example
far better than a one-sentence instruction (facts.md), so phase 2's prompt carries one.
"""

from __future__ import annotations

PHASE1_SYSTEM = """You turn a request into conditions that can be checked on items. You see the items' schema, not \
the items. Every need the request states or implies is one condition; pick the schema field that checks it. Do not \
look for matching items.

Condition types:
{vocabulary}

Answer with JSON: conditions, a list of {{id, request_words, path, expected, type}} (request_words: the words of the \
request stating the condition; path: a field path from the schema; expected: the value that satisfies it, or the \
keyword to search); logic: AND(...) of the ids that must all hold, OR(...) of ids where one is enough, nested as the \
request says; total_items; message: one short note for the next phase.

Worked example. Request: "I'm bringing my dog and paying in bitcoin; live music or a DJ would be great."
conditions: [{{"id": 1, "request_words": "bringing my dog", "path": "attributes.DogsAllowed", "expected": "True", \
"type": "ATTR"}}, {{"id": 2, "request_words": "paying in bitcoin", "path": "attributes.BusinessAcceptsBitcoin", \
"expected": "True", "type": "ATTR"}}, {{"id": 3, "request_words": "live music", "path": "attributes.Music.live", \
"expected": "True", "type": "ATTR"}}, {{"id": 4, "request_words": "a DJ", "path": "attributes.Music.dj", \
"expected": "True", "type": "ATTR"}}], logic: AND(1, 2, OR(3, 4))."""

PHASE1_USER = """Item schema (field paths, types, example values):
{schema}

Number of items: {n_items}

Request: {query}"""

PHASE2_SYSTEM = """You write an LWT script that checks items against a strategy. A step is (id)=LLM("prompt"). \
In a prompt, {(items)}[*][path] becomes every item's value ("1=True, 2=False, ..."; items are numbered from 1), \
{(items)}[3][path] item 3's value, {(query)} the request, {(c1)} the output of step c1. A path is keys like \
[attributes][GoodForKids]; [reviews][~word] counts the reviews mentioning word. One step per condition outputs the \
matching items as a list; the last step, (final), combines them into the top-5. Example:
(c1)=LLM("GoodForKids: {(items)}[*][attributes][GoodForKids]. Which are True? Output: [indices]")
(c2)=LLM("Reviews mentioning cozy: {(items)}[*][reviews][~cozy]. Which have at least 1? Output: [indices]")
(final)=LLM("c1={(c1)}, c2={(c2)}. Logic: AND(1, 2). Score +1 per condition met. Output top-5: [best, ...]")
Use the tools one call at a time; call done() when the script is right."""

PHASE2_USER_DRAFT = """{strategy}

There are {n_items} items. A draft script was written from the strategy:
{listing}

If every condition has a step with the right path and value, call done() now. Otherwise fix a step with lwt_set \
or add one with lwt_insert, then call done()."""

PHASE2_USER_EMPTY = """{strategy}

There are {n_items} items. The script is empty: insert one step per condition and a (final) step, then call done()."""

STEP_SYSTEM = (
    "You answer one step of an evaluation. Be brief. When asked for item numbers, end with a list such as [2, 5] "
    "(or [] if none)."
)

COT_SYSTEM = (
    "You rank items for a request. Think step by step, briefly: check each item against every condition of the "
    "request. Then, on the last line, output the top-5 item numbers, best first, as a list like [3, 1, 4, 2, 5]."
)

COT_USER = """Request: {query}

Items:
{items}

Which items best match the request? Reason briefly, then end with the top-5 item numbers as a list."""
