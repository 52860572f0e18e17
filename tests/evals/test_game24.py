"""The Game-of-24 checker, step bookkeeping and prompts (TOT-G24-*)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from fractions import Fraction

import pytest

from llamabot.evals.game24.check import (
    ExpressionError,
    PuzzleError,
    check_game24,
    evaluate_expression,
    parse_puzzle,
)
from llamabot.evals.game24.prompts import Game24Prompts
from llamabot.evals.game24.steps import (
    expression_from_steps,
    extract_answer,
    is_solution_path,
    numbers_left,
    parse_step,
)
from llamabot.models.scripted import json_reply
from llamabot.reasoning.tot.messages import EvaluateThoughts, GenerateThoughts, ThoughtEntry


@pytest.mark.parametrize(
    ("puzzle", "expression"),
    [
        ("4 9 10 13", "(13 - 9) * (10 - 4)"),
        ("4 9 10 13", "(13-9)*(10-4) = 24"),
        ("1 1 4 6", "4 * 6 * 1 * 1"),
        ("1 1 4 6", "6 * 4 / 1 / 1"),
        ("3 3 8 8", "8 / (3 - 8 / 3)"),  # needs exact fractions: 8 / (1/3)
        ("1 5 5 5", "5 * (5 - 1 / 5)"),
        ("4 9 10 13", "(13 − 9) × (10 − 4)"),  # unicode operators
        ("4 9 10 13", "(13 − 9) × (10 − 4) = 24"),
        ("2 2 10 10", "2 + 2 + 10 + 10"),
    ],
)
def test_tot_g24_010_a_right_solution_checks(puzzle, expression):
    assert check_game24(puzzle, expression) is True


@pytest.mark.parametrize(
    ("puzzle", "expression"),
    [
        ("4 9 10 13", "(13 - 9) * (10 + 4)"),  # 56
        ("4 9 10 13", "13 + 9 + 10 - 4"),  # 28
        ("3 3 8 8", "8 / 3 * 8 + 3"),  # not exactly 24 (float rounding would fool a float checker)
        ("4 9 10 13", "(13 - 9) * (10 - 4) = 25"),
    ],
)
def test_tot_g24_020_a_wrong_value_does_not_check(puzzle, expression):
    assert check_game24(puzzle, expression) is False


@pytest.mark.parametrize(
    "expression",
    ["4 * 6", "(13 - 9) * (10 - 4) * 1", "(13 - 13) + 24", "6 * 4 * 1 * 1", "(12 - 9) * (10 - 2)"],
)
def test_tot_g24_030_numbers_must_equal_the_puzzles_as_a_multiset(expression):
    assert check_game24("4 9 10 13", expression) is False


def test_tot_g24_030_a_repeated_number_must_appear_as_often_as_in_the_puzzle():
    assert check_game24("1 1 4 6", "1 * 4 * 6 * 1") is True
    assert check_game24("1 1 4 6", "1 * 4 * 6") is False
    assert check_game24("1 4 6", "1 * 1 * 4 * 6") is False


def test_tot_g24_040_division_by_zero_is_wrong_not_a_crash():
    assert check_game24("1 1 4 6", "4 * 6 / (1 - 1)") is False
    with pytest.raises(ExpressionError, match="division by zero"):
        evaluate_expression("4 / (1 - 1)")


@pytest.mark.parametrize(
    "expression",
    ["", "   ", "(13 - 9) * (10 - 4", "13 - 9) * (10 - 4)", "13 9 10 4", "13 - - 9", "-4 + 28", "2.5 * 4",
     "13 ** 2", "x * 24", "__import__('os').system('echo hacked')", "(" * 100 + "24" + ")" * 100, "9" * 600,
     "(13 - 9) * (10 - 4) = 24 = 24", None],
)
def test_tot_g24_050_malformed_expressions_are_wrong_and_never_executed(expression):
    assert check_game24("4 9 10 13", expression) is False


def test_tot_g24_050_errors_name_what_and_where():
    with pytest.raises(ExpressionError, match=r"unexpected character 'x' at position 4"):
        evaluate_expression("4 * x")
    with pytest.raises(ExpressionError, match="expected '\\)' at the end"):
        evaluate_expression("(1 + 2")
    assert evaluate_expression("(8 / 3) * 9").value == Fraction(24)
    assert evaluate_expression("1 + 2 * 3 - 4 / 2").numbers == (1, 2, 3, 4, 2)


@pytest.mark.parametrize("puzzle", ["", "4 9 x 13", "4.5 9 10 13", "four nine"])
def test_tot_g24_060_a_malformed_puzzle_raises_puzzle_error(puzzle):
    with pytest.raises(PuzzleError, match="whole numbers"):
        check_game24(puzzle, "24")
    assert parse_puzzle("4, 9, 10, 13") == (4, 9, 10, 13)


def test_tot_g24_070_steps_track_the_numbers_left_and_build_the_expression():
    steps = ["13 - 9 = 4 (left: 4 4 10)", "Step 2: 10 - 4 = 6", "4 × 6 = 24"]
    assert parse_step("8/4=2").op == "/" and parse_step("no step") is None
    assert numbers_left("4 9 10 13", steps[:1]) == (Fraction(4), Fraction(10), Fraction(4))
    assert numbers_left("4 9 10 13", ["13 - 7 = 6"]) is None  # 7 is not left
    assert expression_from_steps("4 9 10 13", steps) == "(13 - 9) * (10 - 4)"
    assert is_solution_path("4 9 10 13", steps)
    assert expression_from_steps("4 9 10 13", steps[:2]) is None  # two numbers still left
    wrong = ["9 + 10 = 20", "20 + 4 = 24", "24 * 13 = 24"]  # claims 24 at the end; the expression is 299
    assert numbers_left("4 9 10 13", wrong) == (Fraction(24),) and not is_solution_path("4 9 10 13", wrong)


def test_tot_g24_070_extract_answer_reads_the_answer_line_or_the_steps():
    assert extract_answer("Steps...\nAnswer: (6 - 4) * (4 + 8) = 24.", "4 4 6 8") == "(6 - 4) * (4 + 8) = 24"
    cot = "4 + 8 = 12 (left: 4 6 12)\n6 - 4 = 2 (left: 2 12)\n2 * 12 = 24 (left: 24)"
    assert check_game24("4 4 6 8", extract_answer(cot, "4 4 6 8"))
    assert extract_answer("I give up", "4 4 6 8") is None and extract_answer(None, "1 2 3 4") is None


def test_tot_g24_080_the_game_prompts_show_the_numbers_left_and_compose_the_answer():
    prompts = Game24Prompts()
    generate = prompts.generation_user(GenerateThoughts("c", "n1", "4 9 10 13", ("13 - 9 = 4",), 3))
    assert "Numbers: 4 9 10 13" in generate and "13 - 9 = 4" in generate and "Numbers left: 4 10 4" in generate
    evaluate = prompts.evaluation_user(EvaluateThoughts(
        "c", "n1", "4 9 10 13", ("13 - 9 = 4",), (ThoughtEntry("t1", "10 - 4 = 6"), ThoughtEntry("t2", "7 + 1 = 8"))))
    assert "t1: 10 - 4 = 6 -> left: 4 6" in evaluate and "t2: 7 + 1 = 8 -> not a valid step" in evaluate
    assert "Numbers: 4 9 10 13" in evaluate and "13 - 9 = 4" in evaluate  # the evaluator sees problem and path
    last = prompts.evaluation_user(EvaluateThoughts(
        "c", "n3", "4 9 10 13", ("13 - 9 = 4", "10 - 4 = 6"),
        (ThoughtEntry("t1", "4 * 6 = 24"), ThoughtEntry("t2", "4 * 6 = 25"), ThoughtEntry("t3", "6 - 4 = 2"))))
    assert "t1: 4 * 6 = 24 -> left: 24 (the last number, it is 24)" in last
    assert "t2: 4 * 6 = 25 -> left: 25 (the last number, not 24)" in last  # the claim is shown, not checked
    assert "last two numbers" in prompts.generation_user(
        GenerateThoughts("c", "n2", "4 9 10 13", ("13 - 9 = 4", "10 - 4 = 6"), 3))
    assert prompts.system_prompt("generation") == prompts.system_prompt("evaluation")  # a shared cached prefix
    assert prompts.answer("4 9 10 13", ("13 - 9 = 4", "10 - 4 = 6", "4 * 6 = 24")) == "(13 - 9) * (10 - 4)"


def test_tot_g24_085_proposals_are_alternatives_and_steps_are_shown_as_the_game_reads_them():
    prompts = Game24Prompts()
    # The model's own "(left: ...)" notes are wrong here; the prompts show the numbers the game computed.
    path = ("13 - 9 = 4 (left: 4 13)", "10 - 4 = 6 (left: 6)")
    generate = prompts.generation_user(GenerateThoughts("c", "n2", "4 9 10 13", path, 5))
    assert "13 - 9 = 4 (left: 4 10 4)" in generate and "10 - 4 = 6 (left: 4 6)" in generate
    assert "(left: 4 13)" not in generate and "(left: 6)\n" not in generate
    assert "Propose 5 different possible next steps" in generate and "alternatives" in generate
    assert "Numbers left: 4 6" in generate
    evaluate = prompts.evaluation_user(EvaluateThoughts(
        "c", "n2", "4 9 10 13", path[:1], (ThoughtEntry("t1", "10 - 4 = 6 (left: 99)"), ThoughtEntry("t2", "nonsense"))))
    assert "t1: 10 - 4 = 6 -> left: 4 6" in evaluate and "(left: 99)" not in evaluate
    assert "t2: nonsense -> not a valid step" in evaluate  # unreadable text is shown as it is
    # The full system prompt's example of alternatives: every step starts from the same four numbers.
    assert "Possible next steps for the numbers 4 4 6 8" in Game24Prompts(brief=False).system_prompt("generation")


def test_tot_g24_086_with_tries_the_evaluator_writes_what_it_tries_before_each_score():
    from llamabot.reasoning.tot.messages import CallLLMStream
    from llamabot.reasoning.tot.parsing import parse_scores

    directive = EvaluateThoughts("c", "n2", "4 9 10 13", ("13 - 9 = 4",),
                                 (ThoughtEntry("t1", "10 - 4 = 6"), ThoughtEntry("t2", "4 + 4 = 8")))
    plain, tries = Game24Prompts(last_results=False), Game24Prompts(tries=True, last_results=False)
    assert "first try to make 24" in tries.evaluation_user(directive)
    assert "first try" not in plain.evaluation_user(directive)
    schema = tries.response_format(directive)["json_schema"]["schema"]["properties"]["scores"]
    assert schema["required"] == ["t1", "t2"]
    assert list(schema["properties"]["t1"]["properties"]) == ["try", "score"]  # the try comes before the score
    assert plain.response_format(directive)["json_schema"]["name"] == "tot_scores"  # off: bare scores, as before
    assert '"try"' in tries.repair_user(CallLLMStream("c", "evaluation", directive, "x", "not JSON"))
    reply = '{"scores": {"t1": {"try": "4 * 6 = 24", "score": 1}, "t2": {"try": "8 + 10 = 18", "score": 0}}}'
    assert parse_scores(reply, directive.thoughts) == ({"t1": 1.0, "t2": 0.0}, "json")
    assert tries.prompt_texts() != plain.prompt_texts()  # a report's prompt version tells the two apart


def test_tot_g24_087_with_last_results_a_two_number_candidate_is_scored_by_the_results_the_evaluator_writes():
    from llamabot.reasoning.tot.messages import CallLLMStream
    from llamabot.reasoning.tot.parsing import parse_scores

    # after 5 + 9 = 14 the numbers left are 1 11 14: each candidate leaves two numbers
    directive = EvaluateThoughts("c", "n2", "1 5 9 11", ("5 + 9 = 14",),
                                 (ThoughtEntry("t1", "11 - 1 = 10"), ThoughtEntry("t2", "11 * 1 = 11")))
    plain, results = Game24Prompts(last_results=False), Game24Prompts(brief=False)  # the results are the default
    text = results.evaluation_user(directive)
    assert "write instead their sum, difference" in text and "write instead" not in plain.evaluation_user(directive)
    schema = results.response_format(directive)["json_schema"]["schema"]["properties"]["scores"]
    assert list(schema["properties"]["t1"]["properties"]) == ["sum", "difference", "product", "quotient"]
    # Each result is held to the two numbers the candidate leaves, the larger first (the model writes the value:
    # asked freely, it wrote the results of other numbers, "14 + 11 = 25" for 1 25).
    total, quotient = (schema["properties"]["t1"]["properties"][k]["pattern"] for k in ("sum", "quotient"))
    assert re.fullmatch(total, "14 + 10 = 24") and re.fullmatch(quotient, "14 / 10 = 1.4")
    assert not re.fullmatch(total, "10 + 14 = 24") and not re.fullmatch(total, "14 + 11 = 25")
    assert not re.fullmatch(total, "14 * 10 = 140") and not re.fullmatch(quotient, "14 / 10 = 1.42857142")
    assert '"t1": {"sum": "14 + 10 = <value>"' in text
    assert '"sum"' in results.repair_user(CallLLMStream("c", "evaluation", directive, "x", "not JSON"))
    # The score is what the evaluator's own results say: one of them is 24, or none is. Its arithmetic is taken
    # as written (a wrong 24 still scores 1: nothing is recomputed).
    reply = ('{"scores": {"t1": {"sum": "14 + 10 = 24", "difference": "14 - 10 = 4", "product": "14 * 10 = 140", '
             '"quotient": "14 / 10 = 1.4"}, "t2": {"sum": "14 + 11 = 25", "difference": "14 - 11 = 3", '
             '"product": "14 * 11 = 154", "quotient": "14 / 11 = 1.27"}}}')
    assert parse_scores(results.read_reply(directive, reply), directive.thoughts) == ({"t1": 1.0, "t2": 0.0}, "json")
    wrong = reply.replace("14 * 11 = 154", "14 * 11 = 24")
    assert parse_scores(results.read_reply(directive, wrong), directive.thoughts)[0] == {"t1": 1.0, "t2": 1.0}
    assert results.read_reply(directive, "not JSON") == "not JSON"  # the machine's repair path reads it as before
    assert plain.read_reply(directive, reply) == reply
    # Candidates that leave three numbers (or one) keep a bare score, in the same reply.
    first = EvaluateThoughts("c", "n0", "1 5 9 11", (), (ThoughtEntry("t1", "5 + 9 = 14"),))
    assert results.response_format(first) == plain.response_format(first)
    assert results.read_reply(first, '{"scores": {"t1": 0.5}}') == '{"scores": {"t1": 0.5}}'
    assert results.prompt_texts() != plain.prompt_texts()  # a report's prompt version tells the two apart


def _results_model(request):
    """The oracle, except that a candidate leaving two numbers gets its four results (right arithmetic)."""
    from tests.reasoning.tot.helpers import game24_oracle, schema_name

    if request.response_format is None or schema_name(request) in ("tot_thoughts", "tot_pair_steps"):
        return game24_oracle(request)
    entries = request.response_format["json_schema"]["schema"]["properties"]["scores"]["properties"]
    scores = json.loads(game24_oracle(request).content)["scores"]
    for line in request.last_user_text.splitlines():
        match = re.match(r"(t\d+): .* -> left: (\S+) (\S+)$", line)
        if match and "sum" in entries.get(match.group(1), {}).get("properties", {}):
            a, b = sorted((Fraction(match.group(2)), Fraction(match.group(3))), reverse=True)
            scores[match.group(1)] = {name: f"{a} {op} {b} = {float(value):g}" for name, op, value in (
                ("sum", "+", a + b), ("difference", "-", a - b), ("product", "*", a * b), ("quotient", "/", a / b))}
    return json_reply({"scores": scores})


def test_tot_g24_087_a_search_with_last_results_solves_and_scores_two_number_states_by_their_results():
    from llamabot.models.scripted import ScriptedModel
    from llamabot.reasoning.tot.graph import ToTBot

    model = ScriptedModel(responder=_results_model)
    bot = ToTBot(model=model, prompts=Game24Prompts(last_results=True), branching_factor=3, min_depth=3, max_depth=3,
                 max_model_calls=12, prefer_deeper=True)
    result = bot("4 9 10 13")
    assert check_game24("4 9 10 13", result.answer)
    depth_two = [n for n in result.machine.nodes.values() if n.depth == 2]
    assert depth_two and all(n.score in (0.0, 1.0) for n in depth_two)
    evaluations = [r for r in model.requests if r.response_format["json_schema"]["name"] == "tot_scores"]
    assert any('"sum"' in r.last_user_text for r in evaluations)  # the results were asked for


def test_tot_g24_090_check_game24_is_importable_without_litellm():
    code = (
        "import sys\nfrom llamabot.evals.game24 import check_game24\n"
        "assert check_game24('4 9 10 13', '(13 - 9) * (10 - 4)')\n"
        "print(sorted(m for m in ('litellm', 'llama_cpp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_tot_g24_088_with_pair_steps_three_numbers_left_get_two_steps_per_pair_held_to_it_by_the_schema():
    from llamabot.evals.game24.prompts import number_pairs
    from llamabot.reasoning.tot.messages import CallLLMStream
    from llamabot.reasoning.tot.parsing import parse_thoughts

    # after 5 + 9 = 14 the numbers left are 1 11 14: three pairs
    directive = GenerateThoughts("c", "n1", "1 5 9 11", ("5 + 9 = 14",), 6)
    plain, pairs = Game24Prompts(pair_steps=False), Game24Prompts()  # pairs are the default
    text = pairs.generation_user(directive)
    assert "1 and 11; 1 and 14; 11 and 14" in text and "subtracts or divides" in text
    assert "each pair" not in plain.generation_user(directive)
    schema = pairs.response_format(directive)["json_schema"]
    assert schema["name"] == "tot_pair_steps" and plain.response_format(directive)["json_schema"]["name"] == "tot_thoughts"
    per_pair = schema["schema"]["properties"]["pairs"]
    assert per_pair["required"] == ["1 and 11", "1 and 14", "11 and 14"]
    grows, shrinks = (item["pattern"] for item in per_pair["properties"]["1 and 14"]["prefixItems"])
    # The grammar holds each step to its pair, the larger number first, and to its kind of operation (+ or *,
    # then - or /); the model chooses the operation and writes the result (nothing is computed for it).
    assert re.fullmatch(grows, "14 * 1 = 14") and re.fullmatch(grows, "14 + 1 = 99")
    assert not re.fullmatch(grows, "1 + 14 = 15") and not re.fullmatch(grows, "14 - 1 = 13")
    assert not re.fullmatch(grows, "11 + 14 = 25") and re.fullmatch(shrinks, "14 - 1 = 13")
    assert re.fullmatch(shrinks, "14 / 1 = 2.5") and re.fullmatch(shrinks, "14 / 1 = 7/2")
    assert not re.fullmatch(shrinks, "1 - 14 = -13") and not re.fullmatch(shrinks, "14 * 1 = 14")
    # Asked for fewer thoughts than two per pair, proposals stay free (a cut would keep only + or * steps).
    short = GenerateThoughts("c", "n1", "1 5 9 11", ("5 + 9 = 14",), 5)
    assert pairs.response_format(short) == plain.response_format(short) and "each pair" not in pairs.generation_user(short)
    two_pairs = GenerateThoughts("c", "n1", "4 9 10 13", ("13 - 9 = 4",), 4)  # 4 10 4: two pairs, four steps
    assert pairs.response_format(two_pairs)["json_schema"]["name"] == "tot_pair_steps"
    # The reply is read as its steps, the first of every pair before the second ones.
    reply = json.dumps({"pairs": {"1 and 11": ["11 * 1 = 11", "11 - 1 = 10"], "1 and 14": ["14 + 1 = 15", "14 / 1 = 14"],
                                  "11 and 14": ["14 + 11 = 25", "14 - 11 = 3"]}})
    read = pairs.read_reply(directive, reply)
    assert parse_thoughts(read)[0] == ["11 * 1 = 11", "14 + 1 = 15", "14 + 11 = 25", "11 - 1 = 10", "14 / 1 = 14",
                                       "14 - 11 = 3"]
    assert pairs.read_reply(directive, "not JSON") == "not JSON" and plain.read_reply(directive, reply) == reply
    assert '"1 and 11"' in pairs.repair_user(CallLLMStream("c", "generation", directive, "x", "not JSON"))
    # Four distinct numbers make six pairs: proposals stay free; repeats make fewer pairs (4 10 4: two).
    root = GenerateThoughts("c", "n0", "1 5 9 11", (), 6)
    assert pairs.response_format(root) == plain.response_format(root)
    assert number_pairs(numbers_left("4 9 10 13", ["13 - 9 = 4"])) == ((4, 10), (4, 4))
    assert pairs.prompt_texts() != plain.prompt_texts() and pairs.options()["pair_steps"]


def test_tot_g24_088_a_search_with_pair_steps_solves_and_asks_for_pairs_only_where_three_numbers_are_left():
    from llamabot.models.scripted import ScriptedModel
    from llamabot.reasoning.tot.graph import ToTBot
    from tests.reasoning.tot.helpers import schema_name

    model = ScriptedModel(responder=_results_model)
    bot = ToTBot(model=model, prompts=Game24Prompts(), branching_factor=6, min_depth=3, max_depth=3,
                 max_model_calls=12, prefer_deeper=True)
    result = bot("4 9 10 13")
    assert check_game24("4 9 10 13", result.answer)
    kinds = [schema_name(r) for r in model.requests]
    assert kinds[0] == "tot_thoughts" and "tot_pair_steps" in kinds  # free at the root, pairs after one step
    # Each expansion after one step has steps on every pair of its numbers left, at most branching_factor.
    from llamabot.evals.game24.prompts import number_pairs
    from llamabot.reasoning.tot.machine import path_texts

    nodes = result.machine.nodes
    parents = {n.parent_id for n in nodes.values() if n.depth == 2}
    assert parents
    for parent in parents:
        children = [n for n in nodes.values() if n.parent_id == parent]
        pairs = number_pairs(numbers_left("4 9 10 13", path_texts(result.machine, parent)))
        used = {tuple(sorted((parse_step(n.content).a, parse_step(n.content).b))) for n in children}
        assert used == {tuple(sorted(p)) for p in pairs} and len(children) <= 6


def test_tot_g24_089_brief_prompts_give_the_rules_and_examples_only_where_a_turn_needs_them():
    """TOT-G24-089: the brief prompts (``brief=True``) send the rules-only system prompt; the example of alternative
    steps goes with free proposals of three or more numbers, the scoring example with candidates that are scored,
    and the results' JSON shape is shown once. Same schemas, same replies read."""
    from llamabot.evals.game24.prompts import GAME24_BRIEF_SYSTEM, GAME24_SYSTEM

    brief, full = Game24Prompts(brief=True), Game24Prompts()
    assert brief.system_prompt("generation") == brief.system_prompt("evaluation") == GAME24_BRIEF_SYSTEM
    assert full.system_prompt("evaluation") == GAME24_SYSTEM and len(GAME24_BRIEF_SYSTEM) < len(GAME24_SYSTEM) / 3
    assert Game24Prompts(brief=True, generation_prompt="MINE").messages(
        GenerateThoughts("c", "n0", "4 9 10 13", (), 6))[0]["content"] == "MINE"  # a given prompt wins
    root = GenerateThoughts("c", "n0", "4 9 10 13", (), 6)
    last = GenerateThoughts("c", "n2", "4 9 10 13", ("13 - 9 = 4", "10 - 4 = 6"), 6)
    assert "from 4 4 6 8 the alternatives include" in brief.generation_user(root)
    assert "alternatives include" not in brief.generation_user(last) and "last two numbers" in brief.generation_user(last)
    three = EvaluateThoughts("c", "n0", "4 9 10 13", (), (ThoughtEntry("t1", "13 - 9 = 4"),))
    assert "4 6 12 scores 1" in brief.evaluation_user(three) and "4 6 12" not in full.evaluation_user(three)
    two = EvaluateThoughts("c", "n1", "1 5 9 11", ("5 + 9 = 14",),
                           (ThoughtEntry("t1", "11 - 1 = 10"), ThoughtEntry("t2", "11 * 1 = 11")))
    text = brief.evaluation_user(two)
    assert text.count('"sum"') == 1 and '"t1": <results>, "t2": <results>' in text and "Score each" not in text
    assert full.evaluation_user(two).count('"sum"') == 2
    assert brief.response_format(two) == full.response_format(two)  # the grammar holds the same shape
    assert brief.options()["brief"] is True and brief.prompt_texts() != full.prompt_texts()


def test_tot_g24_091_with_finish_steps_a_result_of_24_the_evaluator_wrote_is_the_candidates_last_step():
    from llamabot.reasoning.tot.parsing import parse_continuations, parse_scores

    directive = EvaluateThoughts("c", "n2", "1 5 9 11", ("5 + 9 = 14",),
                                 (ThoughtEntry("t1", "11 - 1 = 10"), ThoughtEntry("t2", "11 * 1 = 11")))
    reply = ('{"scores": {"t1": {"sum": "14 + 10 = 24", "difference": "14 - 10 = 4", "product": "14 * 10 = 140", '
             '"quotient": "14 / 10 = 1.4"}, "t2": {"sum": "14 + 11 = 25", "difference": "14 - 11 = 3", '
             '"product": "14 * 11 = 154", "quotient": "14 / 11 = 1.27"}}}')
    on, off = Game24Prompts(), Game24Prompts(finish_steps=False)
    assert on.options()["finish_steps"] and not off.options()["finish_steps"]  # a report records the switch
    read = on.read_reply(directive, reply)
    assert parse_scores(read, directive.thoughts)[0] == {"t1": 1.0, "t2": 0.0}  # the scores are unchanged
    assert parse_continuations(read, directive.thoughts) == {"t1": ("14 + 10 = 24",)}
    assert parse_continuations(off.read_reply(directive, reply), directive.thoughts) == {}
    # the model's arithmetic as written: a wrong 24 is passed on too (the rules drop it as a step, see below)
    wrong = reply.replace("14 * 11 = 154", "14 * 11 = 24")
    assert parse_continuations(on.read_reply(directive, wrong), directive.thoughts)["t2"] == ("14 * 11 = 24",)


def _wrong_24_model(request):
    """``_results_model``, except that every results entry also claims ``a * b = 24`` (wrong arithmetic)."""
    reply = _results_model(request)
    data = json.loads(reply.content)
    if "scores" not in data:
        return reply
    for entry in data["scores"].values():
        if isinstance(entry, dict) and "product" in entry and not entry["sum"].endswith("= 24"):
            a, _, b = entry["product"].split(" = ")[0].partition(" * ")
            entry["product"] = f"{a} * {b} = 24"
    return json_reply(data)


def test_tot_g24_091_a_search_ends_on_the_step_the_evaluator_wrote_and_the_rules_drop_a_wrong_one():
    from rich.console import Console

    from llamabot.cli.tot import tree_view
    from llamabot.evals.game24.steps import step_violation
    from llamabot.models.scripted import ScriptedModel
    from llamabot.reasoning.tot.graph import ToTBot
    from llamabot.reasoning.tot.machine import path_texts

    def search(finish_steps, responder=_results_model):
        model = ScriptedModel(responder=responder)
        bot = ToTBot(model=model, prompts=Game24Prompts(finish_steps=finish_steps), branching_factor=3, min_depth=3,
                     max_depth=3, max_model_calls=12, prefer_deeper=True)
        return bot("4 9 10 13"), len(model.requests)

    (finished, calls), (asked, asked_calls) = search(True), search(False)
    assert check_game24("4 9 10 13", finished.answer) and check_game24("4 9 10 13", asked.answer)
    assert calls == asked_calls - 2  # no generation and evaluation of the last step: the evaluator wrote it
    last = finished.machine.nodes[finished.machine.solution_path[-1]]
    assert last.id in finished.machine.continued_nodes and last.depth == 3
    console = Console(record=True, width=200)  # the live tree says where the step came from
    console.print(tree_view(finished.machine))
    assert "written by the evaluator" in console.export_text()
    # a claimed 24 with wrong arithmetic breaks the rules: recorded, never filed as a step
    result, _ = search(True, _wrong_24_model)
    broken = [r for r in result.diagnostics["rejected_steps"] if "not 24" in r]
    assert broken and check_game24("4 9 10 13", result.answer)
    machine = result.machine
    for node_id in machine.continued_nodes:  # what was filed is a legal step, its claimed 24 exact
        path = path_texts(machine, node_id)
        assert path[-1].endswith("= 24") and step_violation("4 9 10 13", path[:-1], path[-1]) is None
