"""The facts validator: parsing, authenticity, verification, BM25 retrieval, corpus, CLI."""

import json
import os
import subprocess
import sys

import pytest

from coevo.llm.replay import ReplayModel
from coevo.tasks.bios import bio_samples, load_corpus, numbered, split_sentences
from coevo.tasks.loaders import DataError
from coevo.core.types import Completion, Proposal, Sample
from coevo.validators.facts import (EntailmentJudge, FactValidator, KnowledgeSource,
                                    build_fact_validator, parse_fact_proposal)

EINSTEIN = Sample(id="bio:einstein", prompt="", meta={"entity": "Albert Einstein", "sentences": 3})
BIO = ("Albert Einstein was a theoretical physicist. He was born in Vienna in 1879. "
       "He received the Nobel Prize in Physics in 1921.")


def proposal(text, output=BIO):
    return Proposal(sample_id=EINSTEIN.id, output=output, text=text)


@pytest.fixture(scope="module")
def knowledge():
    return KnowledgeSource.load()


def replay_validator(knowledge, authentic="yes", supported="yes"):
    judge = ReplayModel(rules=[
        {"match": "whether a claim is stated", "completion": json.dumps({"answer": authentic})},
        {"match": "verify a claim", "completion": json.dumps({"answer": supported})},
    ])
    return FactValidator(knowledge, EntailmentJudge(judge))


def test_bundled_corpus_has_thirty_people_with_paragraphs():
    docs = load_corpus()
    assert len(docs) >= 30
    assert len({d["title"] for d in docs}) == len(docs)
    assert all(d["text"].count("\n\n") >= 2 for d in docs)  # a few paragraphs each


def test_user_corpus_loads_and_bad_rows_name_the_line(tmp_path):
    good = tmp_path / "kb.jsonl"
    good.write_text(json.dumps({"title": "Ada", "text": "Ada wrote notes."}) + "\n")
    assert load_corpus(good) == [{"title": "Ada", "text": "Ada wrote notes."}]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"title": "Ada", "text": "x"}) + "\n" + json.dumps({"name": "B"}) + "\n")
    with pytest.raises(DataError, match="line 2"):
        load_corpus(bad)
    with pytest.raises(DataError, match="does not exist"):
        load_corpus(tmp_path / "missing.jsonl")


def test_bio_samples_carry_entity_and_sentence_count():
    [s] = bio_samples(entities=["Marie Curie"], sentences=8)
    assert s.prompt == "Write a biography of Marie Curie in exactly 8 sentences."
    assert s.meta == {"entity": "Marie Curie", "sentences": 8}
    with pytest.raises(DataError, match="not in the corpus"):
        bio_samples(entities=["Nobody Atall"])


def test_sentence_split_keeps_abbreviations_and_initials():
    text = "[1] He lived in Washington, D.C. for years. [2] F. W. de Klerk shared it. [3] Dr. Who? No."
    assert split_sentences(text) == ["He lived in Washington, D.C. for years.",
                                     "F. W. de Klerk shared it.", "Dr. Who?", "No."]
    assert numbered(["A.", "B."]) == "[1] A.\n[2] B."


@pytest.mark.parametrize("text, expected", [
    ("reason: wrong city\nsentence: 2\nerror_fact: Einstein was born in Vienna.",
     {"reason": "wrong city", "sentence": 2, "error_fact": "Einstein was born in Vienna."}),
    ("**Reason:** x\n**Sentence:** [3]\n**error_fact:** He won in 1921", {"sentence": 3}),
    ("error fact: born in Vienna\nSentence 2", {"sentence": 2, "error_fact": "born in Vienna"}),
])
def test_parse_fact_proposal_is_lenient_about_form(text, expected):
    parsed = parse_fact_proposal(text)
    assert parsed is not None and expected.items() <= parsed.items()


def test_parse_reads_a_numbered_sentence_answer_as_a_proposal():
    parsed = parse_fact_proposal("[3]\n[2] He was born in Vienna in 1879.\n")
    assert parsed == {"reason": "", "sentence": 2, "error_fact": "He was born in Vienna in 1879.",
                      "format": "numbered"}


@pytest.mark.parametrize("text", ["reason: all good", "sentence: 2", "error_fact: born in Vienna", "",
                                  "[2] too short"])
def test_parse_fact_proposal_needs_number_and_fact(text):
    assert parse_fact_proposal(text) is None


def test_bm25_finds_the_right_persons_passage(knowledge):
    [top] = knowledge.retrieve("Marie Curie", "discovered polonium and radium", k=1)
    assert top.title == "Marie Curie" and "polonium" in top.text
    [top] = knowledge.retrieve("Isaac Newton", "Principia laws of motion", k=1)
    assert top.title == "Isaac Newton" and "Principia" in top.text
    # Restricted to the named person: another page mentioning Nobel Prizes never comes back.
    assert {p.title for p in knowledge.retrieve("Albert Einstein", "Nobel Prize", k=3)} == {"Albert Einstein"}
    # An entity without a page falls back to a global search.
    assert knowledge.retrieve("Buzz", "Apollo 11 first person to walk on the Moon", k=1)[0].title == "Neil Armstrong"


def test_authenticity_blocks_injected_facts_without_asking_the_judge(knowledge):
    validator = replay_validator(knowledge, authentic="yes", supported="no")
    # The fact is false, but sentence 1 never said it: the critic cannot inject it.
    v = validator.check(EINSTEIN, BIO, proposal("reason: x\nsentence: 1\nerror_fact: Einstein was born on Mars."))
    assert v.verdict == "invalid" and "not in sentence 1" in v.reason
    assert validator.calls == 1 and validator.llm_calls == 0  # lexical gate: no judge call


def test_authenticity_judge_can_reject_a_lexically_similar_claim(knowledge):
    validator = replay_validator(knowledge, authentic="no", supported="no")
    v = validator.check(EINSTEIN, BIO, proposal("sentence: 2\nerror_fact: Einstein was not born in Vienna in 1879."))
    assert v.verdict == "invalid" and validator.llm_calls == 1


def test_verification_verdicts_follow_the_judge(knowledge):
    wrong = proposal("reason: he was born in Ulm\nsentence: 2\nerror_fact: Einstein was born in Vienna.")
    caught = replay_validator(knowledge, supported="no").check(EINSTEIN, BIO, wrong)
    assert caught.verdict == "caught"
    assert any("Ulm" in p for p in caught.details["passages"])
    survived = replay_validator(knowledge, supported="yes").check(EINSTEIN, BIO, wrong)
    assert survived.verdict == "survived"


def test_unreadable_judge_answer_is_not_support(knowledge):
    judge = ReplayModel(rules=[{"match": "whether a claim is stated", "completion": '{"answer": "yes"}'},
                               {"completion": "I cannot tell."}])
    validator = FactValidator(knowledge, EntailmentJudge(judge))
    v = validator.check(EINSTEIN, BIO, proposal("sentence: 2\nerror_fact: Einstein was born in Vienna."))
    assert v.verdict == "caught"


@pytest.mark.parametrize("text, reason", [
    ("sentence: 9\nerror_fact: Einstein was born in Vienna.", "bad sentence number 9"),
    ("sentence: 0\nerror_fact: Einstein was born in Vienna.", "bad sentence number 0"),
    ("the paragraph looks fine to me", "unparseable"),
])
def test_invalid_proposals_are_counted(knowledge, text, reason):
    validator = replay_validator(knowledge)
    v = validator.check(EINSTEIN, BIO, proposal(text))
    assert v.verdict == "invalid" and reason in v.reason
    assert validator.calls == 1


def test_lexical_mode_verdicts_need_no_model(knowledge):
    validator = build_fact_validator(None, mode="lexical")
    born = lambda place: proposal(f"sentence: 2\nerror_fact: Einstein was born in {place}.")
    assert validator.check(EINSTEIN, BIO, born("Vienna")).verdict == "caught"
    ulm = BIO.replace("Vienna", "Ulm")
    assert validator.check(EINSTEIN, ulm, born("Ulm").model_copy(update={"output": ulm})).verdict == "survived"
    assert [v.verdict for v in validator.check_many([(EINSTEIN, BIO, born("Vienna"))] * 2)] == ["caught"] * 2
    assert validator.calls == 4


def test_cli_validate_fact_json():
    env = {**os.environ, "COEVO_QUIET": "1"}
    proc = subprocess.run([sys.executable, "-m", "coevo.cli", "validate", "fact", "--entity", "Marie Curie",
                           "--sentence", "She was born in Warsaw in 1867.", "--fact", "Marie Curie was born in Warsaw",
                           "--mode", "lexical", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["verdict"] == "survived" and result["in_corpus"] and result["validator_calls"] == 1


def test_hybrid_mode_asks_the_judge_only_with_lexical_evidence(knowledge):
    judge = ReplayModel(rules=[{"completion": '{"answer": "yes"}'}])  # a judge that says yes to all
    validator = FactValidator(knowledge, EntailmentJudge(judge, mode="hybrid"))
    vienna = proposal("sentence: 2\nerror_fact: Einstein was born in Vienna.")
    # Authenticity passes (words overlap, judge yes); support fails lexically: no judge call.
    assert validator.check(EINSTEIN, BIO, vienna).verdict == "caught"
    assert validator.llm_calls == 2
    ulm = BIO.replace("Vienna", "Ulm")
    assert validator.check(EINSTEIN, ulm, proposal("sentence: 2\nerror_fact: Einstein was born in Ulm.",
                                                   output=ulm)).verdict == "survived"
    no = FactValidator(knowledge, EntailmentJudge(ReplayModel(rules=[
        {"match": "whether a claim is stated", "completion": '{"answer": "yes"}'},
        {"completion": '{"answer": "no"}'}]), mode="hybrid"))
    assert no.check(EINSTEIN, ulm, proposal("sentence: 2\nerror_fact: Einstein was born in Ulm.",
                                            output=ulm)).verdict == "caught"  # the judge vetoes


def test_check_many_asks_the_judge_once_per_stage_for_every_proposal(knowledge):
    class Counting:
        """Says yes to authenticity (the fact is in the sentence) and no to support."""

        model_id = "counting"

        def __init__(self):
            self.batches = []

        def generate(self, conversations, sampling, n=1):
            self.batches.append(len(conversations))
            answer = "no" if len(self.batches) > 1 else "yes"
            return [[Completion(text=json.dumps({"answer": answer}))] for _ in conversations]

    model = Counting()
    validator = build_fact_validator(model)
    born = lambda place: proposal(f"sentence: 2\nerror_fact: Einstein was born in {place}.")
    unparseable = proposal("no claim here")
    items = [(EINSTEIN, BIO, born("Vienna")), (EINSTEIN, BIO, unparseable), (EINSTEIN, BIO, born("Vienna"))]
    verdicts = validator.check_many(items)
    # Two authenticity questions in one call, then two verifications in one call.
    assert model.batches == [2, 2]
    assert [v.verdict for v in verdicts] == ["caught", "invalid", "caught"] and validator.calls == 3
    assert verdicts[0].details["sentence_text"].startswith("He was born in Vienna")
