"""The RLAC critic's schema forms: the schemas built for an output, and the proposals read
back from answers in those forms (the paper's text forms stay readable beside them)."""

import json

import pytest

from coevo.roles import critic_schemas as schemas
from coevo.tasks.code import entry_parameters, example_calls, load_humaneval
from coevo.core.types import Sample
from coevo.validators.code import answer_format, answer_schema, arguments_call, parse_answer
from coevo.validators.facts import parse_fact_proposal


@pytest.fixture(scope="module")
def truncate():
    [sample] = load_humaneval(ids=["HumanEval/2"])  # def truncate_number(number: float) -> float
    return sample


def test_signature_and_docstring_calls_are_read_without_running_anything(truncate):
    [param] = entry_parameters(truncate)
    assert (param.name, param.annotation, param.required) == ("number", "float", True)
    assert [3.5] in example_calls(truncate)


def test_code_schema_asks_for_the_arguments_of_one_call(truncate):
    schema = answer_schema(truncate)
    assert schema == {"type": "object", "properties": {"number": {"type": "number"}},
                      "required": ["number"], "additionalProperties": False}
    assert answer_format(truncate).endswith('{"number": ...}')


def test_an_arguments_answer_becomes_a_call_of_the_entry_point(truncate):
    proposal = parse_answer(truncate, "code", '{"number": 3.5}')
    assert proposal.valid and proposal.parsed == {"kind": "call", "test": "truncate_number(3.5)",
                                                  "format": "arguments"}


def test_an_argument_value_can_never_become_code():
    sample = Sample(id="t", prompt="def echo(s):\n    pass\n", meta={"entry_point": "echo"})
    call, _ = arguments_call(sample, json.dumps({"s": "__import__('os').system('id')"}))
    assert call == "echo(\"__import__('os').system('id')\")"  # a string literal, nothing else


def test_a_missing_required_argument_is_an_invalid_proposal_with_its_reason(truncate):
    proposal = parse_answer(truncate, "code", '{}')
    assert not proposal.valid


def test_the_papers_testcase_tag_is_still_read(truncate):
    proposal = parse_answer(truncate, "code", "<testcase> CALL: truncate_number(2.0) </testcase>")
    assert proposal.valid and proposal.parsed["test"] == "truncate_number(2.0)"


def test_without_a_readable_signature_the_call_is_text_and_stdin_programs_get_stdin():
    prose = Sample(id="p", prompt="Write f.", meta={"entry_point": "f"})
    assert answer_schema(prose)["required"] == ["call"]
    program = Sample(id="s", prompt="Read n from stdin.", meta={})
    assert answer_schema(program)["required"] == ["stdin"]


@pytest.mark.parametrize("annotation, schema", [
    ("int", {"type": "integer"}),
    ("List[float]", {"type": "array", "items": {"type": "number"}, "maxItems": schemas.LIST_LIMIT}),
    ("Optional[str]", {"anyOf": [{"type": "string", "maxLength": schemas.TEXT_ARGUMENT_LIMIT}, {"type": "null"}]}),
    ("Tuple[int, int]", {"type": "array", "prefixItems": [{"type": "integer"}] * 2, "minItems": 2, "maxItems": 2}),
])
def test_annotations_become_value_schemas(annotation, schema):
    assert schemas.python_value(annotation) == schema


def test_unannotated_parameters_take_the_type_of_the_docstring_examples():
    assert schemas.parameter_value(None, [[1, 2], [3.5]]) == {
        "type": "array", "items": {"type": "number"}, "maxItems": schemas.LIST_LIMIT}
    assert schemas.parameter_value(None, []) is schemas.parameter_value(None, [])  # any plain value


def test_fact_schema_numbers_only_the_sentences_of_this_output():
    schema = schemas.fact_proposal(4)
    assert list(schema["properties"]) == ["sentence", "error_fact", "reason"]
    assert schema["properties"]["sentence"] == {"type": "integer", "minimum": 1, "maximum": 4}


@pytest.mark.parametrize("text, sentence, fact", [
    ('{"sentence": 2, "error_fact": "born in Paris", "reason": "Ulm"}', 2, "born in Paris"),
    ('{"sentence": 3, "error_fact": "won two Oscars", "reason": "He won', 3, "won two Oscars"),  # cut off
    ("reason: wrong city\nsentence: 2\nerror_fact: born in Paris", 2, "born in Paris"),  # the paper's lines
])
def test_fact_proposals_are_read_in_either_form(text, sentence, fact):
    parsed = parse_fact_proposal(text)
    assert parsed["sentence"] == sentence and parsed["error_fact"] == fact


def test_a_fact_answer_without_a_claim_is_no_proposal():
    assert parse_fact_proposal('{"sentence": 2, "error_fact": "", "reason": "x"}') is None


def test_quoted_fact_schema_lets_the_claim_be_only_words_of_the_named_sentence():
    import re

    sentences = ["Albert Einstein was born in Vienna in 1879.", 'He said "hello" twice.']
    schema = schemas.quoted_fact_proposal(sentences)
    first, second = schema["anyOf"]
    assert first["properties"]["sentence"] == {"const": 1} and second["properties"]["sentence"] == {"const": 2}
    pattern = re.compile(first["properties"]["error_fact"]["pattern"])
    assert pattern.match("born in Vienna")  # 3 consecutive words
    assert pattern.match("Einstein was born in Vienna in 1879.")  # up to 8
    assert not pattern.match("born in Ulm") and not pattern.match("in Vienna")  # not its words; under 3
    # Quotes cannot appear in a grammar's string pattern: the word is quoted without them.
    assert re.compile(second["properties"]["error_fact"]["pattern"]).match("He said hello twice.")


def test_a_period_in_a_quoted_word_is_a_character_class_llama_cpp_parses():
    """llama.cpp's grammar parser rejected `\\.` ("unknown escape at \\.") and its process
    then crashed under a facts critic quoting "Dr. Smith"; `[.]` means the same to every engine."""
    import re

    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    schema = schemas.quoted_fact_proposal(["Dr. Smith was born in 1900 (in Ohio)."])
    pattern = schema["anyOf"][0]["properties"]["error_fact"]["pattern"] if "anyOf" in schema else \
        schema["properties"]["error_fact"]["pattern"]
    assert "\\." not in pattern and "[.]" in pattern
    assert re.compile(pattern).match("Dr. Smith was born")
    grammar = llama_grammar.json_schema_to_gbnf(json.dumps(schema))
    llama_grammar.LlamaGrammar.from_string(grammar, verbose=False)  # raises on a grammar it cannot parse
