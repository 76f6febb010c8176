"""Schema-bound sampling on llama.cpp with the grammar checked on the drawn token first
(coevo/llm/llamacpp_grammar.py): greedy answers are the grammar-first chain's token for token,
sampled ones come from the same distribution, every answer keeps to its schema, and the calls
where drawing first would change the distribution keep the grammar-first chain."""

import json
from collections import Counter

import pytest

from coevo.llm.llamacpp import LlamaCppModel
from coevo.llm.llamacpp_grammar import GrammarLastSampler, bounded_integers_as_enums, exact
from coevo.roles.judges import TaiScoreJudge
from coevo.roles.schemas import scored_dimensions
from coevo.core.types import Message, Sampling

SCHEMA = json.dumps(scored_dimensions(TaiScoreJudge.dimensions, TaiScoreJudge.final_key, reason_limit=40))
PROMPTS = ["Rate this critique of a poem about the sea: 'too short, add an image of the waves'. Answer in JSON.",
           "A user asked for a haiku and got a limerick. The critique says: 'wrong form'. Score it as JSON.",
           "Judge the revision of an email that was too long; the critique asked to cut it to three lines."]


def test_drawing_first_is_kept_only_where_it_is_the_same_distribution():
    neutral = {"top_k": 0, "min_p": 0.0, "typical_p": 1.0}
    assert exact(temp=0.0, top_p=0.9, top_k=40, min_p=0.05, typical_p=1.0)  # greedy: the argmax either way
    assert exact(temp=0.7, top_p=1.0, **neutral)
    assert not exact(temp=0.7, top_p=0.95, **neutral)  # top-p would truncate another set
    assert not exact(temp=0.7, top_p=1.0, top_k=40, min_p=0.0, typical_p=1.0)
    assert not exact(temp=0.7, top_p=1.0, top_k=0, min_p=0.05, typical_p=1.0)


def test_bounded_integers_reach_the_grammar_as_their_values():
    """llama-cpp-python's schema converter drops minimum and maximum; an enum keeps them."""
    schema = json.loads(SCHEMA)
    bound = bounded_integers_as_enums(schema)
    assert bound["properties"]["score"] == {"enum": list(range(1, 11))}
    assert bound["properties"]["critique_quality"]["properties"]["score"] == {"enum": list(range(1, 11))}
    assert bound["properties"]["critique_quality"]["properties"]["reason"] == {"type": "string", "maxLength": 40}
    assert bounded_integers_as_enums({"type": "integer", "minimum": 0}) == {"type": "integer", "minimum": 0}
    assert bounded_integers_as_enums({"type": "integer", "minimum": 0, "maximum": 10**6})["maximum"] == 10**6


@pytest.mark.slow
def test_a_bounded_score_stays_in_its_bounds(both):
    _, last = both
    schema = json.dumps({"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 3}},
                         "required": ["score"]})
    prompt = conversations(["Out of 1000, how good is the number 700? Answer as JSON with a score."])
    for temperature in (0.0, 1.0):
        out = last.generate(prompt, Sampling(temperature=temperature, top_p=1.0, max_tokens=20, seed=0,
                                             json_schema=schema), n=4)[0]
        assert len(out) == 4 and all(json.loads(c.text)["score"] in (1, 2, 3) for c in out), [c.text for c in out]


def conversations(prompts):
    return [[Message(role="user", content=p)] for p in prompts]


def samplers_made(model, monkeypatch) -> list:
    """Every sampler `model`'s calls make from now on (a call keeps only its last)."""
    made, make = [], model.llama._init_sampler

    def recorded(**settings):
        made.append(make(**settings))
        return made[-1]

    monkeypatch.setattr(model.llama, "_init_sampler", recorded)
    return made


@pytest.fixture(scope="module")
def both(gguf):
    first = LlamaCppModel(gguf, n_ctx=1024, n_threads=2, grammar_last=False)
    last = LlamaCppModel(gguf, n_ctx=1024, n_threads=2)
    yield first, last
    first.close()
    last.close()


@pytest.mark.slow
def test_greedy_schema_answers_are_the_grammar_first_chains_token_for_token(both, monkeypatch):
    first, last = both
    made = samplers_made(last, monkeypatch)
    sampling = Sampling(temperature=0.0, max_tokens=64, json_schema=SCHEMA, logprobs=3)
    old = [row[0] for row in first.generate(conversations(PROMPTS), sampling)]
    new = [row[0] for row in last.generate(conversations(PROMPTS), sampling)]
    assert [(c.text, c.top_logprobs) for c in new] == [(c.text, c.top_logprobs) for c in old]
    assert all(isinstance(sampler, GrammarLastSampler) for sampler in made)
    assert sum(sampler.refused for sampler in made) > 0  # the refusals' path gave the same tokens too
    assert not isinstance(first.llama._sampler, GrammarLastSampler)


@pytest.mark.slow
def test_sampled_answers_keep_to_the_schema_and_truncating_calls_keep_the_old_chain(both, monkeypatch):
    _, last = both
    made = samplers_made(last, monkeypatch)
    sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=64, seed=3, json_schema=SCHEMA)
    answers = [c.text for row in last.generate(conversations(PROMPTS), sampling, n=2) for c in row]
    assert all(isinstance(sampler, GrammarLastSampler) for sampler in made)
    assert 0 < sum(sampler.refused for sampler in made) < sum(sampler.steps for sampler in made)
    for text in answers:  # cut at max_tokens or whole, never outside the grammar: a prefix of valid JSON
        assert text.startswith("{") and "score" in text
    last.generate(conversations(PROMPTS[:1]), sampling.model_copy(update={"top_p": 0.9, "max_tokens": 8}))
    assert not isinstance(last.llama._sampler, GrammarLastSampler)


@pytest.mark.slow
def test_a_sampled_choice_has_the_grammar_first_chains_distribution(both):
    """Two-sample chi-square over a one-token answer from 1 to 5, 80 draws each chain: the
    grammar forbids the model's other first tokens, so draws refused by it are re-made."""
    from scipy.stats import chi2_contingency

    prompt = conversations(["Pick a number. Any number you like. Just the number."])
    sampling = Sampling(temperature=1.5, top_p=1.0, max_tokens=1, json_schema=json.dumps({"enum": [1, 2, 3, 4, 5]}))
    counts = []
    for model in both:
        draws = [model.generate(prompt, sampling.model_copy(update={"seed": seed}))[0][0].text for seed in range(80)]
        counts.append(Counter(draws))
    values = sorted(set(counts[0]) | set(counts[1]))
    assert set(values) <= {"1", "2", "3", "4", "5"} and len(values) >= 2, counts
    table = [[c[v] for v in values] for c in counts]
    assert chi2_contingency(table).pvalue > 0.001, counts
