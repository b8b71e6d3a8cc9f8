"""Docs that run: every code block of README.md and of every page under docs/ (docs/*.md,
docs/papers/*.md, ...) is executed here or explicitly marked, so that an example cannot rot.

Which blocks run
    A fenced block whose language is ``python``, ``bash`` (``sh``, ``shell``) or ``yaml`` runs.
    A block is skipped or run in a lighter form only when the line just above its fence is one
    of these HTML comments (invisible on the rendered page); every other block — no language, or
    another one — fails :func:`test_every_block_is_run_or_marked` until it is marked:

    ``<!-- not-run: REASON -->``
        not run: a synopsis, an output listing, a file format, a diagram.
    ``<!-- validate-only: REASON -->``
        a shell block of long commands (paper reproductions, full sweeps): ``netsim run`` is
        checked as ``netsim validate`` checks it without loading the data (the command line
        parsed by netsim's own parser, the scenario with its ``--set`` resolved, the memory of
        its N x N part), ``netsim sweep`` runs with ``--dry-run`` (every grid point validated),
        ``netsim validate`` / ``list`` run as they are, the other ``netsim`` commands are parsed
        only, and ``python SCRIPT ...`` runs ``SCRIPT --help``.
    ``<!-- needs: COMMAND -->``
        (with a runnable block) run the shell COMMAND (shortened, below) first: a block that
        reads the results of a ``validate-only`` block above it.

How blocks run
    In process (no subprocess, one torch thread), in the order of the page, in a temporary
    workspace that holds a copy of ``scenarios/`` and ``figures/`` and, for every page but the
    README, ``results/quickstart`` from the README's ``netsim run``: the examples must work
    after it. The python blocks of a page share one namespace (a page reads like one session);
    a bare expression is evaluated and its ``repr`` taken (as a prompt would print it).
    Shell lines: ``netsim ARGS`` is ``netsim.cli.main(ARGS)`` (rc 0 expected), ``python
    SCRIPT.py ARGS`` runs the script as ``__main__``; set-up lines of the environment (``pip``,
    ``uv``, ``pip-compile``, ``python -m pip``, ``python -m pytest``, ``export``) are skipped;
    a line with ``$(...)`` is expanded by bash's ``printf`` (nothing else of it runs). YAML
    blocks: a scenario is checked with ``netsim validate``, a sweep file (``scenario:``, no
    ``clients``) with ``netsim sweep --dry-run``.

How runs are shortened
    ``netsim.running.runner.run`` (behind ``netsim run``, ``netsim.run`` and every run of a sweep)
    is wrapped: the scenario, validated in full first (so its errors are the real ones), runs with
    at most 8 clients and 3 rounds (the first variant that validates: 8 or all clients; an
    algorithm's ``finetune_rounds`` capped below the rounds, ``tau_init`` left to its default),
    no figures and no progress bar, and the first of its seeds only. The description of the
    shortened run carries a hash of the full run's config and seeds, so that netsim's refusal to
    write over another run's folder (or its reuse of the same run's) behaves as for the full
    runs. A sweep (``netsim.running.sweep.Sweep``) keeps its first seed, the first 2 values of its x
    axis and the first value of every other grid key, and runs serially in this process.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import hashlib
import io
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md")),
         *sorted(p for p in DOCS.rglob("*.md") if p.parent != DOCS)]
LANGUAGES = {"python": "python", "py": "python", "bash": "shell", "sh": "shell",
             "shell": "shell", "yaml": "yaml", "yml": "yaml"}
MARKER = re.compile(r"^\s*<!--\s*([\w-]+)\s*:\s*(.*?)\s*-->\s*$")
MARKERS = ("not-run", "validate-only", "needs")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
#: environment set-up commands of a shell block (what this suite runs in is already set up)
SETUP = {"pip", "pip3", "uv", "pip-compile", "export"}
#: the shortened runs: most clients and rounds
CLIENTS, ROUNDS = 8, 3
TAG = "[docs test: shortened stand-in for run"
#: innermost last: is the running netsim command a sweep's dry run (every grid point validated,
#: not only the shortened sweep's)
FULL_SWEEPS: list[bool] = []
#: every component registry (netsim.schema.registry.Registry), found by the ``shortening`` context
REGISTRIES: list = []


@dataclasses.dataclass
class Block:
    page: Path
    line: int                       # 1-based line of the opening fence
    lang: str                       # info string's first word, lower case ('' if none)
    text: str
    marks: dict[str, list[str]]     # marker kind -> reasons / commands

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"

    @property
    def kind(self) -> str | None:
        """'python', 'shell' or 'yaml' when it runs (validate-only: 'validate'), else None."""
        if "not-run" in self.marks:
            return None
        if "validate-only" in self.marks:
            return "validate"
        return LANGUAGES.get(self.lang)


def blocks(page: Path, text: str | None = None) -> list[Block]:
    """The fenced code blocks of a markdown page (``text``: its text, else read), with the
    markers just above each."""
    lines = (page.read_text(encoding="utf-8") if text is None else text).splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        end = i + 1
        while end < len(lines) and not re.match(
                rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[end]):
            end += 1
        body = "\n".join(line[indent:] if not line[:indent].strip() else line.lstrip()
                         for line in lines[i + 1:end])
        marks: dict[str, list[str]] = {}
        j = i - 1
        while j >= 0 and (mm := MARKER.match(lines[j])):
            marks.setdefault(mm.group(1), []).insert(0, mm.group(2))
            j -= 1
        out.append(Block(page, i + 1, (info.split() or [""])[0].lower(), body, marks))
        i = end + 1
    return out


ALL = [b for page in PAGES for b in blocks(page)]


# ------------------------------------------------------------------ shell lines

def commands(text: str) -> list[list[str]]:
    """The commands of a shell block as argv lists: comments dropped, continued lines (a
    trailing backslash, an open quote or ``$(``) joined, ``&&`` and ``;`` separating commands."""
    logical, buf, joiner = [], "", "\n"
    for line in text.splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        buf = f"{buf}{joiner}{line}" if buf else line
        joiner = "\n"                                      # inside a quote or $(...)
        if buf.endswith("\\"):
            buf, joiner = buf[:-1], " "
            continue
        if "$(" in buf and buf.count("(") > buf.count(")"):
            continue
        try:
            shlex.split(buf, comments=True)
        except ValueError:                                  # an open quote: goes on
            continue
        logical.append(buf)
        buf = ""
    assert not buf, f"unfinished shell line: {buf!r}"
    out = []
    for cmd in logical:
        if "$(" in cmd:                                     # bash expands it; nothing else runs
            done = subprocess.run(["bash", "-c", 'printf "%s\\0" ' + cmd], capture_output=True,
                                  text=True, timeout=30, check=True)
            out.append(done.stdout.split("\0")[:-1])
            continue
        lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        argv: list[str] = []
        for tok in list(lex) + ["&&"]:
            if tok in ("&&", ";"):
                if argv:
                    out.append(argv)
                argv = []
            elif tok and set(tok) <= set("()|<>&;"):
                raise AssertionError(f"{cmd!r}: pipes, redirections and subshells are not run "
                                     "here; mark the block or write the command plainly")
            else:
                argv.append(tok)
    return out


def is_setup(argv: list[str]) -> bool:
    """An environment set-up command (:data:`SETUP`, ``python -m pip|pytest``, ``pytest``)."""
    return (argv[0] in SETUP or argv[0] == "pytest" or (
        argv[0] in ("python", "python3") and argv[1:3] in (["-m", "pip"], ["-m", "pytest"])))


def netsim_cli(args: list[str]) -> tuple[int, str]:
    """``netsim ARGS`` in this process: (rc, what it printed)."""
    from netsim.cli import main

    buf = io.StringIO()
    FULL_SWEEPS.append(args[:1] == ["sweep"] and "--dry-run" in args)
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = main(list(args))
        except SystemExit as exc:                           # argparse
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            FULL_SWEEPS.pop()
    return rc or 0, buf.getvalue()


def python_script(argv: list[str]) -> tuple[int, str]:
    """``python SCRIPT.py ARGS`` in this process, as ``__main__``: (rc, what it printed)."""
    script = Path(argv[0])
    assert script.is_file(), f"python {argv[0]}: no such script"
    buf, argv0, path0, modules = io.StringIO(), sys.argv, list(sys.path), set(sys.modules)
    sys.argv = list(argv)
    sys.path.insert(0, str(script.parent.resolve()))        # as `python SCRIPT` does
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                runpy.run_path(str(script), run_name="__main__")
                rc = 0
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv, sys.path[:] = argv0, path0
        for name in set(sys.modules) - modules:             # the script's sibling modules
            if str(script.parent.resolve()) in str(getattr(sys.modules[name], "__file__", "")):
                del sys.modules[name]
    return rc or 0, buf.getvalue()


def python_argv(argv: list[str]) -> list[str] | None:
    """``python SCRIPT.py ...`` -> [SCRIPT.py, ...]; ``python -m netsim[.cli] ...`` -> None
    (a netsim command); anything else fails."""
    if argv[1:3] in (["-m", "netsim"], ["-m", "netsim.cli"]):
        return None
    assert len(argv) > 1 and argv[1].endswith(".py"), f"{shlex.join(argv)}: not run here"
    return argv[1:]


def run_command(argv: list[str]) -> str:
    """Run one shell command (shortened inside :func:`shortening`); fail unless rc 0."""
    if is_setup(argv):
        return ""
    if argv[0] == "netsim" or (argv[0].startswith("python") and python_argv(argv) is None):
        args = argv[1:] if argv[0] == "netsim" else argv[3:]
        rc, text = netsim_cli(args)
    elif argv[0] in ("python", "python3"):
        rc, text = python_script(python_argv(argv))
    else:
        raise AssertionError(f"{shlex.join(argv)}: not a command this test runs (netsim, python "
                             f"SCRIPT.py, {', '.join(sorted(SETUP))}); mark the block")
    assert rc == 0, f"`{shlex.join(argv)}` exited {rc}:\n{text}"
    return text


def validate_command(argv: list[str]) -> str:
    """The validate-only form of one command (see the module's docstring)."""
    if is_setup(argv):
        return ""
    if argv[0].startswith("python") and python_argv(argv) is not None:
        rc, text = python_script([python_argv(argv)[0], "--help"])
        assert rc == 0, f"`{argv[1]} --help` exited {rc}:\n{text}"
        return text
    assert argv[0] == "netsim" or argv[0].startswith("python"), \
        f"{shlex.join(argv)}: not a command this test validates"
    args = argv[1:] if argv[0] == "netsim" else argv[3:]
    from netsim.cli import DEFAULT_SCENARIO, build_parser

    if args[:1] in (["validate"], ["list"]):
        return run_command(["netsim", *args])
    if args[:1] == ["sweep"]:
        return run_command(["netsim", *args, *(["--dry-run"] if "--dry-run" not in args else [])])
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            parsed = build_parser().parse_args(args)
        except SystemExit as exc:
            raise AssertionError(f"`{shlex.join(argv)}`: netsim's parser refused it:\n"
                                 f"{buf.getvalue()}") from exc
    if args[0] == "run":
        from netsim.errors import ConfigError
        from netsim.scenario import memory
        from netsim.scenario.config import Scenario

        try:
            cfg = Scenario.load(parsed.scenario or DEFAULT_SCENARIO).with_overrides(
                parsed.set or []).resolve()
            memory.check(cfg, "cpu")
        except ConfigError as exc:
            raise AssertionError(f"`{shlex.join(argv)}`: netsim: error: {exc}") from None
    return ""


# ------------------------------------------------------------------ shortening

def _shortened(scenario, seeds):
    """(the shortened stand-in of a valid scenario, its seeds) — see the module docstring."""
    import netsim.results
    from netsim.errors import ConfigError
    from netsim.scenario.config import Scenario

    full = scenario.resolve()
    seeds = list(seeds) if seeds else [full["seed"]]
    ignored = getattr(netsim.results, "NOT_IDENTITY", ("outputs", "threads"))
    body = {k: v for k, v in full.items() if k not in ignored}
    tag = hashlib.sha1(yaml.safe_dump([body, seeds], sort_keys=True).encode()).hexdigest()[:12]
    rounds = min(full["schedule"]["rounds"], ROUNDS)
    error = None
    for clients in dict.fromkeys((min(full["clients"], CLIENTS), full["clients"])):
        raw = {**scenario.raw, "clients": clients,
               "description": f"{full['description']} {TAG} {tag}]".strip()}
        raw["schedule"] = {**(scenario.raw.get("schedule") or {}), "rounds": rounds,
                           "eval_every": min(full["schedule"]["eval_every"], rounds)}
        raw["outputs"] = {**(scenario.raw.get("outputs") or {}), "figures": False,
                          "progress": False}
        algs = []
        for spec in raw.get("algorithms") or []:
            if isinstance(spec, dict):
                spec = dict(spec)
                if spec.get("finetune_rounds"):
                    spec["finetune_rounds"] = max(1, min(spec["finetune_rounds"], rounds - 1))
                spec.pop("tau_init", None)
            algs.append(spec)
        raw["algorithms"] = algs
        short = Scenario(raw, scenario.path)
        try:
            short.resolve()
            return short, seeds[:1]
        except ConfigError as exc:
            error = exc
    raise AssertionError(f"{scenario!r} has no shortened form that validates: {error}; "
                         "adjust tests/test_docs.py::_shortened")


@contextlib.contextmanager
def shortening(monkeypatch):
    """Runs and sweeps shortened (module docstring), registries and torch's threads restored
    when ``monkeypatch`` is undone."""
    import torch

    import algorithms  # noqa: F401  (the registries exist before their snapshot)
    import netsim
    import netsim.data  # noqa: F401
    import netsim.models  # noqa: F401
    import netsim.links.models  # noqa: F401
    import netsim.running.runner
    import netsim.running.sweep
    import netsim.util.pool
    import topologies  # noqa: F401
    from netsim.scenario.config import Scenario
    from netsim.schema.registry import Registry

    real_run = netsim.running.runner.run

    def run(scenario, seeds=None, out=None, **kwargs):
        sc = scenario if isinstance(scenario, Scenario) else Scenario.load(scenario)
        try:
            if TAG not in str(sc.resolve().get("description")):
                sc, seeds = _shortened(sc, seeds)
        except netsim.ConfigError:                          # the real run says it
            pass
        return real_run(sc, seeds=seeds, out=out, **kwargs)

    monkeypatch.setattr(netsim, "run", run)         # first: netsim.run (lazy) is loaded unpatched
    monkeypatch.setattr(netsim.running.runner, "run", run)
    real_init = netsim.running.sweep.Sweep.__init__

    def sweep_init(self, raw, path=None):
        real_init(self, raw, path)
        self.spec["seeds"] = self.spec["seeds"][:1]         # (the other seeds' runs: copies)
        if FULL_SWEEPS and FULL_SWEEPS[-1]:                 # a dry run validates every point
            return
        self.spec["grid"] = {k: v[:2] if k == self.x else v[:1]
                             for k, v in self.spec["grid"].items()}
        self.spec["executor"].update(name="serial", threads=1)

    monkeypatch.setattr(netsim.running.sweep.Sweep, "__init__", sweep_init)
    monkeypatch.setattr(netsim.util.pool, "start_early", lambda *a, **k: None)
    REGISTRIES[:] = [o for o in gc.get_objects() if type(o) is Registry]
    for reg in REGISTRIES:
        monkeypatch.setattr(reg, "_items", dict(reg._items))
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture
def shortened(monkeypatch):
    with shortening(monkeypatch):
        yield


def workspace(root: Path) -> Path:
    """A folder holding copies of scenarios/ and figures/ (what the examples name)."""
    for name in ("scenarios", "figures"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def after_readme(tmp_path_factory):
    """A workspace after the README's `netsim run` (shortened): results/quickstart."""
    root = workspace(tmp_path_factory.mktemp("readme_run"))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        with shortening(mp):
            run_command(["netsim", "run"])
    assert (root / "results" / "quickstart" / "summary.json").is_file()
    return root


# ------------------------------------------------------------------ running a page

def run_python(block: Block, module: types.ModuleType) -> None:
    """Run a python block in ``module``'s namespace; bare expressions are evaluated and their
    ``repr`` taken."""
    name = block.where.rpartition(":")[0]                  # tracebacks: the page's own lines
    tree = ast.parse(block.text, filename=name)
    ast.increment_lineno(tree, block.line)
    for node in tree.body:
        if isinstance(node, ast.Expr):
            repr(eval(compile(ast.Expression(node.value), name, "eval"), module.__dict__))
        else:
            exec(compile(ast.Module([node], []), name, "exec"), module.__dict__)


def run_yaml(block: Block, n: int) -> None:
    """Check a YAML block: a scenario with ``netsim validate``, a sweep file with ``netsim sweep
    --dry-run`` (written into scenarios/, where a sweep's relative ``scenario:`` is read)."""
    raw = yaml.safe_load(block.text)
    assert isinstance(raw, dict), f"{block.where}: not a YAML mapping"
    path = Path("scenarios") / f"docs_block_{n}.yaml"
    path.write_text(block.text, encoding="utf-8")
    if "scenario" in raw and "clients" not in raw:
        run_command(["netsim", "sweep", str(path), "--dry-run"])
    else:
        run_command(["netsim", "validate", str(path)])


def run_page(page: Path) -> dict[str, int]:
    """Run every block of a page in the current folder; returns counts by kind."""
    module = types.ModuleType(f"docs_{page.stem}")
    sys.modules[module.__name__] = module                   # classes it defines pickle
    counts = {"run": 0, "validated": 0, "skipped": 0}
    try:
        for n, block in enumerate(blocks(page)):
            kind = block.kind
            if kind is None:
                counts["skipped"] += 1
                continue
            try:
                for cmd in block.marks.get("needs", []):
                    for argv in commands(cmd):
                        run_command(argv)
                if kind == "python":
                    registers = re.findall(r"register\w*\(\s*['\"](\w+)['\"]", block.text)
                    _forget(registers)
                    run_python(block, module)
                elif kind == "yaml":
                    run_yaml(block, n)
                else:
                    step = validate_command if kind == "validate" else run_command
                    for argv in commands(block.text):
                        step(argv)
            except Exception as exc:
                raise AssertionError(f"{block.where}: {type(exc).__name__}: {exc}") from exc
            counts["validated" if kind in ("validate", "yaml") else "run"] += 1
    finally:
        sys.modules.pop(module.__name__, None)
    return counts


def _forget(names: list[str]) -> None:
    """Drop ``names`` from every registry (copies made by :func:`shortening`), so that
    a block registering them runs after a test (or a script) that registered the same name."""
    for reg in REGISTRIES:
        for name in names:
            reg._items.pop(name, None)


# ------------------------------------------------------------------ the tests

def test_every_block_is_run_or_marked():
    """A block runs (python, shell, yaml) or is marked; markers are known and give a reason."""
    bad = []
    for b in ALL:
        for kind, values in b.marks.items():
            if kind not in MARKERS:
                bad.append(f"{b.where}: unknown marker <!-- {kind}: --> ({', '.join(MARKERS)})")
            if not all(values):
                bad.append(f"{b.where}: <!-- {kind}: --> without a reason")
        if "not-run" in b.marks and len(b.marks) > 1:
            bad.append(f"{b.where}: not-run with other markers")
        if b.kind is None and "not-run" not in b.marks:
            bad.append(f"{b.where}: ```{b.lang} is not run: give it a language (python, bash, "
                       "yaml) or mark it <!-- not-run: REASON --> / <!-- validate-only: ... -->")
        if b.kind == "validate" and LANGUAGES.get(b.lang) not in ("shell", None):
            bad.append(f"{b.where}: validate-only is for shell commands")
    assert not bad, "\n".join(bad)


def test_blocks_markers_and_commands_parse():
    text = ("x\n<!-- not-run: output -->\n```\na\n```\n<!-- needs: netsim run -->\n"
            "```python\nb\n```\n  ```yaml\n  c:\n    d: 1\n  ```\n<!-- validate-only: long -->\n"
            "```bash\nnetsim run\n```\n")
    got = [(b.line, b.lang, b.kind, b.marks, b.text) for b in blocks(ROOT / "x.md", text)]
    assert got == [(3, "", None, {"not-run": ["output"]}, "a"),
                   (7, "python", "python", {"needs": ["netsim run"]}, "b"),
                   (10, "yaml", "yaml", {}, "c:\n  d: 1"),
                   (15, "bash", "validate", {"validate-only": ["long"]}, "netsim run")]
    assert commands("netsim run x \\\n  --set 'a=[1,\n 2]'  # note\npip install y && netsim "
                    "list models\n# c\n") == [["netsim", "run", "x", "--set", "a=[1,\n 2]"],
                                              ["pip", "install", "y"],
                                              ["netsim", "list", "models"]]
    assert commands("netsim list \\\n  $(for k in a b; do\n  echo --x=$k; done)") == \
        [["netsim", "list", "--x=a", "--x=b"]]
    with pytest.raises(AssertionError, match="pipes"):
        commands("netsim list models | head")


def test_shortened_runs_keep_the_full_runs_identity(tmp_path, monkeypatch):
    """A shortened run is refused or reused where its full run would be: the README's one-seed
    `netsim run` followed by a three-seed run of the same scenario is refused."""
    from helpers import TINY

    import netsim

    monkeypatch.chdir(tmp_path)
    with shortening(monkeypatch):
        sc = netsim.Scenario(TINY)
        res = netsim.run(sc, seeds=[0, 1], out="out", quiet=True)
        assert res.config["schedule"]["rounds"] == ROUNDS and res.summary["seeds"] == [0]
        netsim.run(sc, seeds=[0, 1], out="out", quiet=True)             # the same run: reused
        with pytest.raises(netsim.ConfigError, match="results folder"):
            netsim.run(sc, seeds=[0], out="out", quiet=True)
        with pytest.raises(netsim.ConfigError, match="results folder"):
            netsim.run(sc.with_overrides({"schedule.rounds": 5}), seeds=[0, 1], out="out",
                       quiet=True)


RUN_PAGES = [p for p in PAGES if any(b.kind for b in blocks(p))]


@pytest.mark.parametrize("page", RUN_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUN_PAGES])
def test_page_runs(page, tmp_path, monkeypatch, shortened, request):
    """Every runnable block of the page runs (shortened) in a fresh workspace; the README from
    nothing, every other page after the README's `netsim run`."""
    root = workspace(tmp_path / "work")
    if page != ROOT / "README.md":
        shutil.copytree(request.getfixturevalue("after_readme") / "results",
                        root / "results")
    monkeypatch.chdir(root)
    counts = run_page(page)
    assert counts["run"] + counts["validated"] > 0
