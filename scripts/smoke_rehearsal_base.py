"""Make a fresh venv that looks like the GPU machine's image, for the CPU rehearsal of
scripts/gpu_smoke.sh (SMOKE_ALLOW_CPU=1): it sees only the packages of the image's list
(scripts/smoke_image_packages.txt) that are installed in the environment running this
script (.venv), so a package the smoke path imports but build/smoke-wheels lacks fails
here as it would fail there. Packages the wheels folder carries (its requirements.txt) are
left out: there the carried wheel replaces the image's copy, so here it must come from
the folder too.

Each exposed distribution's top-level modules and its .dist-info are symlinked from
.venv's site-packages into VENV/image-base, which a .pth file in the venv adds as a site
directory (after the venv's own site-packages, where the wheels go). A folder several
distributions share (a namespace package) is made real and its entries linked one level down.

Not the image: versions are .venv's (torch 2.13 CPU here, 2.11+cu130 there; numpy,
tokenizers, huggingface_hub and others differ too), and the Python is this one (3.11 here,
3.12 there). What it checks is that the set of packages is complete.

    .venv/bin/python scripts/smoke_rehearsal_base.py VENV [--wheels build/smoke-wheels]
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import subprocess
import sys
import sysconfig
from collections import defaultdict
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]

# Exposed too, though not in the image's list: what .venv's NEWER version of an image package
# needs and the image's own version does not. huggingface_hub 2.x (here) talks HTTP through
# httpx2/httpcore2 (+ truststore); the image's 1.33 uses httpx, which the image has. Only
# such version artefacts belong here, never something the smoke path itself imports.
REHEARSAL_ONLY = {"httpx2", "httpcore2", "truststore"}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def listed(path: Path) -> set[str]:
    """Distribution names in a one-per-line file (`name` or `name==version`; # comments)."""
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            names.add(normalise(re.split(r"[=<>!~ ;\[]", line)[0]))
    return names


def site_files(site: Path) -> dict[str, list[PurePosixPath]]:
    """Every distribution in `site` -> its files (relative, inside `site`), from RECORD."""
    files: dict[str, list[PurePosixPath]] = {}
    for dist in md.distributions(path=[str(site)]):
        paths = [PurePosixPath(str(f)) for f in dist.files or []]
        files[normalise(dist.metadata["Name"])] = [p for p in paths if p.parts and p.parts[0] != ".."]
    return files


def links_for(exposed: set[str], files: dict[str, list[PurePosixPath]]) -> set[PurePosixPath]:
    """The shortest paths to link so that exactly the exposed distributions' files show: a
    path is linked whole only when no hidden distribution has a file under it."""
    owners: dict[PurePosixPath, set[str]] = defaultdict(set)
    for name, paths in files.items():
        for path in paths:
            for depth in range(1, len(path.parts) + 1):
                owners[PurePosixPath(*path.parts[:depth])].add(name)
    links = set()
    for name in exposed:
        for path in files[name]:
            for depth in range(1, len(path.parts) + 1):
                prefix = PurePosixPath(*path.parts[:depth])
                if owners[prefix] <= exposed:
                    links.add(prefix)
                    break
    return {link for link in links if not any(parent in links for parent in link.parents)}


def build(venv: Path, image_list: Path, carried: set[str]) -> list[str]:
    """Create `venv` and its image-like base folder; returns the exposed distributions."""
    site = Path(sysconfig.get_paths()["purelib"])
    files = site_files(site)
    exposed = ((listed(image_list) | REHEARSAL_ONLY) & set(files)) - carried
    # The venv comes with pip (ensurepip's bundled wheel, no network): the image has pip.
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    base = venv / "image-base"
    base.mkdir()
    for link in sorted(links_for(exposed, files)):
        target = base / link
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(site / link)
    venv_site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; "
                                     "print(sysconfig.get_paths()['purelib'])"],
                                    check=True, capture_output=True, text=True).stdout.strip())
    # addsitedir (not a bare path line) so the exposed distributions' own .pth files run too.
    (venv_site / "zz-image-base.pth").write_text(f"import site; site.addsitedir({str(base)!r})\n")
    return sorted(exposed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("venv", type=Path, help="folder for the fresh venv (cleared if it exists)")
    parser.add_argument("--wheels", type=Path, default=ROOT / "build" / "smoke-wheels",
                        help="the smoke wheels folder; the packages in its requirements.txt are left out")
    parser.add_argument("--image-list", type=Path, default=ROOT / "scripts" / "smoke_image_packages.txt")
    args = parser.parse_args(argv)
    requirements = args.wheels / "requirements.txt"
    if not requirements.exists():
        sys.exit(f"no {requirements}: run 'make smoke-wheels' first")
    exposed = build(args.venv, args.image_list, listed(requirements))
    print(f"{args.venv}: a fresh venv seeing {len(exposed)} of the image's packages from {sys.prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
