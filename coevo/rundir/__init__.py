"""A run folder's store (SQLite) and its one-writer lock."""
