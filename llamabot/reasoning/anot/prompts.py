"""The prompts of the three phases and of the CoT baseline. Text only.

Small models follow a prompt that shows how to reference data and earlier results with one worked example
far better than a one-sentence instruction (facts.md), so phase 2's prompt carries one.
"""

from __future__ import annotations

PHASE1_SYSTEM = """Turn a request into conditions that can be checked on items (you see the items' schema, not \
the items). Each need the request states or implies is one condition, checked by one schema field.

Condition types:
{vocabulary}

JSON fields: conditions [{{id, request_words (the request's words for it), path (a schema field), expected (the \
value that satisfies it, or the keyword), type}}]; logic (AND(...): all must hold, OR(...): one is enough, \
nestable); total_items; message (a short note).

Example: "I'm bringing my dog; live music or a DJ would be great." -> conditions: [{{"id": 1, "request_words": \
"bringing my dog", "path": "attributes.DogsAllowed", "expected": "True", "type": "ATTR"}}, {{"id": 2, \
"request_words": "live music", "path": "attributes.Music.live", "expected": "True", "type": "ATTR"}}, {{"id": 3, \
"request_words": "a DJ", "path": "attributes.Music.dj", "expected": "True", "type": "ATTR"}}], logic: AND(1, OR(2, 3))"""

PHASE1_USER = """Item schema (field paths, types, example values):
{schema}

Number of items: {n_items}

Request: {query}"""

PHASE2_SYSTEM = """You write an LWT script that checks items against conditions. A step is \
(id)=CHECK("path op value"), which lists the items whose value at path compares so (op: ==, !=, <, <=, >, >=; \
missing never matches), or (id)=LLM("prompt"), answered by a model. In both, {(items)}[*][attributes][GoodForKids] \
is every item's value, [reviews][~word] the count of reviews mentioning word; in a prompt, {(c1)} is step c1's \
output. One step per condition lists the matching items; the last step, (final), ranks the top-5. Example:
(c1)=CHECK("{(items)}[*][attributes][GoodForKids] == True")
(c2)=CHECK("{(items)}[*][reviews][~cozy] >= 1")
(final)=LLM("c1={(c1)}, c2={(c2)}. Logic: AND(1, 2). Output top-5: [best, ...]")
Call one tool at a time; call done() when the script is right."""

#: Phase 2's system prompt when it starts from the draft (the default): the draft's steps already show the
#: syntax, so only what the model needs to check and fix them.
PHASE2_SYSTEM_DRAFT = """You check an LWT script against the request's conditions. (id)=CHECK("path op value") \
lists the items whose value at path compares so (missing never matches; [reviews][~word] counts the reviews \
mentioning word); (id)=LLM("prompt") asks a model, {(c1)} being step c1's output. Call one tool at a time; call \
done() when the script is right."""

#: Phase 1's message (its note for phase 2), shown after the conditions when phase 1 wrote one.
PHASE2_NOTE = """
Note from planning: {note}"""

PHASE2_USER_DRAFT = """Conditions:
{conditions}{note}

Draft script for the {n_items} items:
{listing}

If each condition's step checks the right path and value, call done() now. Else fix that step with lwt_set (or \
add one with lwt_insert), then call done()."""

PHASE2_USER_EMPTY = """{conditions}{note}

There are {n_items} items. The script is empty: insert one step per condition and a (final) step, then call done()."""

STEP_SYSTEM = "Answer one step of an evaluation, briefly. When asked for item numbers, end with a list like [2, 5] or []."
