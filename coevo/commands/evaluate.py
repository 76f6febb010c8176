"""The `coevo eval` group, declared here: `coevo eval agreement`, `coevo eval annotations` and
`coevo eval skill` compare judges with each other or with human labels, export and merge the
labels, and try a skill on other data; `coevo eval checkpoints` scores a TAIScore run's saved
actors on benchmark sets (Table 1); `coevo eval average` is DecoEvo's "Avg."."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from coevo.commands.console import HELP_SETTINGS, out, print_plain, print_rows, print_table

app = typer.Typer(help="Judges, human labels, skills and checkpoints scored.\n\n"
                  "Agreement between two judges' scores (or a judge's and human labels), the labels made in "
                  "`coevo view`, a DecoEvo solver skill on other data, and a TAIScore run's saved checkpoints "
                  "on benchmark sets (Table 1).", **HELP_SETTINGS)


@app.command("agreement")
def eval_agreement(
    a: Path = typer.Option(..., "--a", metavar="FILE", help="JSONL of {group, candidate, score} from judge A."),
    b: Path = typer.Option(..., "--b", metavar="FILE", help="The same from judge B (or human labels)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Top-1 overlap and pairwise agreement between two judges.

    The measures of TAIScore's appendix D.1: per group, do the two judges' top-scored
    candidates overlap, and over candidate pairs, do they order them the same way (pairs
    either judge ties are left out). A pairwise judge's share P(preferred) within 0.05 of 0.5
    counts as a tie (it could not choose), and the output says how many pairs were ties by
    that rule. Pairwise agreement comes with its n, a Wilson 95%
    interval (none from fewer than 5 pairs), the chance agreement of two independent raters
    with the same marginals and Cohen's kappa. Groups only one file holds are left out, counted and named
    (unmatched_a / unmatched_b); lines with an unreadable score are counted as invalid.
    """
    print_agreement(a, b, as_json=as_json)


@app.command("annotations")
def eval_annotations(
    sources: list[Path] = typer.Argument(..., metavar="RUN|FILE", help="A run folder with labels made in "
                                         "`coevo view` (Annotate), or one JSONL file of labels per annotator "
                                         "(e.g. three human.jsonl) to merge by majority vote."),
    out_dir: Optional[Path] = typer.Option(None, "--out", metavar="DIR", help="Folder for human.jsonl, "
                                           "judge.jsonl and, with several annotators, majority.jsonl (a run "
                                           "needs it; files: optional). A run's export replaces the folder "
                                           "as a whole; a folder holding other files is refused."),
    stage: Optional[str] = typer.Option(None, "--stage", metavar="NAME", help="Only this stage's labels (default: every stage's)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Export human labels; merge several annotators'.

    From a RUN: writes DIR/human.jsonl (each label as scores: 1 for the preferred text, 0
    for the other, 0.5 each for a tie) and DIR/judge.jsonl (the judge that scored most of
    the labelled pairs; judge_NAME.jsonl for each when several did), the {group, candidate,
    score} lines `coevo eval agreement --a DIR/human.jsonl --b DIR/judge.jsonl` compares.

    Several annotators (one FILE each, or a run labelled under several names in the viewer)
    are merged as the TAIScore paper does: a pair's label is the one at least two of three
    chose; three different labels is "no majority" (counted, listed). Only pairs every
    annotator labelled are merged (the rest are counted). Prints the majority labels and
    Fleiss' kappa with its n and a bootstrap 95% CI over pairs; DIR/majority.jsonl holds
    each pair's votes, and DIR/human.jsonl becomes the majority labels.
    """
    export_or_merge_labels(sources, out_dir, stage=stage, as_json=as_json)


@app.command("skill")
def eval_skill(
    skill: Optional[Path] = typer.Option(None, "--skill", metavar="FILE",
                                         help="A solver skill file (e.g. RUN/skills/decoevo/seed0/solver_v3.md)."),
    final_skills: bool = typer.Option(False, "--final-skills",
                                      help="Every method and seed's final solver skill of the --run, each graded: "
                                           "a transfer benchmark's scores for `coevo eval average`."),
    data: str = typer.Option(..., "--data", metavar="SOURCE",
                             help="bundled:NAME, a JSONL/Parquet file or a datasets folder, with gold rubrics; "
                                  "or eqbench_cw:PATH / llmeval_med:PATH, graded their own way."),
    model: Optional[str] = typer.Option(None, "--model", metavar="SPEC",
                                        help="Model of the solver (and of the grader unless --judge); default: "
                                             "the --run's backbone, else smollm2."),
    grader: Optional[str] = typer.Option(None, "--judge", metavar="SPEC",
                                         help="Model of the gold_rubric judge that grades the answers; default: "
                                              "the --run's grader, else the solver's model."),
    run: Optional[Path] = typer.Option(None, "--run", metavar="DIR",
                                       help="A DecoEvo run folder: its roles (backbone, grader, each role's "
                                            "decoding) are the defaults, and its store caches the calls."),
    limit: Optional[int] = typer.Option(None, min=1, metavar="N", help="Use only the first N samples."),
    cache: Optional[Path] = typer.Option(None, "--cache", metavar="DIR",
                                         help="A run folder whose store caches the model calls."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """A DecoEvo solver skill on another dataset (transfer).

    Applies a final solver skill to other data with no updates, and scores the answers with
    the gold_rubric judge (0-1). With --run, as that run did: its backbone answers with its
    solver's decoding and its grader grades (the paper's transfer evaluation); without, the
    bundled defaults (384-token answers, the solver's model grading itself).
    """
    if (skill is None) == (not final_skills):
        raise typer.BadParameter("give --skill FILE, or --final-skills with --run RUN (every final solver skill)")
    if final_skills and run is None:
        raise typer.BadParameter("--final-skills reads a run's skills: give --run RUN")
    if final_skills:
        transfer_final_skills(run, data, model=model, grader=grader, limit=limit, as_json=as_json)
        return
    transfer_skill(skill, data, model=model, grader=grader, limit=limit, cache=cache or run, as_json=as_json,
                   run=run)


@app.command("checkpoints")
def eval_checkpoints(
    run: Path = typer.Argument(..., metavar="RUN", help="A finished TAIScore run folder."),
    data: list[str] = typer.Option(..., "--data", metavar="[NAME=]SPEC",
                                   help="A benchmark set to score on (repeat for each): writingbench:PATH, "
                                        "hellobench:PATH, deepresearch_gym:PATH or any source whose rows carry a "
                                        "gold rubric; NAME is its column (default: the file's stem)."),
    output_sets: int = typer.Option(3, "--output-sets", min=1, metavar="N",
                                    help="Independent output sets per checkpoint (the paper's 3): mean ± sd."),
    judge: Optional[str] = typer.Option(None, "--judge", metavar="SPEC",
                                        help="The model that scores the answers (default: the run's judge)."),
    limit: Optional[int] = typer.Option(None, min=1, metavar="N", help="Use only the first N samples of each set."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (table1.json's)."),
) -> None:
    """TAIScore's Table 1: saved actors on benchmarks.

    π_0 and each condition's (and seed's) actor after every round generate N output sets
    per benchmark set with the run's response decoding and engine; the run's judge scores
    each answer against its sample's rubric (DeepResearch-Gym's KPR, KPC and report
    quality where samples carry key points). A cell is the mean over sets ± their sd, with
    the items per set. Each scored cell is kept in the run's store, so a stopped command
    resumes where it was; the table is written to RUN/table1.json and RUN/table1.md and
    shown on the run's page (`coevo view`).
    """
    from coevo.algorithms.taiscore.checkpoint_table import TableError, check_run_folder, score_checkpoints
    from coevo.rundir.lock import RunLock

    try:
        check_run_folder(run)
        with RunLock(run):  # a `coevo run --resume` of this folder cannot write beside it meanwhile
            table = score_checkpoints(run, data, output_sets=output_sets, limit=limit, judge=judge)
    except TableError as exc:
        raise typer.BadParameter(str(exc)) from None
    if as_json:
        print(table.model_dump_json())
        return
    print_rows([{c: row.get(c) for c in ["checkpoint", *table.columns]} for row in table.rows],
               title=f"Table 1 of {run} (judge {table.judge}, {table.output_sets} output set(s))")
    print_plain([*table.notes, f"written: {run / 'table1.json'}, {run / 'table1.md'}"])


@app.command("average")
def eval_average(
    sources: list[Path] = typer.Argument(..., metavar="RUN_OR_FILE...",
                                         help="DecoEvo run folders (a source benchmark each) and files of "
                                              "`coevo eval skill --run RUN --final-skills --json` (a transfer "
                                              "benchmark each)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """DecoEvo's "Avg." over benchmarks, per run then over runs.

    Each method's score averaged over the benchmarks within each seed, then over the seeds
    (mean ± sd), and DecoEvo − SkillOpt with its 95 % interval over matched runs.
    """
    from coevo.algorithms.decoevo.average import average, average_rows, scores_of

    try:
        found = average([scores_of(path) for path in sources])
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if as_json:
        print(found.model_dump_json())
        return
    print_rows(average_rows(found), title=f"average over {len(found.benchmarks)} benchmarks (0-1), per run then "
                                          f"over runs: {', '.join(found.benchmarks)}")
    for method, lacking in found.left_out_methods.items():
        out.print(f"{method}: no average, {', '.join(lacking)} has no score for it", highlight=False, markup=False)
    diff = found.decoevo_minus_skillopt
    if diff is not None:
        interval = f"[{diff.low:+.3f}, {diff.high:+.3f}]" if diff.low is not None else "(no interval)"
        mean = f"{diff.mean_diff:+.3f}" if diff.mean_diff is not None else "n/a"
        out.print(f"DecoEvo − SkillOpt: {mean} {interval}, n={diff.n_runs} runs; {diff.note}",
                  highlight=False, markup=False)
    if found.decoevo_relative_by_benchmark:  # the paper's transfer statements ("1.4-4.5 % on LLMEval-Med")
        out.print("DecoEvo relative to SkillOpt, per benchmark (ratio of means over their common seeds): " + "; ".join(
            f"{name} {gain:+.1f} %" for name, gain in found.decoevo_relative_by_benchmark.items()),
            highlight=False, markup=False)


def print_agreement(a: Path, b: Path, *, as_json: bool) -> None:
    """Top-1 overlap and pairwise agreement of the scores in files `a` and `b`, printed."""
    from coevo.eval.agreement import judge_agreement, left_out_lines, read_scores_jsonl, report_rows, tie_rule_line

    file_a, file_b = read_scores_jsonl(a), read_scores_jsonl(b)
    result = judge_agreement(file_a.scores, file_b.scores)
    report = {**result.model_dump(), "invalid_a": file_a.n_invalid, "invalid_b": file_b.n_invalid}
    if as_json:
        print(json.dumps(report))
        return
    print_table({"columns": ["measure", "value", "95% interval", "n", "note"], "rows": report_rows(result)},
                title="judge agreement")
    print_plain([tie_rule_line(result), *left_out_lines(result, str(a), str(b))])
    if file_a.n_invalid or file_b.n_invalid:
        out.print(f"unreadable scores left out: {file_a.n_invalid} in {a}, {file_b.n_invalid} in {b}",
                  highlight=False, markup=False)


def export_or_merge_labels(sources: list[Path], out_dir: Path | None, *, stage: str | None, as_json: bool) -> None:
    """Export one run's labels, or merge annotator files by majority vote, into `out_dir`."""
    from coevo.eval.annotators import vote_rows
    from coevo.view.annotate_labels import collect_labels, written_lines

    runs = [p for p in sources if p.is_dir()]
    if runs and len(sources) > 1:
        raise typer.BadParameter("give one run folder, or annotator files (one JSONL per annotator), not both "
                                 f"or several runs: {', '.join(map(str, sources))}")
    if runs and out_dir is None:
        raise typer.BadParameter("--out DIR is needed to export a run's labels (the folder for human.jsonl)")
    if not runs and stage is not None:
        raise typer.BadParameter("--stage picks a run's labels; annotator files are merged as they are")
    labels = collect_labels(sources, out_dir, stage)
    if as_json:
        print(json.dumps(labels.result))
        return
    if labels.merge is not None:
        print_table({"columns": ["pair", *labels.merge.annotators, "majority"], "rows": vote_rows(labels.merge)},
                    title="majority vote")
    print_plain(written_lines(labels, out_dir))


def transfer_skill(skill_file: Path, data: str, *, model: str | None, grader: str | None, limit: int | None,
                   cache: Path | None, as_json: bool, run: Path | None = None) -> None:
    """A DecoEvo solver skill applied to `data` and graded against its gold rubrics, printed."""
    from coevo.algorithms.decoevo import evaluate_skill
    from coevo.algorithms.decoevo.skills import read_skill_file
    from coevo.llm.specs import load_model
    from coevo.rundir.store import RunStore
    from coevo.tasks.loaders import load_samples

    text = read_skill_file(skill_file)
    roles = run_roles(run) if run is not None else None
    model = model or (roles.backbone.model if roles is not None else "smollm2")
    grader = grader or (roles.grader.model if roles is not None else None)
    samples = load_samples(data, limit=limit)
    store = RunStore(cache) if cache else None
    solver = load_model(model, store=store)
    result = evaluate_skill(text, samples, solver, load_model(grader, store=store) if grader else None, roles=roles)
    result.update({"skill": str(skill_file), "data": data, "model": model, "grader": grader or model,
                   "roles_from": str(run) if run is not None else "defaults"})
    if as_json:
        print(json.dumps(result))
        return
    row = {k: result[k] for k in ("data", "n_samples", "n_valid", "n_invalid", "gold_mean")}
    print_rows([row], title=f"solver skill {skill_file} (gold-rubric score, 0-1)")
    if grader is None:
        out.print(f"graded by the solver's own model ({model}): pass --judge or --run for another grader",
                  highlight=False, markup=False)


def transfer_final_skills(run: Path, data: str, *, model: str | None, grader: str | None, limit: int | None,
                          as_json: bool) -> None:
    """Every (method, seed)'s final solver skill of `run` graded on `data`, with the run's roles."""
    from coevo.algorithms.decoevo import evaluate_skill
    from coevo.algorithms.decoevo.average import final_solver_skills
    from coevo.llm.specs import load_model
    from coevo.core.progress import progress_bar
    from coevo.rundir.store import RunStore
    from coevo.tasks.loaders import load_samples

    roles = run_roles(run)
    model, grader = model or roles.backbone.model, grader or roles.grader.model
    samples, store = load_samples(data, limit=limit), RunStore(run)
    solver = load_model(model, store=store)
    judge = load_model(grader, store=store) if grader else None
    rows = []
    skills = sorted(final_solver_skills(store).items())
    with progress_bar("final solver skills", total=len(skills)) as advance:
        for (method, seed), skill in skills:
            found = evaluate_skill(skill.text, samples, solver, judge, roles=roles, seed=seed)
            rows.append({"method": method, "seed": seed, "version": skill.version, "gold_mean": found["gold_mean"],
                         "n_valid": found["n_valid"], "n_samples": found["n_samples"]})
            advance(1)
    if as_json:
        print(json.dumps({"data": data, "run": str(run), "model": model, "grader": grader or model, "results": rows}))
        return
    print_rows(rows, title=f"final solver skills of {run} on {data} (gold-rubric score, 0-1)")


def run_roles(run: Path) -> Any:
    """The `roles:` of the DecoEvo run in folder `run` (its stored config), or a clear error."""
    from coevo.algorithms.decoevo.config import DecoEvoConfig
    from coevo.rundir.store import STORE_FILE, RunStore

    if not (run / STORE_FILE).is_file():
        raise typer.BadParameter(f"--run {run}: not a run folder (no run store in it); give the folder a "
                                 "`coevo run` wrote")
    stored = RunStore(run).get_meta("config")
    if not stored or stored.get("algorithm") != "decoevo":
        found = stored.get("algorithm") if stored else "no config"
        raise typer.BadParameter(f"--run {run}: a DecoEvo run's roles are needed, this run is {found}")
    return DecoEvoConfig.model_validate(stored).roles
