"""Write a randomly initialised Llama (SmolLM2-135M's shape by default) with a byte-level
BPE tokenizer and a chat template into a folder: a model `hf:FOLDER` loads and trains, made
with no network and no weights on disk. For machines that cannot reach a hub (a GPU box
behind a firewall): the training glue's speed and memory do not depend on what the weights
say, only on their shape.

    python scripts/random_llama.py OUT_DIR [--layers 30 --hidden 576 ...]
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


def corpus() -> list[str]:
    """Text to learn the BPE merges from: this repository's own sources and docs."""
    root = Path(__file__).resolve().parents[1]
    files = [*root.glob("coevo/**/*.py"), *root.glob("docs/*.md"), *root.glob("*.md")]
    return [path.read_text(encoding="utf-8", errors="replace") for path in sorted(files)] or ["hello world"]


def build_tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>", unk_token="<|endoftext|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build(out: Path, *, layers: int = 30, hidden: int = 576, intermediate: int = 1536, heads: int = 9,
          kv_heads: int = 3, vocab_size: int = 49152, seed: int = 0) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer(vocab_size)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=8192,
        tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write the model into")
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--hidden", type=int, default=576)
    parser.add_argument("--intermediate", type=int, default=1536)
    parser.add_argument("--heads", type=int, default=9)
    parser.add_argument("--kv-heads", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=49152, help="BPE vocabulary size (at most what the corpus yields)")
    args = parser.parse_args(argv)
    path = build(args.out, layers=args.layers, hidden=args.hidden, intermediate=args.intermediate,
                 heads=args.heads, kv_heads=args.kv_heads, vocab_size=args.vocab)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
