"""DPO glue: preference pairs -> conversational dataset -> TRL `DPOTrainer`, in place.

Both co-evolution papers update a policy against a frozen copy of itself taken at the start
of the stage (TAIScore: actor DPO with reference = pi_t; RLAC: generator and critic DPO with
the reference moved to the new policy after each iteration). `train_dpo` gives exactly that:
the reference is the policy's weights *at entry*, not the base model on disk — TRL's own
`ref_model=None` reloads whatever folder the model was first loaded from, which is wrong from
round 1 on. Where the entry weights are in a folder (the base, or the `final/` the last stage
saved), TRL loads the reference from that folder, the way that works under ZeRO-3 (a copy in
memory of partitioned parameters is empty); otherwise it is a frozen copy in memory.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from coevo.core.checkpoint_identity import RESULT_FILE
from coevo.core.types import PreferencePair
from coevo.train import distributed
from coevo.train.checkpoints import (
    adopt_finished,
    entry_folder,
    finish_stage,
    global_step,
    last_checkpoint,
    origin_named,
)
from coevo.train.common import TrainResult, is_peft, prepare_lora, stage_callbacks, world_size
from coevo.train.errors import TrainError
from coevo.train.measuring import measured_train
from coevo.train.reporting import logging_dir, require_reporters, route_logs, stage_label
from coevo.train.settings import StageSettings, trl_config

if TYPE_CHECKING:
    import datasets

    from coevo.llm.local import LocalModel

log = logging.getLogger(__name__)


class DPOSettings(StageSettings):
    """DPO hyper-parameters (TAIScore Table 12: beta 0.1, lr 1e-6); learning_rate,
    grad_accum, max_steps, epochs, save_steps, lora, seed, trl and report_to are every
    stage's (`StageSettings`)."""

    beta: float = Field(0.1, gt=0)
    #: Pairs per micro-batch over all processes (as GRPO's batch_size): a step sees the same
    #: pairs whether one process trains or several.
    batch_size: int = Field(2, ge=1)
    max_length: int = Field(4096, ge=8)
    max_prompt_length: int = Field(2048, ge=1)

    def per_device_batch(self, world_size: int) -> int:
        per_device, rest = divmod(self.batch_size, world_size)
        if rest or not per_device:
            raise TrainError(f"dpo.batch_size {self.batch_size} does not split over {world_size} processes; "
                             f"make it a multiple of {world_size}")
        return per_device

    @model_validator(mode="after")
    def _prompt_fits(self) -> DPOSettings:
        if self.max_prompt_length >= self.max_length:
            raise ValueError(
                f"max_prompt_length ({self.max_prompt_length}) must be smaller than max_length "
                f"({self.max_length}), or no completion token would be trained"
            )
        return self


def pairs_to_dataset(
    pairs: list[PreferencePair], tokenizer: Any = None, *, max_prompt_length: int | None = None,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> datasets.Dataset:
    """Conversational preference rows: prompt = [system message, user message] (the system
    message only where the pair has one), chosen/rejected = [assistant message].

    TRL applies the tokenizer's chat template to conversational rows, so the policy is trained
    on exactly the messages it was sampled with. With `tokenizer` and `max_prompt_length`,
    prompts longer than that many tokens lose their *middle*: their start (a role's header,
    an RLAC critic's instructions) and their end (the instruction nearest the answer) are
    kept around a marker saying how much is missing, as GRPO's critic prompts are built
    (roles/prompt_budget.py). TRL's former `max_prompt_length` kept the end only, and TRL
    1.16 truncates just the whole sequence. A system message is kept whole and counts
    against the limit: the user message is what gets shortened. `chat_template_kwargs` (the
    role's `thinking` switch) becomes a column TRL applies the template with.
    """
    import datasets

    if not pairs:
        raise TrainError("no preference pairs to train on: the pair filter kept none; "
                         "collect more rollouts or relax the filter")
    rows: dict[str, list] = {"prompt": [], "chosen": [], "rejected": []}
    for pair in pairs:
        prompt = pair.prompt
        if tokenizer is not None and max_prompt_length is not None:
            system_tokens = len(tokenizer(pair.system, add_special_tokens=False)["input_ids"]) if pair.system else 0
            prompt = keep_ends(prompt, tokenizer, max(1, max_prompt_length - system_tokens))
        asked = pair.model_copy(update={"prompt": prompt}).conversation()
        rows["prompt"].append([m.model_dump() for m in asked])
        rows["chosen"].append([{"role": "assistant", "content": pair.chosen}])
        rows["rejected"].append([{"role": "assistant", "content": pair.rejected}])
    if chat_template_kwargs:
        rows["chat_template_kwargs"] = [dict(chat_template_kwargs) for _ in pairs]
    return datasets.Dataset.from_dict(rows)


#: What replaces an over-long DPO prompt's middle (the wording of roles/prompt_budget.py's marker).
OMITTED = "\n[… {n} tokens of the prompt omitted …]\n"


def keep_ends(text: str, tokenizer: Any, limit: int) -> str:
    """`text` within `limit` tokens: unchanged if it fits, else its first and last tokens in
    equal parts around `OMITTED`; only the end where the limit leaves no room for the marker."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) <= limit:
        return text

    def count(piece: str) -> int:
        return len(tokenizer(piece, add_special_tokens=False)["input_ids"])

    keep = limit - count(OMITTED.format(n=len(ids)))
    while keep >= 2:
        head, tail = ids[:(keep + 1) // 2], ids[len(ids) - keep // 2:]
        shortened = (tokenizer.decode(head, skip_special_tokens=False) + OMITTED.format(n=len(ids) - keep)
                     + tokenizer.decode(tail, skip_special_tokens=False))
        # Decoded and tokenized again, the pieces can merge into a token more or less: re-counted.
        if count(shortened) <= limit:
            return shortened
        keep -= 1
    return tokenizer.decode(ids[-limit:], skip_special_tokens=False)


def train_dpo(
    policy: LocalModel,
    pairs: list[PreferencePair],
    settings: DPOSettings,
    output_dir: Path,
    *,
    reference: LocalModel | None = None,
    resume: bool = True,
    callbacks: list[Any] | None = None,
) -> TrainResult:
    """DPO on `pairs`, updating `policy.model` in place; returns where `final` was saved.

    reference: the frozen model DPO measures against; None = a frozen copy of the policy at
    entry (with LoRA, the adapter state at entry, kept by TRL as a frozen "ref" adapter).
    Checkpoints go to output_dir/checkpoints every `save_steps`; with resume=True a later
    call continues from the newest one (a killed stage restarts from its last saved state),
    and a stage whose output_dir/final exists is loaded, not retrained.
    """
    if not pairs:
        raise TrainError("train_dpo got no preference pairs: the pair filter kept none; "
                         "collect more rollouts or relax the filter")
    output_dir = Path(output_dir)
    final = output_dir / "final"
    # Many processes: the other ranks enter this same stage with the same pairs (distributed.py).
    distributed.tell("dpo", key=distributed.key_of(policy), pairs=pairs, settings=settings, output_dir=output_dir,
                     resume=resume, reference_key=distributed.key_of(reference) if reference is not None else None)
    prepare_lora(policy, settings.lora)
    if resume and (final / RESULT_FILE).exists():
        return adopt_finished(policy, final, "DPO")

    checkpoints = output_dir / "checkpoints"
    resume_from = last_checkpoint(checkpoints) if resume else None
    start_step = global_step(resume_from)
    dataset = pairs_to_dataset(pairs, policy.tokenizer, max_prompt_length=settings.max_prompt_length,
                               chat_template_kwargs=getattr(policy, "chat_template_kwargs", None))
    require_reporters(settings.report_to, "dpo")
    args = dpo_config(settings, checkpoints)
    ref_model = _reference_model(policy, reference)
    with origin_named(policy.model, entry_folder(policy) if ref_model is None else None):
        trainer = _dpo_trainer(policy, ref_model, dataset, args, callbacks)
    route_logs(trainer, stage_label("dpo", output_dir), logging_dir(output_dir))
    run = measured_train(trainer, policy.model, resume_from, reference=ref_model)
    return finish_stage(
        policy, trainer, final, kind="dpo", start_step=start_step, seconds=run.seconds, peak_rss_mb=run.peak_rss_mb,
        metrics={"pairs": float(len(pairs)), **run.metrics(), **_first_loss(trainer)},
        resumed_from=resume_from,
    )


def _first_loss(trainer: Any) -> dict[str, float]:
    """The loss logged at this run's first step. A stage that starts fresh measures the policy
    against itself there, so the value is log 2 (0.693); anything else says the reference is
    not the policy at entry."""
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {"first_loss": float(losses[0])} if losses else {}


def dpo_config(settings: DPOSettings, checkpoints: Path) -> Any:
    """TRL's `DPOConfig` for `settings`, saving checkpoints under `checkpoints`, with the
    block's `trl:` mapping passed through (see `trl_config`)."""
    from trl import DPOConfig

    return trl_config(DPOConfig, "dpo", dict(
        output_dir=str(checkpoints),
        beta=settings.beta,
        learning_rate=settings.learning_rate,
        num_train_epochs=settings.epochs,
        per_device_train_batch_size=settings.per_device_batch(world_size()),
        gradient_accumulation_steps=settings.grad_accum,
        max_length=settings.max_length,
        max_steps=settings.max_steps or -1,
        save_strategy="steps",
        save_steps=settings.save_steps,
        # Two checkpoints bound the disk (a full 8B checkpoint with optimizer state is ~100 GB)
        # while one survives if the process dies while writing the other.
        save_total_limit=2,
        logging_steps=1,
        seed=settings.seed,
        report_to=settings.report_to,
        # TRL's own bar and printed dicts are replaced by coevo's (see `route_logs`).
        disable_tqdm=True,
    ), settings.trl)


def _reference_model(policy: LocalModel, reference: LocalModel | None) -> Any:
    """The model DPO measures against: the given `reference`; else (LoRA) None, and TRL keeps
    the adapter at entry; else (full fine-tuning) None when the entry weights are in a folder
    (TRL loads it, see `origin_named`), or a frozen copy of the policy at entry."""
    if reference is not None:
        return reference.model
    if is_peft(policy.model) or entry_folder(policy) is not None:
        return None
    if _zero3():
        raise TrainError("DPO under DeepSpeed ZeRO-3 needs the policy's entry weights in a folder (a copy of "
                         "partitioned weights is empty); load the policy from a model folder or a stage's final/")
    # Full fine-tuning: freeze a copy of the weights at entry (pi_t), not the disk base.
    ref_model = copy.deepcopy(policy.model).eval()
    ref_model.requires_grad_(False)
    return ref_model


def _zero3() -> bool:
    from transformers.integrations import is_deepspeed_zero3_enabled

    return is_deepspeed_zero3_enabled()


def _dpo_trainer(policy: LocalModel, ref_model: Any, dataset: datasets.Dataset, args: Any,
                 callbacks: list[Any] | None) -> Any:
    from trl import DPOTrainer

    return DPOTrainer(
        model=policy.model,
        ref_model=ref_model,
        args=args,
        train_dataset=dataset,
        processing_class=policy.tokenizer,
        callbacks=stage_callbacks(callbacks),
    )
