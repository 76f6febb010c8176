"""Prompt templates: one file per role, `{placeholder}` fields filled by `render`.

Not `str.format`: the papers' prompts contain literal JSON braces, so only `{name}` tokens
whose name is a declared field are replaced; every other brace is left alone.

A template is one user message, or a system message and a user message when its file is
split into sections by marker lines, as the RLAC paper's App. A prints its prompts:

    <<system>>
    You are a factual checker. ...
    <<user>>
    Now apply the same procedure to the paragraph below about {topic}. ...

`Template.messages(**values)` renders either kind into the conversation a model is asked
([system, user] or [user]); `render` gives the text of a one-message template.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coevo.core.types import Conversation, Message

PROMPT_DIR = Path(__file__).parent
_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
#: A section marker: `<<system>>` or `<<user>>` alone on its line.
_SECTION = re.compile(r"^<<(system|user)>>[ \t]*$", re.M)


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

    @property
    def parts(self) -> tuple[str | None, str]:
        """(system, user): the template text of each message, stripped; system is None for
        a one-message template (a file without section markers)."""
        return _sections(self.name, self.text)

    def render(self, **values: object) -> str:
        """The filled text of a one-message template. A template with a system section has
        two messages: ask `messages` for them (one string would merge what the model reads
        as two)."""
        if self.parts[0] is not None:
            raise TemplateError(f"template {self.name!r} has a system and a user message; "
                                "render it with Template.messages(...)")
        return self._fill(self.text, values)

    def messages(self, **values: object) -> Conversation:
        """The conversation to ask: [system, user], or [user] for a one-message template.
        Each message is its section's text, stripped, with the fields filled (the values
        are inserted as they are: a problem statement stays byte for byte)."""
        system, user = self.parts
        asked = [Message(role="user", content=self._fill(user, values))]
        if system is not None:
            asked.insert(0, Message(role="system", content=self._fill(system, values)))
        return asked

    def _fill(self, text: str, values: dict[str, object]) -> str:
        missing = self.fields - set(values)
        if missing:
            raise TemplateError(
                f"template {self.name!r} needs {sorted(missing)}; got {sorted(values)}"
            )
        return _FIELD.sub(
            lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text
        )


def _sections(name: str, text: str) -> tuple[str | None, str]:
    """Split a template's text at its section markers: none (one user message, the whole
    text), `<<user>>` alone, or `<<system>>` then `<<user>>`, with nothing before the first."""
    marks = list(_SECTION.finditer(text))
    if not marks:
        return None, text.strip()
    roles = [m.group(1) for m in marks]
    if roles not in (["user"], ["system", "user"]) or text[:marks[0].start()].strip():
        raise TemplateError(f"template {name!r}: sections must be <<system>> (optional) then <<user>>, "
                            f"each marker alone on its line and nothing before the first; found {roles}")
    ends = [m.start() for m in marks[1:]] + [len(text)]
    bodies = [text[m.end():end].strip() for m, end in zip(marks, ends)]
    if not all(bodies):
        raise TemplateError(f"template {name!r}: an empty <<{roles[bodies.index('')]}>> section")
    return (bodies[0], bodies[1]) if len(bodies) == 2 else (None, bodies[0])


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
    template = Template(name=path.stem, text=path.read_text(encoding="utf-8").strip() + "\n")
    template.parts  # a malformed section split fails here, where the file is named
    return template


def render(name_or_path: str, **values: object) -> str:
    return load_template(name_or_path).render(**values)

