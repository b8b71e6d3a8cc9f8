"""The repository is self-contained: nothing in it cites documents a clone does not have, and the
relative links of the docs lead somewhere.

- No text file of the repository (tracked, or new and not ignored) mentions the design or
  specification notes that were kept outside it, or a path outside the repository; the
  specifications live in docs/specifications/.
- Every relative link in README.md and docs/**/*.md points to an existing file, and a link with
  a ``#anchor`` into docs/specifications/ points to an existing heading of that page (GitHub's
  rule: lowercase, punctuation removed, spaces to hyphens, ``-1``, ``-2`` ... for repeats).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "docs" / "specifications"

# Spelt in pieces so that this file does not match itself.
FORBIDDEN = ("ALGORITHMS" + ".md", "DESIGN" + ".md", "../" + "shared", "shared" + "/seeds")

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.I)


def repository_files() -> list[Path]:
    """Tracked files plus new files git does not ignore; every file when git is unavailable."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, check=True, timeout=30).stdout
        names = [n for n in out.decode("utf-8", "surrogateescape").split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        skip = {".git", "__pycache__", ".pytest_cache", "results", "build", "dist"}
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
                 and not any(part.endswith(".egg-info") for part in p.parts)]
    return [ROOT / n for n in sorted(set(names))]


def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary (or vanished) file."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def test_no_reference_to_documents_outside_the_repository():
    offenders = []
    for path in repository_files():
        text = text_of(path)
        if text is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for word in FORBIDDEN:
                if word in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{lineno}: {word}")
    assert not offenders, ("documents outside the repository are cited (point to "
                           "docs/specifications/ instead):\n" + "\n".join(offenders))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped, lowercase, punctuation removed, spaces to
    hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)      # links keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a markdown page: its headings (with GitHub's -1, -2 ... for repeats) and
    explicit ``<a id=...>`` / ``<a name=...>`` targets."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found, seen = set(HTML_ID.findall(text)), {}
    for heading in HEADING.findall(text):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def links(page: Path) -> list[str]:
    """Link targets of a page, outside code blocks and code spans."""
    text = CODE_SPAN.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(text)


def test_relative_links_of_the_docs_resolve():
    broken, cache = [], {}
    for page in doc_pages():
        for target in links(page):
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):       # http:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page.resolve()
            where = f"{page.relative_to(ROOT)}: {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
                continue
            if not anchor or dest.suffix != ".md" or SPECS not in dest.parents:
                continue
            if dest not in cache:
                cache[dest] = anchors(dest)
            if anchor not in cache[dest]:
                broken.append(f"{where} (no heading #{anchor})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_specifications_exist_and_are_linked():
    pages = {"README.md", "cobo.md", "diple.md", "dpfl.md", "pdbo.md", "baselines.md"}
    assert pages <= {p.name for p in SPECS.glob("*.md")}
    index = SPECS / "README.md"
    for source in (ROOT / "README.md", ROOT / "docs" / "algorithms.md"):
        targets = {(source.parent / t.partition("#")[0]).resolve() for t in links(source)}
        assert index.resolve() in targets, f"{source.relative_to(ROOT)} does not link {index}"


def test_slug_follows_github():
    assert slug("Hyper-gradient: HGP") == "hyper-gradient-hgp"
    assert slug("Options and defaults (the paper's ambiguities)") == \
        "options-and-defaults-the-papers-ambiguities"
    assert slug("`cobo` fields, paper vs code") == "cobo-fields-paper-vs-code"
    assert slug("D-PSGD") == "d-psgd"
