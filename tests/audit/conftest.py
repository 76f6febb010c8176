"""The `files` fixture of the audit tests (see audit_judges.py)."""

from audit_judges import files  # noqa: F401
