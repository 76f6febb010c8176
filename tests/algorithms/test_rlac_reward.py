"""The reward-model baseline (ArmoRM / AceCoder-RM): a transformers sequence-classification
model scores the K outputs and ranked pairs, under RLAC's pair budget, train the generator.

The reward model is a tiny random-initialised Llama built here, with the embedded model's
tokenizer (and chat template); generator and DPO are the replay fakes of test_rlac_loop.
"""

import pytest

from coevo.algorithms.rlac.reward_model import RewardModelSettings
from coevo.algorithms.rlac import RlacConfig, run_rlac
from coevo.core.strict import ConfigError
from coevo.settings.config import validate
from coevo.llm.base import user
from coevo.run.runner import summary_dict
from coevo.rundir.store import RunStore

from tests.algorithms.test_rlac_loop import BAD, CURIE, FACT_MODELS, GOOD, GOOD_R, fakes, facts_config  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def embedded_tokenizer():
    from transformers import AutoTokenizer

    from coevo.llm import embedded

    if embedded.is_converted():
        return AutoTokenizer.from_pretrained(str(embedded.converted_dir()))
    gguf = embedded.gguf_path()
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


@pytest.fixture(scope="module")
def reward_model(tmp_path_factory):
    """hf:PATH of a one-layer Llama with a one-output classification head, random weights."""
    import torch
    from transformers import LlamaConfig, LlamaForSequenceClassification

    tokenizer = embedded_tokenizer()
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         num_labels=1, pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = LlamaForSequenceClassification(config)
    torch.nn.init.normal_(model.score.weight, std=1.0)  # rewards spread enough to rank outputs
    path = tmp_path_factory.mktemp("reward_model")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return f"hf:{path}"


def test_scores_are_the_models_logit_and_do_not_depend_on_the_batch(reward_model):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from coevo.algorithms.rlac.reward_model import RewardModelScorer

    items = [(user("Write a biography of Albert Einstein."), GOOD), (user("Write a biography of Albert Einstein."), BAD),
             (user("Write a biography of Marie Curie."), CURIE)]
    scorer = RewardModelScorer(reward_model, RewardModelSettings(batch_size=3))
    batched = scorer.score(items)
    one_by_one = RewardModelScorer(reward_model, RewardModelSettings(batch_size=1)).score(items)
    assert batched == pytest.approx(one_by_one, abs=1e-4)  # padding changes nothing
    assert len(set(round(x, 4) for x in batched)) == 3
    # The reward is the model's logit on the chat-formatted conversation.
    path = reward_model.removeprefix("hf:")
    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModelForSequenceClassification.from_pretrained(path)
    text = tokenizer.apply_chat_template([{"role": "user", "content": items[0][0][0].content},
                                          {"role": "assistant", "content": items[0][1]}], tokenize=False)
    with torch.inference_mode():
        logit = model(**tokenizer(text, return_tensors="pt", add_special_tokens=False)).logits[0, 0]
    assert batched[0] == pytest.approx(float(logit), abs=1e-4)


def test_the_reward_model_baseline_pairs_higher_over_lower_rewards_under_the_budget(tmp_path, fakes,
                                                                                   reward_model):
    from coevo.algorithms.rlac.reward_model import RewardModelScorer

    outputs = [GOOD, BAD, GOOD_R]
    fakes["models"]["gen"] = [{"match": "biography of Albert Einstein", "completions": outputs},
                              FACT_MODELS["gen"][1]]
    config = facts_config(verification="reward_model", reward_model=reward_model, k=3,
                          max_pairs_per_instruction=2)
    store = RunStore(tmp_path)
    summary = run_rlac(config, store)
    [gen] = fakes["trained"]  # the generator only: this baseline has no critic
    scores = {r["output"]: r["score"] for _, r in store.get_records("rlac_reward")}
    assert set(scores) == set(outputs)
    assert len(gen["pairs"]) == 2 and all(p.source == "reward_model:facts" for p in gen["pairs"])
    assert all(scores[p.chosen] > scores[p.rejected] for p in gen["pairs"])
    best, worst = max(outputs, key=scores.get), min(outputs, key=scores.get)
    assert (gen["pairs"][0].chosen, gen["pairs"][0].rejected) == (best, worst)
    # Scored on the conversation the generator was asked, its system message included.
    asked = gen["pairs"][0].conversation()
    assert [m.role for m in asked] == ["system", "user"]
    scorer = RewardModelScorer(reward_model, RewardModelSettings())
    assert scores[best] == pytest.approx(scorer.score([(asked, best)])[0], abs=1e-4)
    assert scores[best] != pytest.approx(scorer.score([(asked[1:], best)])[0], abs=1e-4)
    assert summary.condition == "reward_model"
    assert summary.pairs == {"reward_model": {"1": {"generator": 2, "critic": 0}}}
    assert summary.reward_model == {"spec": reward_model, "outputs_scored": 3}
    # No validator call, the reward model decides: a count never added to, still in summary.json.
    assert summary_dict(summary)["verification_calls"]["used"] == 0
    assert store.get_records("rlac_proposal") == []


def test_the_reward_model_baseline_needs_an_hf_reward_model():
    with pytest.raises(ConfigError, match="needs `reward_model"):
        validate(RlacConfig, {"verification": "reward_model"})
    with pytest.raises(ConfigError, match="only `hf:PATH_OR_ID`"):
        validate(RlacConfig, {"verification": "reward_model", "reward_model": "smollm2"})


def test_a_classifier_with_several_outputs_is_refused(tmp_path):
    import torch
    from transformers import LlamaConfig, LlamaForSequenceClassification

    from coevo.algorithms.rlac.reward_model import RewardModelScorer
    from coevo.llm.base import ModelError

    tokenizer = embedded_tokenizer()
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, num_labels=3,
                         pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
    torch.manual_seed(0)
    LlamaForSequenceClassification(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    with pytest.raises(ModelError, match="3 outputs per row"):
        RewardModelScorer(f"hf:{tmp_path}", RewardModelSettings()).score([(user("p"), "a")])
