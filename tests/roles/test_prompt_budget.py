"""The critic's prompt within a token budget: y0 shortened in its middle, never the header or x."""

import logging
import re

import pytest

from coevo.llm.replay import ReplayModel
from coevo.roles.critic import Critic
from coevo.roles.prompt_budget import MARKER, approximate_tokens, fit_middle, token_counter
from coevo.core.types import Sampling

HEADER = "You are a helpful writing critic."  # Table 6's first sentence
X = "Write a short story about a lighthouse keeper."


def words(text: str) -> int:
    """A transparent token counter for the tests: one token per whitespace-separated word."""
    return len(text.split())


def long_y0(n: int = 400) -> str:
    return " ".join(f"w{i}" for i in range(n))


def critic(budget, count=words, model=None):
    return Critic(model or ReplayModel(rules=[{"completion": "ok"}]), Sampling(), max_prompt_tokens=budget,
                  count_tokens=count)


def test_a_prompt_that_fits_is_untouched():
    c = critic(200)
    y0 = "A short answer."
    fitted = c.fitted_prompt(X, y0)
    assert not fitted.shortened and fitted.text == c.template.render(prompt=X, response=y0)
    assert "omitted" not in fitted.text and c.count_shortened([X], [y0]) == 0
    # no budget at all: nothing is ever shortened
    unbounded = Critic(ReplayModel(rules=[]), Sampling())
    assert unbounded.critique_prompt(X, long_y0(5000)).count("w4999") == 1
    assert unbounded.count_shortened([X], [long_y0(5000)]) == 0


def test_a_long_response_loses_its_middle_behind_a_marker_and_the_prompt_fits():
    budget = 120
    c = critic(budget)
    y0 = long_y0(400)
    fitted = c.fitted_prompt(X, y0)
    text = fitted.text
    assert fitted.shortened and words(text) <= budget
    assert text.startswith(HEADER) and X in text and text.rstrip().endswith("Your Critique:")
    marker = re.search(r"\[… (\d+) tokens of the response omitted …\]", text)
    assert marker and int(marker.group(1)) == fitted.omitted
    response = text.split("Response:\n", 1)[1].split("\n\nYour Critique:")[0]
    head, tail = response.split(marker.group(0))
    assert head.startswith("w0 w1 w2") and tail.rstrip().endswith("w398 w399")  # both ends kept
    kept = len(head.split()) + len(tail.split())
    # every word is either shown or counted in the marker (a cut word counts on both sides)
    assert 400 <= kept + fitted.omitted <= 402
    # the longest prompt that fits: one more kept word would not
    assert words(text) >= budget - 4
    assert c.count_shortened([X, X], [y0, "short"]) == 1


def test_the_header_and_instruction_are_never_cut_even_over_the_budget(caplog):
    x = "Write " + " ".join(["about the sea"] * 50)  # x alone is over the budget
    c = critic(60)
    with caplog.at_level(logging.WARNING):
        fitted = c.fitted_prompt(x, long_y0(50))
    assert fitted.text.startswith(HEADER) and x in fitted.text and "w0 " not in fitted.text
    assert "tokens of the response omitted" in fitted.text and "over its budget" in caplog.text


def test_fit_middle_counts_the_omitted_part_without_the_templates_own_tokens():
    # A counter that charges 5 tokens of chat template on top of every text.
    def templated(text):
        return 5 + len(text)

    fitted = fit_middle(lambda y: f"[{y}]", "a" * 100, 50, templated)
    assert templated(fitted.text) <= 50 and fitted.text.startswith("[a") and fitted.text.endswith("a]")
    shown = fitted.text.count("a")
    assert shown + fitted.omitted == 100  # characters are this counter's tokens
    assert MARKER.format(n=fitted.omitted) in fitted.text


def test_token_counter_uses_the_models_tokenizer_else_an_approximation():
    assert token_counter(ReplayModel(rules=[])) is approximate_tokens
    assert approximate_tokens("abcdef") == 2 and approximate_tokens("é") == 1  # UTF-8 bytes / 3

    class Tokenizer:
        chat_template = "{{ messages }}"

        def apply_chat_template(self, conversation, tokenize, add_generation_prompt):
            assert not tokenize and add_generation_prompt
            return "<user>" + conversation[0]["content"] + "</user><assistant>"

        def __call__(self, text, add_special_tokens):
            assert not add_special_tokens
            return {"input_ids": text.replace("<", " <").split()}

    class Local(ReplayModel):
        tokenizer = Tokenizer()

    count = token_counter(Local(rules=[]))
    assert count("one two three") == 5  # <user>one, two, three</user>, <assistant>
    assert critic(100, count=None, model=Local(rules=[])).count_tokens("a b") == 4


def test_a_bad_budget_is_refused():
    with pytest.raises(ValueError, match="max_prompt_tokens"):
        critic(0)


@pytest.mark.slow
def test_the_embedded_models_tokenizer_counts_the_templated_prompt():
    """With a real tokenizer (the embedded model's): within budget in its own tokens."""
    from transformers import AutoTokenizer

    from coevo.llm.embedded import hf_dir
    from coevo.roles.prompt_budget import chat_tokens

    tokenizer = AutoTokenizer.from_pretrained(str(hf_dir()))

    class Local(ReplayModel):
        pass

    model = Local(rules=[])
    model.tokenizer = tokenizer
    c = Critic(model, Sampling(), max_prompt_tokens=128)
    y0 = "The keeper climbed the stairs. " * 80 + "THE END."
    text = c.critique_prompt(X, y0)
    used = chat_tokens(tokenizer, [{"role": "user", "content": text}])
    assert used <= 128 and used >= 110  # near the budget, not far under it
    assert text.startswith(HEADER) and X in text and "THE END." in text and "tokens of the response omitted" in text
