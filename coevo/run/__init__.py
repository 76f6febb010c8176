"""Running a config: the runner, the other ranks' loop, logs, provenance, the quickstart."""
