"""Records, strict models, JSONL reading and progress: what every layer shares."""
