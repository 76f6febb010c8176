"""Prompt templates: one file per role, `{placeholder}` fields filled by `render`.

Not `str.format`: the papers' prompts contain literal JSON braces, so only `{name}` tokens
whose name is a declared field are replaced; every other brace is left alone.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coevo.config import StrictModel

PROMPT_DIR = Path(__file__).parent
_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


class TemplateError(ValueError):
    pass


@dataclass(frozen=True)
class Template:
    name: str
    text: str

    @property
    def fields(self) -> set[str]:
        return set(_FIELD.findall(self.text))

    @property
    def hash(self) -> str:
        """Stored with each call so a run records exactly which prompt produced it."""
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]

    def render(self, **values: object) -> str:
        missing = self.fields - set(values)
        if missing:
            raise TemplateError(
                f"template {self.name!r} needs {sorted(missing)}; got {sorted(values)}"
            )
        return _FIELD.sub(
            lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), self.text
        )


@lru_cache(maxsize=None)
def load_template(name_or_path: str) -> Template:
    """A bundled template by name (`critic`) or any file path a config points at."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROMPT_DIR / f"{name_or_path}.md"
    if not path.is_file():
        bundled = sorted(p.stem for p in PROMPT_DIR.glob("*.md"))
        raise TemplateError(
            f"no prompt template {name_or_path!r}; bundled ones are {bundled}, "
            "or give a path to a .md/.txt file"
        )
    return Template(name=path.stem, text=path.read_text(encoding="utf-8").strip() + "\n")


def render(name_or_path: str, **values: object) -> str:
    return load_template(name_or_path).render(**values)


class Templates(StrictModel):
    """Prompt template per role: a bundled name or a path to your own file."""

    critic: str = "critic"
    reviser: str = "reviser"
    reviser_no_critique: str = "reviser_no_critique"
