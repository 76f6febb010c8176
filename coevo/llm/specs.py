"""Model specs: the short strings that name a model in a config or on the command line.

    smollm2[:ENGINE]            the embedded SmolLM2-135M-Instruct (ENGINE: vllm | llamacpp | hf)
    hf:PATH_OR_ID               transformers, in process (the only backend that trains)
    vllm:PATH_OR_ID             vLLM, in process (frozen roles)
    gguf:PATH                   llama.cpp, in process
    openai:MODEL@URL[,URL...]   an OpenAI-compatible server (several URLs: round-robin)
    replay:FILE                 answers from a JSONL file
    python:FILE.py[:FUNCTION]   a Python function in a judge's place (coevo/llm/python_functions.py)

Frozen models are loaded once per process and shared: roles that name the same spec
(a judge and a critic on one model, say) share one copy of the weights. Trainable models
are never shared, because a trainer changes its weights in place: an actor and a critic that
both start from `smollm2` must be two models.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import re
import threading
from pathlib import Path
from typing import Any

from coevo.llm.base import ChatModel, ModelError
from coevo.llm.python_functions import SIGNATURES, is_python_spec, load_python_function
from coevo.rundir.store import RunStore

FORMS = [
    ("smollm2[:ENGINE]", "embedded SmolLM2-135M-Instruct: frozen on llama.cpp, else vLLM, else transformers "
                         "(ENGINE llamacpp | vllm | hf forces one); transformers when trained"),
    ("hf:PATH_OR_ID", "transformers model folder or hub id, in process; trainable"),
    ("vllm:PATH_OR_ID", "vLLM in process: batched, prefix caching, structured outputs; frozen roles only"),
    ("gguf:PATH", "GGUF file through llama-cpp-python, in process; frozen roles only"),
    ("openai:MODEL@URL[,URL...]", "OpenAI-compatible server(s): vLLM, SGLang, llama.cpp server, OpenAI"),
    ("replay:FILE", "answers read from a JSONL file (tests, re-scoring recorded runs)"),
    ("python:FILE.py[:FUNCTION]", "a Python function where a judge goes (also python:package.module[:FUNCTION]; "
                                  "no FUNCTION: the module's reward / pairwise / gold / grader, by kind)"),
]

_loaded: dict[tuple[str, tuple], ChatModel] = {}
_loaded_lock = threading.Lock()


def load_model(
    spec: str, *, store: RunStore | None = None, trainable: bool = False, **options: Any
) -> ChatModel:
    """Build (or reuse) the model a spec names; cached through `store` when one is given.

    `options` go to the backend's constructor (batch_size, n_ctx, n_threads, concurrency,
    max_retries, backoff, timeout, extra_body, device, dtype, revision, model_id); `engine`
    picks the embedded model's frozen engine, as `smollm2:ENGINE` does; `price` (dollars per
    million input / output tokens) is hung on the model for the cost count (llm/pricing.py).
    With trainable=True the result is always a fresh `LocalModel` (it exposes `.model` and
    `.tokenizer`); specs that cannot train (gguf, openai, replay) are refused. A model meant
    for training goes through `coevo.train.trainable.load_trainable`, which calls this and
    tells the other ranks of a many-process run to load it too.
    """
    spec = spec.strip()
    # `price` is what a call costs, not how to build the model: the cache reads it off the
    # model to count dollars (llm/pricing.py); the backend never sees it.
    price = options.pop("price", None)
    if is_python_spec(spec):
        if trainable:
            raise ModelError(f"{spec!r} is a Python function: it stands where a judge goes, it cannot be trained")
        function = load_python_function(spec)
        return function.bound(store) if store is not None else function  # caches its own calls
    if trainable:
        model = _build(spec, trainable=True, options=options)
    else:
        key = _shared_key(spec, options)
        with _loaded_lock:
            model = _loaded.get(key)
            if model is None:
                model = _loaded[key] = _build(spec, trainable=False, options=options)
    if price is not None:
        from coevo.llm.pricing import Priced, read_price

        if trainable:  # a fresh model of its own, whose attributes the trainers use as they are
            model.price = read_price(price, spec)
        else:  # maybe shared by roles at other prices: wrapped, not changed
            model = Priced(model, read_price(price, spec))
    if store is not None:
        from coevo.llm.cache import CachedModel

        return CachedModel(model, store)
    return model


def check_spec(spec: str) -> None:
    """Refuse a spec that cannot load, without loading anything (ModelError, naming the fix):
    an unknown kind, a missing file or folder, a malformed server spec, an uninstalled
    engine or embedded model. What only loading can tell (a corrupt file, a server that is
    down) is still found when the role first loads."""
    from coevo.llm import embedded

    check_spec_form(spec)  # a known kind, well formed (an openai spec's URLs included)
    if is_python_spec(spec):  # its kinds are probed by the run's preflight (check_python_spec)
        load_python_function(spec)
        return
    kind, _, rest = spec.strip().partition(":")
    rest = rest.strip()
    if kind == "smollm2":
        embedded.gguf_path()  # installed?
        if rest:
            frozen_engine(rest)
        return
    looks_like_a_path = rest.startswith(("/", ".", "~")) or Path(rest).expanduser().exists()
    if kind in ("hf", "vllm"):
        if looks_like_a_path and not Path(rest).expanduser().is_dir():
            raise ModelError(f"{spec!r}: no model folder at {rest}; give a transformers folder or a hub id")
        if not looks_like_a_path and not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", rest):
            raise ModelError(f"{spec!r}: {rest!r} is neither a folder nor a hub id (like org/name)")
    elif kind in ("gguf", "replay") and not Path(rest).expanduser().is_file():
        raise ModelError(f"{spec!r}: no file at {rest}")


def check_spec_form(spec: str) -> None:
    """Refuse a spec of no known kind, or a malformed one, reading nothing (ModelError, naming
    the accepted forms): what `coevo plan` can tell on a machine without the models.
    `check_spec` also checks that the files exist and the engines are installed."""
    if is_python_spec(spec):
        return
    kind, sep, rest = spec.strip().partition(":")
    if kind == "smollm2":
        if rest.strip() and rest.strip() not in ENGINES:
            raise ModelError(f"{spec!r}: unknown engine {rest.strip()!r}; smollm2 runs on {', '.join(ENGINES)}")
        return
    if kind not in ("hf", "vllm", "gguf", "openai", "replay") or not sep or not rest.strip():
        raise _unknown(spec)
    if kind == "openai":
        from coevo.llm.openai_backend import parse_spec

        parse_spec(rest)


def _shared_key(spec: str, options: dict[str, Any]) -> tuple[str, tuple]:
    """What makes two frozen loads the same model: `smollm2`, `smollm2:vllm` and `smollm2`
    with `engine: vllm` are one engine where vLLM is the one chosen."""
    kind, _, rest = spec.partition(":")
    if kind == "smollm2":
        options = dict(options)
        spec = f"smollm2:{frozen_engine(_wanted_engine(spec, rest, options.pop('engine', None)))}"
    return spec, tuple(sorted((k, repr(v)) for k, v in options.items()))


def _wanted_engine(spec: str, named: str, option: str | None) -> str | None:
    """The engine `smollm2:ENGINE` or an `engine` option asks for (None: the default)."""
    named = named.strip() or None
    if named and option and named != option:
        raise ModelError(f"{spec!r} names engine {named!r} but its options say engine={option!r}; keep one")
    return named or option


def vllm_copy(spec: str, checkpoint: str | Path | None, **options: Any) -> tuple[ChatModel, bool]:
    """A frozen vLLM engine on a trainable spec's weights, for generating between trainings:
    the base weights (`checkpoint` None; shared like any frozen model, e.g. with a judge on
    the same model) or a finished stage's `final/` folder (full weights, or a LoRA adapter
    served on its base). Returns (model, shared): a model not shared is the caller's to close."""
    from coevo.llm.vllm_backend import VLLMModel

    options = {k: v for k, v in options.items() if k != "engine"}
    if checkpoint is None:
        base = "smollm2:vllm" if spec.strip().partition(":")[0] == "smollm2" else f"vllm:{base_model_path(spec)}"
        return load_model(base, **_vllm_options(options)), True
    folder = Path(checkpoint)
    if (folder / "adapter_config.json").is_file():
        return _construct(VLLMModel, spec, options, base_model_path(spec), lora=folder, lenient=True), False
    return _construct(VLLMModel, spec, options, folder, lenient=True), False


def _vllm_options(options: dict[str, Any]) -> dict[str, Any]:
    """A trainable role's options, less those meant for transformers (device, batch size)."""
    from coevo.llm.vllm_backend import VLLMModel

    accepted = set(backend_options(VLLMModel))
    return {k: v for k, v in options.items() if k in accepted or k not in _BACKEND_OPTIONS}


def clear_loaded() -> None:
    """Forget the shared frozen models (their memory is freed once no role holds them)."""
    with _loaded_lock:
        _loaded.clear()


def base_model_path(spec: str) -> str:
    """The transformers folder (or hub id) a trainable spec starts from."""
    if spec.strip().partition(":")[0] == "smollm2":
        from coevo.llm import embedded

        return str(embedded.hf_dir())
    kind, _, rest = spec.partition(":")
    return rest.strip() if kind == "hf" else spec


#: The type a trained model's weights are held in, unless its options name one. float32 on a
#: GPU too: the trainers then compute in bf16 (TrainingArguments' bf16, machine_training_args)
#: over float32 master weights. Weights held in bf16 lose most updates the papers' learning
#: rate makes: bf16 keeps 8 significant bits, so an Adam step of 1e-6 on a weight of 0.02 (its
#: spacing there is 1.2e-4) rounds back to the same weight; measured, 3 AdamW steps at lr 1e-6
#: changed 1.9 % of a bf16 matrix's weights and 100 % of a float32 one's (BENCHMARKS.md, "GPU").
#: `options: {dtype: bfloat16}` halves the memory where that is wanted (LoRA: the adapter is
#: float32 either way, PEFT's autocast_adapter_dtype).
TRAINABLE_DTYPE = "float32"


def _build(spec: str, *, trainable: bool, options: dict[str, Any]) -> ChatModel:
    kind, sep, rest = spec.partition(":")
    options = dict(options)
    engine = options.pop("engine", None)
    _thinking_switch(spec, kind, trainable, options)
    if trainable:
        options.setdefault("dtype", TRAINABLE_DTYPE)
    if kind == "smollm2":
        return _embedded(spec, _wanted_engine(spec, rest, engine), trainable, options)
    if engine is not None:
        raise ModelError(f"option engine={engine!r} is for the embedded model (smollm2) only; "
                         f"{spec!r} names its engine in the spec (vllm:, gguf:, hf:, openai:)")
    if not sep or not rest.strip():
        raise _unknown(spec)
    rest = rest.strip()
    if kind == "hf":
        from coevo.llm.local import LocalModel

        return _construct(LocalModel, spec, options, rest)
    if trainable:
        raise ModelError(
            f"{spec!r} cannot be trained: a trained role needs `smollm2` or `hf:PATH_OR_ID`"
        )
    if kind == "gguf":
        from coevo.llm.llamacpp import LlamaCppModel

        return _construct(LlamaCppModel, spec, options, rest)
    if kind == "vllm":
        from coevo.llm.vllm_backend import VLLMModel

        return _construct(VLLMModel, spec, options, rest)
    if kind == "openai":
        from coevo.llm.openai_backend import OpenAIModel, parse_spec

        model, urls = parse_spec(rest)
        return _construct(OpenAIModel, spec, options, model, urls)
    if kind == "replay":
        from coevo.llm.replay import ReplayModel

        return _construct(ReplayModel, spec, options, rest)
    raise _unknown(spec)


#: The engines the embedded model runs on when frozen, in the order one is chosen.
#: llama.cpp first although vLLM judges 10x faster when a stage holds many prompts
#: (BENCHMARKS.md, "Frozen-role engine"): at the tiny configs' sizes most calls hold
#: 1-4 conversations, where llama.cpp's quantised single-sequence decoding wins (whole runs,
#: vLLM vs llama.cpp: quickstart 1.14x, decoevo_tiny 1.19x, rlac_code_tiny 1.03x, and
#: rlac_bio_tiny 0.52x, whose judge checks a whole stage of facts at once). So vLLM is chosen
#: per role where stages are large: `roles.<role>.options.engine: vllm`, `smollm2:vllm`.
ENGINES = ("llamacpp", "vllm", "hf")


def frozen_engine(wanted: str | None = None) -> str:
    """The engine a frozen `smollm2` gets here: `wanted` if given (and installed), else the
    first of ENGINES that is installed."""
    if wanted is not None:
        if wanted not in ENGINES:
            raise ModelError(f"unknown engine {wanted!r} in 'smollm2:{wanted}'; choose from {', '.join(ENGINES)}")
        if not _engine_installed(wanted):
            raise ModelError(f"'smollm2:{wanted}' asks for {wanted}, which is not installed here; "
                             f"{_ENGINE_HINTS[wanted]}")
        return wanted
    return next(engine for engine in ENGINES if _engine_installed(engine))


def _engine_installed(engine: str) -> bool:
    if engine == "vllm":
        from coevo.llm.vllm_backend import vllm_available

        return vllm_available()
    if engine == "llamacpp":
        return llama_cpp_available()
    return True


_ENGINE_HINTS = {
    "vllm": "install it with `make install` (Linux x86-64) or see coevo/llm/vllm_backend.py",
    "llamacpp": "pip install 'llama-cpp-python[server]==0.3.36'", "hf": "",
}
_said_engine: set[str] = set()


def _thinking_switch(spec: str, kind: str, trainable: bool, options: dict[str, Any]) -> None:
    """A role's `thinking` reaches the backends that apply the model's own chat template
    (transformers, vLLM, a server); llama.cpp renders the GGUF's template without switches, so
    it is refused there, and a replay model answers as recorded (dropped)."""
    if options.get("thinking") is None:
        options.pop("thinking", None)
        return
    if kind == "replay":
        options.pop("thinking")
    elif kind == "gguf" or (kind == "smollm2" and not trainable):
        raise ModelError(f"{spec!r}: `thinking` (the chat template's enable_thinking) needs a model whose chat "
                         "template coevo applies itself: hf:, vllm: or openai:; remove the role's `thinking` key")


def _embedded(spec: str, engine: str | None, trainable: bool, options: dict[str, Any]) -> ChatModel:
    """The embedded model: transformers when trained, else the engine `frozen_engine` picks."""
    from coevo.llm import embedded

    if trainable:
        from coevo.llm.local import LocalModel

        return _construct(LocalModel, spec, options, embedded.hf_dir(), lenient=True)
    chosen = frozen_engine(engine)
    if engine is None and chosen not in _said_engine:
        _said_engine.add(chosen)
        logging.getLogger(__name__).info("frozen smollm2 runs on %s here (force one with smollm2:ENGINE, "
                                         "ENGINE in %s)", chosen, ", ".join(ENGINES))
    if chosen == "vllm":
        from coevo.llm.vllm_backend import VLLMModel

        return _construct(VLLMModel, spec, options, embedded.hf_dir(), lenient=True)
    if chosen == "llamacpp":
        from coevo.llm.llamacpp import LlamaCppModel

        return _construct(LlamaCppModel, spec, options, embedded.gguf_path(), lenient=True)
    from coevo.llm.local import LocalModel

    return _construct(LocalModel, spec, options, embedded.hf_dir(), lenient=True)


# Options meant for the other backend `smollm2` may resolve to; a config written for one
# machine (llama.cpp installed or not) must still load on the other.
_BACKEND_OPTIONS = {
    "batch_size", "device", "dtype", "revision", "n_ctx", "n_threads", "n_gpu_layers", "reuse_prefix", "prefix_block",
    "grammar_last",
    "max_model_len", "enable_prefix_caching", "enforce_eager", "gpu_memory_utilization",
    "tensor_parallel_size", "kv_cache_gb", "engine_args",
}


def backend_options(cls: Any) -> list[str]:
    """The keyword options a backend class takes (what `roles.<role>.options` may set for it)."""
    return sorted(set(inspect.signature(cls.__init__).parameters) - {"self", "path", "model", "base_urls", "rules"})


def _construct(cls: Any, spec: str, options: dict[str, Any], *args: Any, lenient: bool = False) -> ChatModel:
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
    unknown = sorted(set(options) - accepted)
    if lenient:
        options = {k: v for k, v in options.items() if k in accepted or k not in _BACKEND_OPTIONS}
        unknown = sorted(set(options) - accepted)
    if unknown:
        raise ModelError(
            f"model {spec!r} ({cls.__name__}) does not take option(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(backend_options(cls))}"
        )
    return cls(*args, **options)


def _unknown(spec: str) -> ModelError:
    forms = ", ".join(form for form, _ in FORMS)
    return ModelError(f"unknown model spec {spec!r}; accepted forms: {forms} (`coevo models` explains each)")


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python is installed (checked without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def describe_specs() -> list[dict[str, Any]]:
    """The accepted spec forms and what this machine can run, for `coevo models`."""
    from coevo.llm import embedded

    try:
        gguf = str(embedded.gguf_path())
    except ModelError:
        gguf = None
    llama = llama_cpp_available()
    from coevo.llm.vllm_backend import INSTALL_HINT, vllm_available

    vllm = vllm_available()
    openai = importlib.util.find_spec("openai") is not None
    transformers = importlib.util.find_spec("transformers") is not None
    converted = embedded.is_converted()
    if gguf is None:
        smol = f"not installed: {embedded.INSTALL_HINT}"
    else:
        smol = (f"frozen roles run on {frozen_engine()}; GGUF at {gguf}; transformers copy "
                + (f"at {embedded.converted_dir()}" if converted
                   else f"not converted yet (made on first trainable use, at {embedded.converted_dir()})"))
    rows = {
        "smollm2[:ENGINE]": (gguf is not None and (llama or transformers), smol),
        "hf:PATH_OR_ID": (transformers, "transformers installed" if transformers else "pip install transformers"),
        "vllm:PATH_OR_ID": (vllm, "vLLM installed" if vllm else INSTALL_HINT),
        "gguf:PATH": (llama, "llama-cpp-python installed" if llama
                      else "pip install 'llama-cpp-python[server]==0.3.36'"),
        "openai:MODEL@URL[,URL...]": (openai, "openai client installed" if openai else "pip install openai"),
        "replay:FILE": (True, "always available"),
        "python:FILE.py[:FUNCTION]": (True, "signatures: " + "; ".join(SIGNATURES.values())),
    }
    from coevo.llm.llamacpp import LlamaCppModel
    from coevo.llm.local import LocalModel
    from coevo.llm.openai_backend import OpenAIModel
    from coevo.llm.replay import ReplayModel
    from coevo.llm.vllm_backend import VLLMModel

    engine_class = {"vllm": VLLMModel, "llamacpp": LlamaCppModel, "hf": LocalModel}[frozen_engine()]
    options = {"smollm2[:ENGINE]": ["engine", *backend_options(engine_class)], "hf:PATH_OR_ID": backend_options(LocalModel),
               "vllm:PATH_OR_ID": backend_options(VLLMModel), "gguf:PATH": backend_options(LlamaCppModel),
               "openai:MODEL@URL[,URL...]": backend_options(OpenAIModel), "replay:FILE": backend_options(ReplayModel),
               "python:FILE.py[:FUNCTION]": []}
    return [
        {"spec": form, "description": text, "available": rows[form][0], "detail": rows[form][1],
         # Every model form takes `price` (llm/pricing.py): the cost count, not the backend, reads it.
         "options (roles.<role>.options)": ", ".join(options[form] + (["price"] if options[form] else [])) or "-"}
        for form, text in FORMS
    ]
