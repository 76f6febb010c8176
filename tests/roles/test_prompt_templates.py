"""Bundled templates: present, render with no leftover placeholders, keep the paper's text."""

import re

import pytest

from coevo.prompts import PROMPT_DIR, load_template

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
    # DecoEvo (issue 5)
    "decoevo_solver": {"skill", "question"},
    "decoevo_rubric_generator": {"skill", "question", "min_criteria", "max_criteria"},
    "decoevo_judge": {"question", "response", "criteria"},
    "decoevo_solver_rewriter": {"skill", "failures", "max_words"},
    "decoevo_structural_auditor": {"spec", "question", "rubric"},
    "decoevo_contrastive_blind": {"question", "response_a", "response_b"},
    "decoevo_contrastive_rubric": {"preferred", "score_a", "score_b", "breakdown"},
    "decoevo_generator_rewriter": {"skill", "structural", "contrastive", "max_words"},
    "decoevo_audit_spec_writing": set(),
    "critic_code": {"question", "code", "optional_examples_block"},  # RLAC App. A.2
    "critic_code_schema": {"question", "code", "answer_format"},  # ours: the JSON-schema form
    "generator_code": {"problem"},
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
    text = template.render(**values)
    assert not re.search(r"\{[a-z_][a-z0-9_]*\}", text)
    for value in values.values():
        assert text.count(value) >= 1
    # The papers' prompts put the inputs after the instructions, so the last filled field
    # sits near the end. (Short verifier prompts of our own repeat the answer format after
    # the inputs, which small models follow better.)
    if values and name in PAPER_TEXT:
        assert max(text.index(v) for v in values.values()) > len(text) // 2


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
