"""RLAC's configuration: its data, its roles (each one's model, options, template and
sampling, in `roles:`), the two tasks' settings (facts, code) and the paper's defaults
(App. A, B)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from coevo.algorithms.rlac.detection import DetectionSettings
from coevo.algorithms.rlac.reward_model import RewardModelSettings
from coevo.core.strict import StrictModel
from coevo.settings.config import ExperimentConfig
from coevo.audit.config import AuditConfig
from coevo.monitor.config import MonitorConfig, Watches
from coevo.settings.role_specs import ModelRole, RoleSet
from coevo.train.dpo import DPOSettings
from coevo.core.types import Sampling

if TYPE_CHECKING:
    pass

# --------------------------------------------------------------------------- config


class RlacData(StrictModel):
    """Instructions: biographies of corpus people (facts) or code problems (code)."""

    #: facts: a {title, text} corpus (`bundled:bios` or a JSONL path); code: `humaneval`,
    #: `bundled:code_easy` or a JSONL.
    source: str | None = None
    #: Held-out instructions from another source than the train ones (code: the paper trains
    #: on AceCode-87K-hard problems and evaluates on HumanEval); None: both from `source`.
    heldout_source: str | None = None
    train: int = Field(4, ge=1)
    heldout: int = Field(2, ge=1)
    #: Pin the people / problem ids instead of a seeded draw (train first, then held-out).
    train_ids: list[str] | None = None
    heldout_ids: list[str] | None = None
    sentences: int = Field(4, ge=1)  # facts: "exactly n sentences" (the paper: 4 or 8)
    seed: int = 0

    @model_validator(mode="after")
    def _pinned_ids_are_the_sizes(self) -> RlacData:
        # So `train` / `heldout` always say how many instructions a run has (the plan, the
        # departures and the summary read them), pinned or drawn.
        if self.train_ids:
            self.train = len(self.train_ids)
        if self.heldout_ids:
            self.heldout = len(self.heldout_ids)
        return self


class FactsSettings(StrictModel):
    #: Entailment judgments: the judge model (the paper), word overlap, or both (see facts.py).
    judge: Literal["llm", "lexical", "hybrid"] = "llm"
    atomic_facts: Literal["llm", "sentences"] = "llm"
    passages: int = Field(3, ge=1)
    min_overlap: float = Field(0.5, ge=0, le=1)
    #: How the entailment judge answers: under the {"answer": yes|no} schema (default; the
    #: 135M judge needs it), or freely, parsed after, as FactScore's True/False (App. B.1).
    judge_output: Literal["schema", "free"] = "schema"


class CodeSettings(StrictModel):
    timeout_s: float = Field(5.0, gt=0)
    #: Asks for model-written code to run WITHOUT isolation where none works. A config file
    #: alone cannot allow it: `coevo run --unsafe-exec` or COEVO_UNSAFE_EXEC=1 must too.
    unsafe_exec: bool = False

    @field_validator("unsafe_exec")
    @classmethod
    def _allowed_outside_the_file(cls, value: bool) -> bool:
        from coevo.validators.sandbox import UNSAFE_ENV_VAR, unsafe_allowed

        if value and not unsafe_allowed():
            raise ValueError(f"running model-written code without isolation needs the command line's consent: "
                             f"pass --unsafe-exec to `coevo run` (or set {UNSAFE_ENV_VAR}=1), or install "
                             "bubblewrap and set unsafe_exec: false")
        return value
    #: critic_form=paper only: fill the paper prompt's {optional_examples_block} with one
    #: answer in its <testcase> format, built from a call in the problem's own docstring
    #: (`>>> f(3.5)`). The schema form needs no example: its grammar fixes the form.
    critic_examples: bool = False


class GeneratorSampling(StrictModel):
    """The generator's two uses: training samples (K per instruction) and held-out evaluation."""

    train: Sampling = Sampling(temperature=0.8, top_p=0.95, max_tokens=256)
    #: Held-out evaluation decodes greedily: FactScore and pass@1 of the policy's mode.
    eval: Sampling = Sampling(temperature=0.0, max_tokens=256)


class GeneratorRole(ModelRole):
    """The trained generator of Algorithm 1 (pi_g)."""

    #: Its prompt template: a bundled name or a path to your own file (coevo/prompts: a
    #: `<<system>>` / `<<user>>` split gives a system message). Left out, the paper's for the
    #: task (App. A.1): `generator_bio` / `generator_code`.
    template: str | None = None
    sampling: GeneratorSampling = GeneratorSampling()


class RlacCriticRole(ModelRole):
    """The critic of Algorithm 1 (pi_c): trained in the adversarial condition, frozen in the
    static one, not loaded by the baselines."""

    #: Its prompt template, as the generator's. Left out, the paper's for the task and critic
    #: form (App. A.2): `critic_fact` / `critic_code` (`critic_*_schema` for the schema form).
    template: str | None = None
    sampling: Sampling = Sampling(temperature=0.8, top_p=0.95, max_tokens=128)


class ValidatorJudgeSampling(StrictModel):
    """The judge's two uses: the facts validator's entailment judgments and atomic-fact splits."""

    entail: Sampling = Sampling(temperature=0.0, max_tokens=16)
    split: Sampling = Sampling(temperature=0.0, max_tokens=384)


class RlacJudgeRole(ModelRole):
    """The facts validator's entailment judge and the atomic-fact splitter (frozen)."""

    sampling: ValidatorJudgeSampling = ValidatorJudgeSampling()


class RlacRoles(RoleSet):
    """The roles of Algorithm 1 (backend options per role in `options`, or for every role in
    `default.options`)."""

    generator: GeneratorRole = GeneratorRole()
    critic: RlacCriticRole = RlacCriticRole()
    judge: RlacJudgeRole = RlacJudgeRole()


#: Where each key of RLAC's old `models` / `sampling` / `templates` blocks went.
RLAC_MOVED = {
    "models.generator": "roles.generator.model", "models.critic": "roles.critic.model",
    "models.judge": "roles.judge.model",
    "models.frozen_options": "roles.<role>.options (or roles.default.options)",
    "sampling.generator": "roles.generator.sampling.train", "sampling.eval": "roles.generator.sampling.eval",
    "sampling.critic": "roles.critic.sampling", "sampling.judge": "roles.judge.sampling.entail",
    "sampling.splitter": "roles.judge.sampling.split",
    "templates.generator": "roles.generator.template", "templates.critic": "roles.critic.template",
}


#: The paper's generator template of each task (App. A.1): a system message with the bio
#: instructions and the user's request; for code the problem statement alone, unmodified.
PAPER_GENERATOR_TEMPLATE = {"facts": "generator_bio", "code": "generator_code"}
#: The task of each bundled generator template (its fields are that task's).
GENERATOR_TASK = {"generator_bio": "facts", "generator_code": "code", "generator_code_instructed": "code"}
#: The critic's template of each (task, critic_form): App. A.2's prompts, or ours for the
#: schema form (the same system/user split, the answer form asked for as JSON).
CRITIC_TEMPLATE = {("facts", "paper"): "critic_fact", ("facts", "schema"): "critic_fact_schema",
                   ("code", "paper"): "critic_code", ("code", "schema"): "critic_code_schema"}


class RlacMonitor(MonitorConfig):
    """RLAC is watched round by round against its held-out gold (hidden tests, checked facts)."""

    WATCHES = Watches(algorithm="rlac", gold=True, models=False, stop=False)


class RlacAudit(AuditConfig):
    """RLAC audits its frozen judges only: no evaluator's update for the gate to refuse."""

    ALGORITHM = "rlac"
    NO_GATE = "the audited validator is frozen; the critic's claims are checked, not trusted"


class RlacConfig(ExperimentConfig):
    """`algorithm: rlac` — the paper's defaults: K=10 outputs, N=4 proposals (facts)."""

    MOVED_KEYS = RLAC_MOVED

    algorithm: Literal["rlac"] = "rlac"
    task: Literal["facts", "code"] = "facts"
    iterations: int = Field(2, ge=1)
    k: int = Field(10, ge=2)  # generator outputs per instruction
    #: Critic proposals per output, trained critic or static alike: the paper's critic
    #: "proposes 4 rubrics per output" for all methods (§4.1), and its static ablation only
    #: freezes the critic. The generator's reward is the first one's verdict (Algorithm 1,
    #: line 6: one c_i per a_i); the critic's pairs come from all N (line 10).
    n: int = Field(4, ge=1)
    critic_training: Literal["adversarial", "static"] = "adversarial"
    #: How the critic answers. `schema` (default): decoded under a JSON schema built for the
    #: output at hand (facts: {"sentence": 1..n, "error_fact", "reason"}; code: the arguments
    #: of one call of the function under test), with prompts saying so (critic_*_schema.md);
    #: the form is fixed, the content is the model's. `paper`: the paper's App. A prompts and
    #: free text (<testcase> tags, three lines), which a 135M critic rarely writes.
    critic_form: Literal["schema", "paper"] = "schema"
    #: Where the generator's reward comes from: `critic` (RLAC: one critic proposal per output,
    #: checked by the validator), `enumerative` (every atomic fact / reference test of every
    #: output: FactTune-FS, AceCoder-Rule) or `reward_model` (a learned scalar reward of each
    #: output: ArmoRM, AceCoder-RM; needs `reward_model`). The baselines pair outputs by
    #: score under the same `max_pairs_per_instruction` budget as RLAC.
    verification: Literal["critic", "enumerative", "reward_model"] = "critic"
    #: The reward-model baseline's scorer: `hf:PATH_OR_ID` of a transformers
    #: sequence-classification model with one output (ArmoRM-Llama3-8B-v0.1 for facts,
    #: AceCodeRM-7B for code in the paper). Read only when verification is `reward_model`.
    reward_model: str | None = None
    reward_scoring: RewardModelSettings = RewardModelSettings()
    validator: Literal["real", "random"] = "real"
    #: Also count (facts: split into atomic facts) what enumerative checking of the same
    #: generations would cost; off saves the splitter calls but loses the ratio.
    count_enumerative: bool = True
    #: Generator DPO pairs per instruction, for every condition alike (RLAC's survived-vs-
    #: caught pairs and the baselines' score-ranked pairs), so no method gets more signal.
    max_pairs_per_instruction: int = Field(4, ge=1)
    max_pairs_per_output: int = Field(2, ge=1)
    kl: bool = True
    #: What the trained generator generates with between its DPO stages (its K outputs, its
    #: held-out outputs): the trained transformers model itself, a vLLM engine on its latest
    #: finished weights (a GPU's fast path: full weights, or a LoRA adapter on the base), or
    #: llama.cpp on a GGUF of its weights as they are (the embedded model's shape; its generation took 0.49x the time in
    #: rlac_code_tiny, BENCHMARKS.md), made again after each of its stages (algorithms/
    #: engines.py; without llama.cpp installed it generates where it trains, said once). Not a
    #: departure: the same weights (in F16), decoded by another engine.
    generator_engine: Literal["transformers", "vllm", "llamacpp"] = "transformers"
    #: The same for the critic's proposals. A static critic is the trained one's starting
    #: weights on this same engine, never updated (a critic model that cannot train, an API
    #: model say, generates where frozen roles do): the two conditions differ only in training.
    critic_engine: Literal["transformers", "vllm", "llamacpp"] = "transformers"
    #: torch intra-op threads for generation and training. On a shared machine one thread is
    #: ~10x faster than two fighting other jobs (measured: 16 tokens x 4 rows, 2.3 s vs 22 s);
    #: None leaves torch's default (all cores), right for a machine of your own.
    torch_threads: int | None = Field(None, ge=1)
    data: RlacData = RlacData()
    roles: RlacRoles = RlacRoles()
    dpo: DPOSettings = DPOSettings(max_length=1024, max_prompt_length=768)
    facts: FactsSettings = FactsSettings()
    code: CodeSettings = CodeSettings()
    #: Not in the paper (a diagnosis, not a departure): the facts validator's entailment judge
    #: probed with content-free critic proposals before iteration 1 and after every iteration
    #: (rlac/audit.py); its calls are counted apart from the verification calls.
    audit: RlacAudit = RlacAudit()
    #: The reward-hacking monitor (docs/monitor.md), per iteration: the generator's rewards
    #: against the `gold` anchor (held-out pass@1 or FactScore per item).
    monitor: RlacMonitor = RlacMonitor()
    #: Not in the paper's loop (a measurement, not a departure): the critic's detection rate
    #: on fixed failing held-out outputs, before iteration 1 and after each (rlac/detection.py).
    detection: DetectionSettings = DetectionSettings()
    seed: int = 0

    @model_validator(mode="after")
    def _paper_templates_by_default(self) -> RlacConfig:
        # Filled in here, not left None, so summary.json, the plan and the departures name
        # the template a run actually uses.
        critic = CRITIC_TEMPLATE[(self.task, self.critic_form)]
        generator_role, critic_role = self.roles.generator, self.roles.critic
        generator_role.template = generator_role.template or PAPER_GENERATOR_TEMPLATE[self.task]
        critic_role.template = critic_role.template or critic
        # A bundled template of another task or critic form asks for fields this run does
        # not fill, or for an answer form the critic is not decoded in: refused here, not
        # mid-run.
        task = GENERATOR_TASK.get(generator_role.template, self.task)
        if task != self.task:
            raise ValueError(f"roles.generator.template {generator_role.template!r} is a {task} template; "
                             f"task {self.task} uses {PAPER_GENERATOR_TEMPLATE[self.task]!r} (the paper's) or "
                             "your own file")
        if critic_role.template in CRITIC_TEMPLATE.values() and critic_role.template != critic:
            raise ValueError(f"roles.critic.template {critic_role.template!r} does not fit task {self.task} "
                             f"with critic_form {self.critic_form}, which uses {critic!r}; leave "
                             "roles.critic.template out or give your own file")
        return self

    @model_validator(mode="after")
    def _heldout_source_for_code(self) -> RlacConfig:
        if self.task == "facts" and self.data.heldout_source is not None:
            raise ValueError("data.heldout_source is for code; a facts run checks every person against the "
                             "knowledge corpus data.source, so held-out people must be in it (pin them with "
                             "data.heldout_ids)")
        return self

    @model_validator(mode="after")
    def _reward_model_named(self) -> RlacConfig:
        if self.verification == "reward_model" and not self.reward_model:
            raise ValueError("verification: reward_model needs `reward_model: hf:PATH_OR_ID` (a transformers "
                             "sequence-classification reward model, e.g. hf:RLHFlow/ArmoRM-Llama3-8B-v0.1)")
        if self.reward_model and self.reward_model.strip().partition(":")[0] != "hf":
            raise ValueError(f"reward_model {self.reward_model!r}: only `hf:PATH_OR_ID` (a transformers "
                             "sequence-classification model) can score outputs; write it as hf:...")
        return self
