"""Bundled templates: present, render with no leftover placeholders, keep the paper's text."""

import re

import pytest

from coevo.prompts import PROMPT_DIR, Template, TemplateError, load_template

FIELDS = {
    "critic": {"prompt", "response"},
    "critic_brief": {"prompt", "response"},  # ours: Table 6 + a three-sentence limit
    "reviser": {"prompt", "response", "critique"},
    "reviser_no_critique": {"prompt", "response"},
    "generic_critique": set(),
    "judge_taiscore": {"prompt", "response", "critique", "revision"},
    "judge_critique_quality": {"prompt", "response", "critique"},
    "judge_adherence": {"prompt", "response", "critique", "revision"},
    "judge_outcome_gain": {"prompt", "response", "revision"},
    "judge_pairwise": {"prompt", "response_1", "response_2"},
    "judge_gold_rubric": {"prompt", "response", "criteria"},
    "query_filter": {"id", "query", "ability", "domain", "category", "language_hint"},
    # TAIScore's deep research (issue 45): ours, written from the papers' descriptions
    "openscholar_query_filter": {"id", "query", "intent"},
    "deepresearch_report": {"question", "sources_block"},
    "deepresearch_key_points": {"question", "report", "key_points"},
    "deepresearch_quality": {"question", "report"},
    # DeepResearch-Gym's own protocol (issue 56): one key point, one quality criterion a call
    "deepresearch_key_point": {"key_point", "report"},
    "deepresearch_quality_criterion": {"criterion", "description", "question", "report"},
    # DecoEvo's transfer benchmarks graded their own way (issue 56): ours, from their scripts
    "eqbench_cw_grader": {"prompt", "response", "criteria", "negative_criteria"},
    "llmeval_med_grader": {"question", "response", "reference", "checklist_note", "checklist_block"},
    # DecoEvo (issue 5)
    "decoevo_solver": {"skill", "question"},
    "decoevo_rubric_generator": {"skill", "question", "min_criteria", "max_criteria"},
    "decoevo_judge": {"question", "response", "criteria"},
    "healthbench_grader": {"question", "response", "criteria"},
    "decoevo_solver_rewriter": {"skill", "failures", "max_words"},
    "decoevo_structural_auditor": {"spec", "question", "rubric"},
    "decoevo_contrastive_blind": {"question", "response_a", "response_b"},
    "decoevo_contrastive_rubric": {"preferred", "score_a", "score_b", "breakdown"},
    "decoevo_generator_rewriter": {"skill", "structural", "contrastive", "max_words"},
    "decoevo_audit_spec_writing": set(),
    "critic_code": {"question", "code", "optional_examples_block"},  # RLAC App. A.2
    "critic_code_schema": {"question", "code", "answer_format"},  # ours: the JSON-schema form
    "generator_code": {"problem"},  # RLAC App. A.1: the problem statement alone
    "generator_code_instructed": {"problem"},  # ours: asks for one ```python block
    # RLAC facts (issue 4)
    "critic_fact": {"topic", "numbered_paragraph"},
    "critic_fact_schema": {"topic", "numbered_paragraph"},  # ours: the JSON-schema form
    "generator_bio": {"topic", "n"},
    "atomic_facts": {"entity", "text"},
    "fact_authenticity": {"entity", "sentence", "fact"},
    "fact_support": {"entity", "fact", "passages"},
}

# Sentences copied from the paper's tables; a template must keep them word for word.
PAPER_TEXT = {
    "critic": "Focus on the most important issues. Be specific and actionable. "
              "Do not rewrite the response.",
    "reviser": "Use the critique as guidance, but keep the final response natural, coherent, "
               "and faithful to the original prompt.",
    "judge_critique_quality": "Evaluate the critique itself, not the absolute quality of the "
                              "initial response.",
    "judge_adherence": "A refined response may adhere well to the critique even if its overall "
                       "quality is not strong.",
    "judge_outcome_gain": "0.5 if they are roughly equal",
    "judge_taiscore": "Penalize Response B if it becomes worse, overlong, irrelevant, or less "
                      "faithful to the prompt.",
    "query_filter": "If unsure between 3 and 4, choose 3.",
    "critic_code": "Then output exactly ONE failing test case inside <testcase> tags using "
                   "this format:",
}


def test_every_template_is_bundled_and_known():
    assert {p.stem for p in PROMPT_DIR.glob("*.md")} == set(FIELDS)


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_renders_with_no_leftover_placeholders(name):
    template = load_template(name)
    assert template.fields == FIELDS[name]
    values = {field: f"<<{field.upper()}>>" for field in template.fields}
    text = "\n".join(m.content for m in template.messages(**values))
    assert not re.search(r"\{[a-z_][a-z0-9_]*\}", text)
    for value in values.values():
        assert text.count(value) >= 1
    # The papers' prompts put the inputs after the instructions, so the last filled field
    # sits near the end. (Short verifier prompts of our own repeat the answer format after
    # the inputs, which small models follow better.)
    if values and name in PAPER_TEXT:
        assert max(text.index(v) for v in values.values()) > len(text) // 2


#: RLAC App. A prints each prompt as a system message and a user message (the code
#: generator's as the problem statement alone); the bundled templates split where it does.
PAPER_SPLIT = {
    "generator_bio": ("You are an AI assistant that provides accurate and concise biographies",
                      "Write a biography of {topic}."),
    "critic_fact": ("You are a factual checker.", "Here is an example to show the task."),
    "critic_code": ("You are a code critic.", "Analyze the given problem and the generated code"),
    "generator_code": (None, "{problem}"),
}


@pytest.mark.parametrize("name", sorted(PAPER_SPLIT))
def test_the_rlac_paper_prompts_split_where_the_paper_does(name):
    system, user = load_template(name).parts
    want_system, want_user = PAPER_SPLIT[name]
    assert (system is None) == (want_system is None) and user.startswith(want_user)
    if want_system:
        assert system.startswith(want_system) and "{" not in system.replace("{n}", "")


def test_a_template_with_a_system_part_renders_to_system_then_user():
    messages = load_template("generator_bio").messages(n="eight", topic="Ada Lovelace")
    assert [m.role for m in messages] == ["system", "user"]
    assert "exactly eight sentences long" in messages[0].content
    assert messages[1].content == "Write a biography of Ada Lovelace."
    with pytest.raises(TemplateError, match="messages"):  # one string would merge the two messages
        load_template("generator_bio").render(n="eight", topic="Ada Lovelace")


def test_a_one_part_template_is_one_user_message_with_the_values_as_given():
    problem = 'def f(x):\n    """Return x."""\n'  # a trailing newline is the problem's own
    assert [(m.role, m.content) for m in load_template("generator_code").messages(problem=problem)] == [
        ("user", problem)]


@pytest.mark.parametrize("text", [
    "<<user>>\nhi\n<<system>>\nbe brief\n",        # system after user
    "preamble\n<<system>>\nbe brief\n<<user>>\nhi\n",  # text before the first marker
    "<<system>>\nbe brief\n",                        # no user part
    "<<system>>\n<<user>>\nhi\n",                     # an empty section
])
def test_a_malformed_section_split_is_refused_at_load(tmp_path, text):
    path = tmp_path / "mine.md"
    path.write_text(text)
    with pytest.raises(TemplateError, match="mine"):
        load_template(str(path))
    assert Template(name="ok", text="<<user>>\n{x}\n").messages(x="1")[0].content == "1"


@pytest.mark.parametrize("name", sorted(PAPER_TEXT))
def test_paper_wording_kept(name):
    flat = " ".join(load_template(name).text.split())
    assert PAPER_TEXT[name] in flat


@pytest.mark.parametrize("name", ["judge_outcome_gain", "judge_pairwise"])
def test_blind_judges_have_no_critique_field(name):
    assert "critique" not in load_template(name).fields


def test_json_examples_survive_rendering():
    text = load_template("judge_taiscore").render(prompt="p", response="r", critique="c",
                                                  revision="v")
    assert '"critique_quality": {"score": ..., "reason": "..." }' in text
    assert '"score": ...' in text


def test_field_values_are_not_rendered_twice():
    text = load_template("critic").render(prompt="mentions {response} literally",
                                          response="R")
    assert "mentions {response} literally" in text
