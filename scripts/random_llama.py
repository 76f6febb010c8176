"""Write a randomly initialised Llama (SmolLM2-135M's shape by default) with a byte-level
BPE tokenizer and a chat template into a folder: a model `hf:FOLDER` loads and trains, made
with no network and no weights on disk. For machines that cannot reach a hub (a GPU box
behind a firewall): the training glue's speed and memory do not depend on what the weights
say, only on their shape.

    python scripts/random_llama.py OUT_DIR [--shape llama3.2-1b] [--layers 30 --hidden 576 ...]
                                           [--dtype bfloat16 --device cuda]

`--shape` names a published model's shape (SHAPES); the flags after it change single
dimensions. The tokenizer's BPE learns what this repository's text yields (~10k merges), and
its vocabulary is filled up to `--vocab` with placeholder tokens, so the embedding and LM
head have the named model's size (128k rows for Llama 3.2): their share of the compute and
memory is the real model's. `--device cuda --dtype bfloat16` initialises on the GPU (a 3B
model in seconds instead of a minute of CPU) and writes bf16 weights (half the bytes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# ChatML, as SmolLM2-Instruct's template writes it.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

#: Published shapes (their config.json): layers, hidden, intermediate, heads, KV heads,
#: vocabulary, tied embeddings. Qwen3-8B is listed for its size (the papers' actor and
#: critic); built here it is a Llama of that shape (no q/k norm, a few thousand weights less).
SHAPES: dict[str, dict[str, int | bool]] = {
    "smollm2-135m": dict(layers=30, hidden=576, intermediate=1536, heads=9, kv_heads=3, vocab_size=49152, tied=True),
    "llama3.2-1b": dict(layers=16, hidden=2048, intermediate=8192, heads=32, kv_heads=8, vocab_size=128256, tied=True),
    "llama3.2-3b": dict(layers=28, hidden=3072, intermediate=8192, heads=24, kv_heads=8, vocab_size=128256, tied=True),
    "qwen3-8b": dict(layers=36, hidden=4096, intermediate=12288, heads=32, kv_heads=8, vocab_size=151936, tied=False),
}


def parameter_count(layers: int, hidden: int, intermediate: int, heads: int, kv_heads: int, vocab_size: int,
                    tied: bool = True) -> int:
    """The weights of a Llama of this shape (embeddings, attention, MLP, norms, LM head)."""
    head_dim = hidden // heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    per_layer = attention + 3 * hidden * intermediate + 2 * hidden
    return vocab_size * hidden * (1 if tied else 2) + layers * per_layer + hidden


def corpus() -> list[str]:
    """Text to learn the BPE merges from: this repository's own sources and docs."""
    root = Path(__file__).resolve().parents[1]
    files = [*root.glob("coevo/**/*.py"), *root.glob("docs/*.md"), *root.glob("*.md")]
    return [path.read_text(encoding="utf-8", errors="replace") for path in sorted(files)] or ["hello world"]


def build_tokenizer(vocab_size: int):
    """A byte-level BPE learned from this repository's text, filled up to `vocab_size` tokens
    with placeholders (`fill17`, ...) where the text yields fewer merges."""
    import json

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus(), trainer=trainer)
    if bpe.get_vocab_size() < vocab_size:
        # Placeholders in the BPE vocabulary itself (no merge makes them, so encoding never
        # does; a random model samples them, and they decode as their name). Not added tokens:
        # 100k of those make every load of the tokenizer take seconds.
        state = json.loads(bpe.to_str())
        vocab = state["model"]["vocab"]
        vocab.update({f"fill{i}": len(vocab) + i for i in range(vocab_size - len(vocab))})
        bpe = Tokenizer.from_str(json.dumps(state))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>", unk_token="<|endoftext|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build(out: Path, *, layers: int = 30, hidden: int = 576, intermediate: int = 1536, heads: int = 9,
          kv_heads: int = 3, vocab_size: int = 49152, tied: bool = True, seed: int = 0, dtype: str = "float32",
          device: str = "cpu") -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer(vocab_size)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=8192,
        tie_word_embeddings=tied, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write the model into")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="smollm2-135m",
                        help="a published model's shape; the flags below change single dimensions of it")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--hidden", type=int)
    parser.add_argument("--intermediate", type=int)
    parser.add_argument("--heads", type=int)
    parser.add_argument("--kv-heads", type=int)
    parser.add_argument("--vocab", type=int, help="vocabulary size (BPE merges, then placeholder tokens)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                        help="the weights' type, as initialised and as written")
    parser.add_argument("--device", default="cpu", help="where to initialise the weights (cuda: much faster)")
    args = parser.parse_args(argv)
    given = {"layers": args.layers, "hidden": args.hidden, "intermediate": args.intermediate, "heads": args.heads,
             "kv_heads": args.kv_heads, "vocab_size": args.vocab}
    shape = {**SHAPES[args.shape], **{k: v for k, v in given.items() if v is not None}}
    path = build(args.out, **shape, dtype=args.dtype, device=args.device)  # type: ignore[arg-type]
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
