"""GRPO glue: prompts + a plain reward callable -> TRL `GRPOTrainer`, training the policy in place.

TAIScore's critic adaptation (§4.4 step 1) is GRPO whose reward runs other models: the critic
samples N critiques per (x, y0), the actor revises under each, the judge scores the revision.
That reward is an ordinary TRL reward function `(prompts, completions, **columns) -> list[float]`
built by the algorithm; this module only runs it. It must return RAW scores: TRL subtracts
the group mean and divides by the group std itself (`scale_rewards="group"`), so a reward
that normalised too would be normalised twice.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from coevo.core.checkpoint_identity import RESULT_FILE
from coevo.train import distributed
from coevo.train.checkpoints import (
    adopt_finished,
    entry_folder,
    finish_stage,
    global_step,
    last_checkpoint,
    origin_named,
)
from coevo.train.common import TrainResult, prepare_lora, stage_callbacks, world_size
from coevo.train.errors import TrainError
from coevo.train.measuring import measured_train
from coevo.train.reporting import logging_dir, require_reporters, route_logs, stage_label
from coevo.train.rollout import rollout_for
from coevo.train.settings import StageSettings, trl_config

if TYPE_CHECKING:
    import datasets

    from coevo.llm.local import LocalModel

log = logging.getLogger(__name__)

# Keyword names TRL itself passes to reward functions; a dataset column may not shadow them.
_RESERVED = {"prompt", "prompts", "completion", "completions", "completion_ids", "trainer_state",
             "log_extra", "log_metric", "environments"}


class GRPOSettings(StageSettings):
    """GRPO hyper-parameters (TAIScore Table 12 defaults: 4 critiques per y0, T 0.8, top-p 0.95).

    `batch_size` counts PROMPTS per optimizer step, as the paper's Table 12 (a VeRL setting:
    batch 8 = 8 prompts x N critiques = 32 completions); `grad_accum` splits those
    completions into micro-batches without changing what one step sees. learning_rate,
    grad_accum, max_steps, epochs, save_steps, lora, seed, trl and report_to are every
    stage's (`StageSettings`).
    """

    num_generations: int = Field(4, ge=2)
    beta: float = Field(0.02, ge=0)  # KL coefficient; 0 = no reference model at all
    batch_size: int = Field(8, ge=1)  # prompts per optimizer step (x num_generations completions)
    #: The paper's objective is GRPO's (Shao et al. 2024): each critique's token losses
    #: averaged over its own length, then over the group; TRL 1.16 defaults to "dapo".
    loss_type: str = "grpo"
    temperature: float = Field(0.8, gt=0)
    top_p: float = Field(0.95, gt=0, le=1)
    #: Above 1, tokens already in a completion are less likely again (1: off, as the paper).
    repetition_penalty: float = Field(1.0, gt=0, le=10)
    #: Table 12's prompt limit, in chat-templated tokens. Nothing here cuts a prompt: TAIScore's
    #: critic builds its prompts within it (y0 shortened in its middle, header and x kept).
    max_prompt_length: int = Field(2048, ge=1)
    max_completion_length: int = Field(4096, ge=1)
    #: Where a step's samples are written: TRL's own sampling on the trained model
    #: (`transformers`), or llama.cpp on the policy's weights as they are at that step
    #: (`llamacpp`, train/rollout.py: Llama-architecture models, ~6x faster on a CPU). On GPUs
    #: `use_vllm` is TRL's own fast path.
    rollout_engine: Literal["transformers", "llamacpp"] = "transformers"
    use_vllm: bool = False
    vllm_mode: Literal["server", "colocate"] = "server"
    vllm_server_base_url: str | None = None

    @property
    def completions_per_step(self) -> int:
        return self.batch_size * self.num_generations

    @model_validator(mode="after")
    def _whole_micro_batches(self) -> GRPOSettings:
        if self.completions_per_step % self.grad_accum:
            raise ValueError(
                f"grad_accum ({self.grad_accum}) must divide the {self.completions_per_step} completions of a "
                f"step (batch_size {self.batch_size} prompts x num_generations {self.num_generations}); "
                f"e.g. grad_accum: {self.num_generations}"
            )
        if self.use_vllm and self.rollout_engine != "transformers":
            raise ValueError("grpo: use_vllm and rollout_engine: llamacpp both say where samples are written; "
                             "keep one")
        return self

    def per_device_batch(self, world_size: int) -> int:
        """Completions per device per micro-batch: a step's completions over devices and micro-batches."""
        per_device, rest = divmod(self.completions_per_step, self.grad_accum * world_size)
        if rest or not per_device:
            raise TrainError(
                f"{self.completions_per_step} completions per step (batch_size {self.batch_size} x "
                f"num_generations {self.num_generations}) do not split over {world_size} processes x grad_accum "
                f"{self.grad_accum}; make batch_size x num_generations a multiple of {self.grad_accum * world_size}")
        return per_device


def prompts_to_dataset(
    prompts: list[list[dict]] | list[str],
    tokenizer: Any = None,
    *,
    max_prompt_length: int | None = None,
    extra_columns: dict[str, list] | None = None,
) -> datasets.Dataset:
    """A conversational GRPO dataset: `prompt` = a conversation, plus the extra columns.

    Plain strings become single user turns, so TRL applies the chat template exactly as the
    role is sampled elsewhere. No prompt is ever cut here: cutting from either side drops
    part of what the policy is asked (the critic's Table 6 header and instruction, from the
    left), so prompts are built within `max_prompt_length` where they are written (the
    Critic shortens y0 in its middle, `Critic.fitted_prompt`). Prompts still over it (with
    `tokenizer`, counted in chat-templated tokens) are kept whole and a warning says how
    many. TRL 1.16 cuts no prompt either: it applies the chat template and tokenizes whole
    (GRPOTrainer._tokenize_prompts has no prompt-length limit).
    """
    import datasets

    if not prompts:
        raise TrainError("train_grpo got no prompts: the round's shard is empty; check data.limit and the shards")
    rows: dict[str, list] = {"prompt": [_conversation(p) for p in prompts]}
    if tokenizer is not None and max_prompt_length is not None:
        _warn_over_length(rows["prompt"], tokenizer, max_prompt_length)
    for name, values in (extra_columns or {}).items():
        if name in _RESERVED:
            raise TrainError(f"extra column {name!r} would shadow TRL's own reward argument; rename it")
        if len(values) != len(prompts):
            raise TrainError(f"extra column {name!r} has {len(values)} values for {len(prompts)} prompts; "
                             "give one value per prompt")
        rows[name] = list(values)
    return datasets.Dataset.from_list([dict(zip(rows, values)) for values in zip(*rows.values())])


def _conversation(prompt: Any) -> list[dict[str, str]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [m.model_dump() if hasattr(m, "model_dump") else dict(m) for m in prompt]


def _warn_over_length(conversations: list[list[dict[str, str]]], tokenizer: Any, limit: int) -> None:
    """Say how many prompts are over `limit` tokens (they are kept whole, never cut)."""
    from coevo.llm.common import chat_tokens

    over = [n for n in (chat_tokens(tokenizer, conv) for conv in conversations) if n > limit]
    if over:
        log.warning("%d of %d GRPO prompts are over max_prompt_length=%d tokens (longest %d); they are kept whole, "
                    "never cut: build them within the limit or raise it", len(over), len(conversations), limit,
                    max(over))


class _Timed:
    """Wraps a callable and adds up the seconds spent in it (TRL names reward metrics by __name__)."""

    def __init__(self, fn: Callable[..., Any]):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.seconds = 0.0
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def train_grpo(
    policy: LocalModel,
    prompts: list[list[dict]] | list[str],
    reward_fn: Callable[..., list[float]],
    settings: GRPOSettings,
    output_dir: Path,
    *,
    resume: bool = True,
    extra_columns: dict[str, list] | None = None,
    callbacks: list[Any] | None = None,
) -> TrainResult:
    """GRPO on `prompts` with `reward_fn`, updating `policy.model` in place.

    reward_fn(prompts, completions, **columns) returns one RAW float (or None = unscorable)
    per completion; completions arrive as conversations ([{"role": "assistant", "content": ...}]).
    extra_columns (e.g. y0, sample_id) reach it as keyword lists aligned with the completions.
    The KL reference is the policy at entry. Checkpoints, resume and output_dir/final work as
    in `train_dpo`. metrics["reward_time_share"] is the share of training wall time spent
    inside reward_fn, metrics["generation_time_share"] the share spent sampling completions.
    """
    output_dir = Path(output_dir)
    final = output_dir / "final"
    # Many processes: the other ranks enter this same stage (distributed.py), and every
    # rank's completions are scored on rank 0, the only one with the actor and the judge.
    distributed.tell("grpo", key=distributed.key_of(policy), prompts=prompts, settings=settings,
                     output_dir=output_dir, resume=resume, extra_columns=extra_columns)
    reward_fn = distributed.shared_reward(reward_fn) if distributed.is_main() else reward_fn
    dataset = prompts_to_dataset(prompts, policy.tokenizer, max_prompt_length=settings.max_prompt_length,
                                 extra_columns=extra_columns)
    prepare_lora(policy, settings.lora)
    if resume and (final / RESULT_FILE).exists():
        return adopt_finished(policy, final, "GRPO")

    checkpoints = output_dir / "checkpoints"
    resume_from = last_checkpoint(checkpoints) if resume else None
    start_step = global_step(resume_from)
    require_reporters(settings.report_to, "grpo")
    args = grpo_config(settings, checkpoints)
    if getattr(policy, "chat_template_kwargs", None):  # the role's `thinking`: TRL templates as the role samples
        args.chat_template_kwargs = {**(args.chat_template_kwargs or {}), **policy.chat_template_kwargs}
    timed_reward = _Timed(reward_fn)
    rollout = rollout_for(policy, settings, output_dir / "rollout")
    trainer = _grpo_trainer(policy, dataset, timed_reward, args, callbacks, rollout)
    route_logs(trainer, stage_label("grpo", output_dir), logging_dir(output_dir))
    timed_generate = _time_generation(trainer)
    with contextlib.closing(rollout) if rollout is not None else contextlib.nullcontext():
        run = measured_train(trainer, policy.model, resume_from)
    metrics = {
        "reward_time_share": timed_reward.seconds / max(run.seconds, 1e-9),
        "reward_seconds": timed_reward.seconds,
        "prompts": float(len(dataset)),
        **run.metrics(),
        **learning_signals(trainer.state.log_history),
    }
    if timed_generate is not None:
        metrics["generation_time_share"] = timed_generate.seconds / max(run.seconds, 1e-9)
    return finish_stage(
        policy, trainer, final, kind="grpo", start_step=start_step, seconds=run.seconds, peak_rss_mb=run.peak_rss_mb,
        metrics=metrics, resumed_from=resume_from,
    )


def vllm_sampling_refusal() -> str | None:
    """Why TRL's vLLM sampling (`use_vllm`) cannot run on this machine, or None where it can.

    It needs a GPU. On vLLM's CPU build (0.32, beside TRL 1.16, which supports vLLM up to
    0.31) colocate mode starts the engine and samples, but TRL's weight sync after a step fails
    inside vLLM's `load_weights` ("'Parameter' object has no attribute 'weight_loader'"), so
    the second step's samples could never come from the first step's weights; server mode
    pushes weights over NCCL, which a CPU lacks (docs/scaling.md, "Known gaps")."""
    import torch

    if torch.cuda.is_available():
        return None
    return ("grpo.use_vllm: TRL's vLLM sampling needs a GPU; on this CPU TRL cannot load the updated policy's "
            "weights into vLLM's CPU build after a step (docs/scaling.md, Known gaps), so the samples would not "
            "follow training: set grpo.use_vllm=false here (rollout_engine=llamacpp samples fast on a CPU)")


def grpo_config(settings: GRPOSettings, checkpoints: Path) -> Any:
    """TRL's `GRPOConfig` for `settings`, saving checkpoints under `checkpoints`, with the
    block's `trl:` mapping passed through (see `trl_config`)."""
    from trl import GRPOConfig

    vllm: dict[str, Any] = {}
    if settings.use_vllm:
        vllm = {"use_vllm": True, "vllm_mode": settings.vllm_mode}
        if settings.vllm_server_base_url:
            vllm["vllm_server_base_url"] = settings.vllm_server_base_url
    return trl_config(GRPOConfig, "grpo", dict(
        output_dir=str(checkpoints),
        num_generations=settings.num_generations,
        beta=settings.beta,
        learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.per_device_batch(world_size()),
        gradient_accumulation_steps=settings.grad_accum,
        loss_type=settings.loss_type,
        temperature=settings.temperature,
        top_p=settings.top_p,
        repetition_penalty=settings.repetition_penalty,
        max_completion_length=settings.max_completion_length,
        max_steps=settings.max_steps or -1,
        num_train_epochs=settings.epochs,
        save_strategy="steps",
        save_steps=settings.save_steps,
        save_total_limit=2,
        logging_steps=1,
        seed=settings.seed,
        report_to=settings.report_to,
        # TRL's own bar and printed dicts are replaced by coevo's (see `route_logs`).
        disable_tqdm=True,
        # Stated, not inherited: the reward must stay raw because TRL normalises per group here.
        scale_rewards="group",
        **vllm,
    ), settings.trl)


def _grpo_trainer(policy: LocalModel, dataset: datasets.Dataset, reward: _Timed, args: Any,
                  callbacks: list[Any] | None, rollout: Any = None) -> Any:
    """TRL's `GRPOTrainer` on the policy, its KL reference set to the policy at entry: loaded
    by TRL from the folder that holds the entry weights where there is one (`origin_named`;
    right under ZeRO-3 / FSDP too), else copied in (`_reference_is_policy_at_entry`)."""
    GRPOTrainer = trl_grpo_trainer(use_vllm=bool(getattr(args, "use_vllm", False)))
    folder = entry_folder(policy)
    with origin_named(policy.model, folder):
        trainer = GRPOTrainer(
            model=policy.model,
            reward_funcs=[reward],
            args=args,
            train_dataset=dataset,
            processing_class=policy.tokenizer,
            callbacks=stage_callbacks(callbacks),
            **({"rollout_func": rollout} if rollout is not None else {}),
        )
    if folder is None:
        _reference_is_policy_at_entry(trainer, policy.model)
    return trainer


def trl_grpo_trainer(*, use_vllm: bool) -> type:
    """TRL's `GRPOTrainer` class. Unless this stage samples on vLLM, its module is imported as if
    vLLM were not installed: TRL imports vLLM with it whenever vLLM is installed (coevo's
    frozen roles may serve on it), which cost a training process ~4 s and ~190 MB it never
    used (BENCHMARKS.md, "TRL without vLLM")."""
    import importlib
    import importlib.util
    import sys

    if not use_vllm and "trl.trainer.grpo_trainer" not in sys.modules and "vllm" not in sys.modules:
        # A None entry in sys.modules is Python's "this module cannot be imported": find_spec
        # answers None, so TRL's is_vllm_available() is False while its modules load.
        sys.modules["vllm"] = None  # type: ignore[assignment]
        try:
            importlib.import_module("trl.trainer.grpo_trainer")
        finally:
            del sys.modules["vllm"]
    from trl import GRPOTrainer

    loaded_without = not hasattr(sys.modules["trl.generation.vllm_generation"], "LLM")
    if use_vllm and loaded_without and importlib.util.find_spec("vllm") is not None:
        raise TrainError("TRL's GRPO was loaded without vLLM earlier in this process (a stage without "
                         "grpo.use_vllm ran first); run the stage with use_vllm: true in a new process")
    return GRPOTrainer


def _time_generation(trainer: Any) -> _Timed | None:
    """Time the trainer's sampling of completions, where TRL's (private) `_generate` exists;
    never depend on it."""
    if not hasattr(trainer, "_generate"):
        return None
    timed = _Timed(trainer._generate)
    trainer._generate = timed
    return timed


def learning_signals(log_history: list[dict[str, Any]]) -> dict[str, float]:
    """What says whether GRPO could learn, averaged over the stage's logged steps:
    `zero_std_fraction` (share of groups whose rewards were all equal: no advantage, no
    gradient), `clipped_ratio` (share of completions cut at the length limit), the reward's
    mean and within-group sd, and the loss and gradient norm."""
    keys = {"zero_std_fraction": "frac_reward_zero_std", "clipped_ratio": "completions/clipped_ratio",
            "reward_mean": "reward", "reward_group_sd": "reward_std", "grad_norm": "grad_norm",
            "step_loss": "loss"}
    out = {}
    for name, key in keys.items():
        values = [float(row[key]) for row in log_history if key in row and row[key] is not None]
        if values:
            out[name] = sum(values) / len(values)
    return out


def _reference_is_policy_at_entry(trainer: Any, model: Any) -> None:
    """Where no folder holds the entry weights, TRL builds the full fine-tuning KL reference
    from the model's first origin on disk; copy the entry weights into it. (With LoRA, TRL
    keeps the adapter at entry as a frozen "ref" adapter.) Sharded references (DeepSpeed
    ZeRO-3 / FSDP) cannot take a copy: there the entry weights are always in a folder."""
    ref = getattr(trainer, "ref_model", None)
    if ref is None or trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled:
        return
    import torch

    target = trainer.accelerator.unwrap_model(ref)
    with torch.no_grad():
        target.load_state_dict(model.state_dict())
