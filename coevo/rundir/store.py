"""The run store: one SQLite file per run folder.

Everything a run produces lands here as it is produced: config, every model call (the
cache), rollouts, judgments, metrics, pairs, skills, and which steps finished. SQLite in WAL
mode with one transaction per write means a `kill -9` loses at most the call in flight,
and a resumed run finds every earlier answer in the cache instead of asking again.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from coevo.core.types import Completion, Judgment, Rollout

STORE_FILE = "run.sqlite"

#: The store layout's version, kept in SQLite's `user_version`. Raise it with every change
#: of the tables below: a store of another version is refused (with the versions named)
#: instead of being read wrongly. 2: metric rows keyed by (stage, round, name). 3: each cached
#: call keeps its request (messages and sampling), so a viewer can show the calls behind a
#: rollout; a schema-2 store is upgraded in place (the column is added, old rows have none).
SCHEMA_VERSION = 3

#: Versions this coevo upgrades in place, each with the statements that do it.
_UPGRADES = {2: ("ALTER TABLE llm_cache ADD COLUMN request TEXT",)}


class StoreError(RuntimeError):
    """A run store cannot be used (corrupt, truncated, or of another schema version)."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT NOT NULL, idx INTEGER NOT NULL, model_id TEXT NOT NULL,
    completion TEXT NOT NULL, created REAL NOT NULL, request TEXT, PRIMARY KEY (key, idx));
CREATE TABLE IF NOT EXISTS rollouts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, stage TEXT NOT NULL, round INTEGER,
    sample_id TEXT NOT NULL, condition TEXT NOT NULL, record TEXT NOT NULL,
    UNIQUE (stage, sample_id, condition));
CREATE TABLE IF NOT EXISTS judgments (
    rollout_id INTEGER NOT NULL REFERENCES rollouts(id), judge TEXT NOT NULL,
    valid INTEGER NOT NULL, score REAL, record TEXT NOT NULL, PRIMARY KEY (rollout_id, judge));
CREATE TABLE IF NOT EXISTS metrics (
    stage TEXT NOT NULL, round INTEGER NOT NULL, name TEXT NOT NULL, value REAL,
    created REAL NOT NULL, PRIMARY KEY (stage, round, name));
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL, key TEXT NOT NULL, record TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (kind, key));
CREATE TABLE IF NOT EXISTS steps (
    name TEXT PRIMARY KEY, result TEXT, finished REAL NOT NULL);
"""


#: The round column of a metric logged without one (a key column cannot hold NULL: SQLite
#: treats every NULL as distinct, so the row would not be replaced on a second log).
_NO_ROUND = -1


_ROUND_IN_STAGE = re.compile(r"round(\d+)")


def stage_round(stage: str, logged: int | None) -> int | None:
    """A rollout's or stage's round: the one logged with it, else the `round<N>` in the stage's
    name (TAIScore's GRPO and pair-pool stages save rollouts without one; older runs' stage
    results kept none)."""
    if logged is not None:
        return logged
    found = _ROUND_IN_STAGE.search(stage)
    return int(found.group(1)) if found else None


def _dump(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=_jsonable)


def _jsonable(value: Any) -> Any:
    # Records nested in plain containers (a Table in a dict of tables) stay records, not str().
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else str(value)


class RunStore:
    """A run folder's SQLite file. Safe to share between threads of one process."""

    def __init__(self, run_dir: str | Path, read_only: bool = False):
        """Open (or create) the store of `run_dir`. `read_only`: open an existing store for
        reading only (a viewer beside a running run): nothing is created, upgraded or written."""
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / STORE_FILE
        self.read_only = read_only
        if read_only and not self.path.is_file():
            raise FileNotFoundError(f"{self.run_dir} is not a run folder (no {STORE_FILE})")
        if not read_only:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        # One connection, serialised by a lock: SQLite writes are serial anyway, and this
        # lets the async OpenAI backend's worker threads share the cache safely.
        self._lock = threading.RLock()
        try:
            if read_only:
                self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                           check_same_thread=False, isolation_level=None)
            else:
                self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._open()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is corrupt or truncated ({exc}); restore it from a copy, "
                             "or start a new run folder") from None
        self.cache_hits = 0
        self.cache_misses = 0

    def _open(self) -> None:
        """Check the file, then create the tables of a new store or check an old one's version."""
        (check,) = self._db.execute("PRAGMA quick_check").fetchone()
        if check != "ok":
            raise sqlite3.DatabaseError(f"integrity check: {check}")
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        tables = self._db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
        if self.read_only:
            if version not in (SCHEMA_VERSION, *_UPGRADES):
                self._refuse(version)
            self._version = version
            return
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        if tables and version in _UPGRADES:
            with self.transaction() as db:
                for statement in _UPGRADES[version]:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            version = SCHEMA_VERSION
        if tables and version != SCHEMA_VERSION:
            self._refuse(version)
        self._db.executescript(_SCHEMA)
        self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._version = SCHEMA_VERSION

    def _refuse(self, version: int) -> None:
        self._db.close()
        age = "an older" if version < SCHEMA_VERSION else "a newer"
        raise StoreError(f"{self.path} was written by {age} coevo (store schema {version}; this coevo "
                             f"reads schema {SCHEMA_VERSION}); open it with the coevo version that wrote it, "
                         "or start a new run folder")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- meta / config ---------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, _dump(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def update_meta(self, key: str, update: Callable[[Any], Any], default: Any = None) -> Any:
        """Read, change and write one meta value in one transaction (no lost update between
        two writers); `update` gets the current value (or `default`) and returns the new one."""
        with self.transaction() as db:
            rows = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
            value = update(json.loads(rows[0][0]) if rows else default)
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, _dump(value)))
        return value

    # -- LLM cache -------------------------------------------------------------------
    def cache_get(self, key: str, n: int) -> dict[int, Completion]:
        """Cached completions for sample indices 0..n-1 of one call key."""
        rows = self._query(
            "SELECT idx, completion FROM llm_cache WHERE key = ? AND idx < ?", (key, n)
        )
        found = {idx: Completion.model_validate_json(text) for idx, text in rows}
        self.cache_hits += len(found)
        self.cache_misses += n - len(found)
        return found

    def cache_put(self, key: str, model_id: str, completions: dict[int, Completion],
                  request: Any = None) -> None:
        """Keep completions of one call key; `request` (the messages and sampling, JSON-able)
        is kept beside them so the calls behind a rollout can be shown later."""
        now = time.time()
        request_json = None if request is None else _dump(request)
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO llm_cache (key, idx, model_id, completion, created, request)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [(key, i, model_id, c.model_dump_json(), now, request_json) for i, c in completions.items()],
            )

    def cached_calls(self, output_contains: str | None = None, limit: int | None = 50, *,
                     tags: dict[str, str | list[str]] | None = None, untagged: bool = False,
                     cut_off: bool | None = None) -> list[dict[str, Any]]:
        """Cached model calls, newest last (`limit` None: all): model id, request (None for
        calls cached before schema 3), completion text and its prompt/completion token counts;
        only those whose completion contains `output_contains`. `tags`: only calls whose
        recorded "call" tags (see llm/call_tags.py) have these values (a list: any of them);
        `untagged`: only calls that record none (cached before calls were tagged). `cut_off`:
        only calls that did (True) or did not (False) stop at their token limit, as recorded,
        else as their completion's token count against the request's max_tokens."""
        request = "request" if self._version >= 3 else "NULL"
        sql = f"SELECT key, idx, model_id, completion, created, {request} FROM llm_cache WHERE 1=1"
        args: list[Any] = []
        if output_contains:
            sql += " AND instr(completion, ?) > 0"
            args.append(json.dumps(output_contains, ensure_ascii=False)[1:-1])
        for name, wanted in (tags or {}).items():
            if not re.fullmatch(r"\w+", name):
                raise ValueError(f"a call tag is a plain word, not {name!r}")
            values = [wanted] if isinstance(wanted, str) else list(wanted)
            sql += f" AND json_extract({request}, '$.call.{name}') IN ({', '.join('?' * len(values))})"
            args += values
        if untagged:
            sql += f" AND json_extract({request}, '$.call') IS NULL"
        if cut_off is not None:
            # The recorded flag, else (older calls) the token count against the limit.
            hit = (f"COALESCE(json_extract({request}, '$.call.cut_off'), json_extract(completion, "
                   f"'$.completion_tokens') >= json_extract({request}, '$.sampling.max_tokens'))")
            sql += f" AND {hit} = ?"
            args.append(int(cut_off))
        rows = self._query(sql + " ORDER BY created, rowid LIMIT ?", (*args, -1 if limit is None else limit))
        out = []
        for key, idx, model_id, completion, created, req in rows:
            data = json.loads(completion)
            out.append({"key": key, "index": idx, "model_id": model_id, "created": created,
                        "completion": data.get("text", ""), "request": json.loads(req) if req else None,
                        "prompt_tokens": data.get("prompt_tokens"), "completion_tokens": data.get("completion_tokens"),
                        "cached": data.get("cached")})
        return out

    def count_cache_hits(self, stage: str | None, role: str | None, hits: int) -> None:
        """Note `hits` completions answered from the cache for calls of `role` in `stage`."""
        key = f"{stage or ''}\t{role or ''}"
        self.update_meta("cache_hits", lambda counts: {**(counts or {}), key: (counts or {}).get(key, 0) + hits}, {})

    def cache_hits_by_call(self) -> dict[tuple[str | None, str | None], int]:
        """Completions answered from the cache, per (stage, role) of the calls that asked."""
        out = {}
        for key, hits in (self.get_meta("cache_hits") or {}).items():
            stage, _, role = key.partition("\t")
            out[stage or None, role or None] = hits
        return out

    def cache_size(self) -> int:
        return self._query("SELECT COUNT(*) FROM llm_cache")[0][0]

    # -- rollouts and judgments ------------------------------------------------------
    def save_rollout(self, stage: str, rollout: Rollout, round: int | None = None) -> int:
        """Insert or replace a rollout (keyed by stage, sample, condition) and its judgments."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO rollouts (stage, round, sample_id, condition, record)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (stage, sample_id, condition)"
                " DO UPDATE SET record = excluded.record, round = excluded.round",
                (stage, round, rollout.sample_id, rollout.condition, _dump(rollout)),
            )
            (rid,) = db.execute(
                "SELECT id FROM rollouts WHERE stage = ? AND sample_id = ? AND condition = ?",
                (stage, rollout.sample_id, rollout.condition),
            ).fetchone()
            for name, judgment in rollout.judgments.items():
                db.execute(
                    "INSERT OR REPLACE INTO judgments VALUES (?, ?, ?, ?, ?)",
                    (rid, name, int(judgment.valid), judgment.score, _dump(judgment)),
                )
        return rid

    def rollouts(self, stage: str | None = None, condition: str | None = None) -> list[Rollout]:
        sql, args = "SELECT record FROM rollouts WHERE 1=1", []
        if stage is not None:
            sql, args = sql + " AND stage = ?", [*args, stage]
        if condition is not None:
            sql, args = sql + " AND condition = ?", [*args, condition]
        rows = self._query(sql + " ORDER BY id", tuple(args))
        return [Rollout.model_validate_json(r[0]) for r in rows]

    def judgment_counts(self) -> dict[str, dict[str, int]]:
        """Per judge: how many judgments were valid and invalid (malformed outputs counted)."""
        out: dict[str, dict[str, int]] = {}
        for judge, valid, count in self._query(
            "SELECT judge, valid, COUNT(*) FROM judgments GROUP BY judge, valid"
        ):
            out.setdefault(judge, {"valid": 0, "invalid": 0})["valid" if valid else "invalid"] = count
        return out

    def judgments(self, judge: str) -> list[Judgment]:
        rows = self._query("SELECT record FROM judgments WHERE judge = ?", (judge,))
        return [Judgment.model_validate_json(r[0]) for r in rows]

    # -- metrics ---------------------------------------------------------------------
    def log_metrics(self, stage: str, values: dict[str, float | None], round: int | None = None) -> None:
        """One row per (stage, round, name): logging a metric again (a resumed stage) replaces it."""
        now = time.time()
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?)",
                [(stage, _NO_ROUND if round is None else round, k, v, now) for k, v in values.items()],
            )

    def metrics(self, stage: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT stage, round, name, value FROM metrics"
        rows = self._query(sql + (" WHERE stage = ?" if stage else "") + " ORDER BY created, rowid",
                           (stage,) if stage else ())
        return [{"stage": st, "round": None if r == _NO_ROUND else r, "name": name, "value": value}
                for st, r, name, value in rows]

    # -- generic records (pairs, proposals, verdicts, skills, ...) ---------------------
    def put_record(self, kind: str, key: str, record: Any) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?)",
                (kind, key, _dump(record), time.time()),
            )

    def delete_record(self, kind: str, key: str) -> bool:
        """Remove one record; whether it was there (an annotator's undo takes a label back)."""
        with self.transaction() as db:
            return db.execute("DELETE FROM records WHERE kind = ? AND key = ?", (kind, key)).rowcount > 0

    def get_record(self, kind: str, key: str) -> Any | None:
        """The record of `kind` stored under `key`, or None."""
        rows = self._query("SELECT record FROM records WHERE kind = ? AND key = ?", (kind, key))
        return json.loads(rows[0][0]) if rows else None

    def get_records(self, kind: str) -> list[tuple[str, Any]]:
        rows = self._query(
            "SELECT key, record FROM records WHERE kind = ? ORDER BY created, rowid", (kind,)
        )
        return [(k, json.loads(v)) for k, v in rows]

    # -- steps (resume) --------------------------------------------------------------
    def step_result(self, name: str) -> Any | None:
        """The saved result of a finished step, or None when it has not finished."""
        rows = self._query("SELECT result FROM steps WHERE name = ?", (name,))
        return json.loads(rows[0][0]) if rows else None

    def finish_step(self, name: str, result: Any = True) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO steps VALUES (?, ?, ?)", (name, _dump(result), time.time()))

    def holds_work(self) -> bool:
        """Whether anything beyond the run's metadata was recorded: a rollout, a judgment, a
        metric, a record, a finished step, a cached model call. A run that failed before any
        (a server down at the first load, say) holds none and may start over in place."""
        tables = ("rollouts", "judgments", "metrics", "records", "steps", "llm_cache")
        return any(self._query(f"SELECT 1 FROM {table} LIMIT 1") for table in tables)

    def training_logs(self) -> list[dict[str, Any]]:
        """Every finished training stage's per-step log, in the order they finished:
        {"stage": name, "round": int | None, "history": TRL's `log_history` (one dict per
        logged step: loss, grad_norm, learning_rate, reward, reward_std, kl, ...)}."""
        out = []
        for name, result in self._query("SELECT name, result FROM steps ORDER BY finished, rowid"):
            record = json.loads(result) if result else None
            if isinstance(record, dict) and isinstance(record.get("history"), list):
                out.append({"stage": name, "round": record.get("round"), "history": record["history"]})
        return out

    def finished_steps(self) -> list[str]:
        return [r[0] for r in self._query("SELECT name FROM steps ORDER BY finished")]

    # -- viewer queries (read-only) ----------------------------------------------------
    def rollout_rows(self, stage: str | None = None) -> list[dict[str, Any]]:
        """Every rollout with its row id, stage and round (None where the stage logged none),
        in the order they were first saved: {"id", "stage", "round", "rollout": Rollout}."""
        sql = "SELECT id, stage, round, record FROM rollouts"
        rows = self._query(sql + (" WHERE stage = ?" if stage is not None else "") + " ORDER BY id",
                           (stage,) if stage is not None else ())
        return [{"id": rid, "stage": st, "round": rnd, "rollout": Rollout.model_validate_json(record)}
                for rid, st, rnd, record in rows]

    def rollout_row(self, rollout_id: int) -> dict[str, Any] | None:
        """One rollout by its row id (as `rollout_rows` gives them), or None."""
        rows = self._query("SELECT id, stage, round, record FROM rollouts WHERE id = ?", (rollout_id,))
        if not rows:
            return None
        rid, stage, rnd, record = rows[0]
        return {"id": rid, "stage": stage, "round": rnd, "rollout": Rollout.model_validate_json(record)}

    def rollouts_of_sample(self, sample_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The rollouts of one task sample in every stage and condition, as `rollout_rows`
        gives them: its own id, and ids `<id>#<suffix>` (a GRPO group's critiques, RLAC's outputs)."""
        base = sample_id.split("#")[0]
        pattern = base.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "#%"
        rows = self._query("SELECT id, stage, round, sample_id, record FROM rollouts"
                           " WHERE sample_id = ? OR sample_id LIKE ? ESCAPE '\\' ORDER BY id", (base, pattern))
        # LIKE ignores ASCII case: the exact prefix is checked here.
        return [{"id": rid, "stage": st, "round": rnd, "rollout": Rollout.model_validate_json(record)}
                for rid, st, rnd, sid, record in rows if sid.split("#")[0] == base][:limit]

    def rollout_stages(self) -> list[tuple[str, int]]:
        """The stages that saved rollouts, with how many each, in the order they began."""
        return [(stage, n) for stage, n, _ in self._query(
            "SELECT stage, COUNT(*), MIN(id) FROM rollouts GROUP BY stage ORDER BY MIN(id)")]

    def record_count(self, kind: str) -> int:
        """How many records of `kind` the run holds."""
        return self._query("SELECT COUNT(*) FROM records WHERE kind = ?", (kind,))[0][0]
