"""Every ```python block of docs/*.md (and docs/solvers/*.md) and README.md runs as written:
the blocks of one page run in order in one namespace, in a scratch directory (they may write
files). A block that is not meant to run carries the line `<!-- docs-test: skip (reason) -->`
right above its fence; a block that needs an optional package (dask, distributed, matplotlib,
tqdm) is skipped, with the package named, only when that package is absent."""
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = sorted(ROOT.glob("docs/**/*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"(<!-- docs-test: skip \((?P<reason>[^)]*)\) -->\n)?```python\n(?P<code>.*?)```",
                   re.S)
OPTIONAL = ("dask", "distributed", "matplotlib", "tqdm")


def blocks(page):
    return [(m.group("reason"), m.group("code")) for m in FENCE.finditer(page.read_text())]


def test_the_pages_have_examples_and_the_skip_marker_is_parsed():
    found = {page.name: blocks(page) for page in PAGES}
    assert len(found["getting-started.md"]) >= 7 and found["README.md"]
    text = "<!-- docs-test: skip (a shell session) -->\n```python\n!ls\n```\n```python\nx = 1\n```"
    parsed = [(m.group("reason"), m.group("code")) for m in FENCE.finditer(text)]
    assert parsed == [("a shell session", "!ls\n"), (None, "x = 1\n")]


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_examples_of_a_page_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    skipped = []
    for k, (reason, code) in enumerate(blocks(page)):
        if reason is not None:
            skipped.append(f"block {k}: {reason}")
            continue
        try:
            exec(compile(code, f"{page.name}, python block {k}", "exec"), namespace)
        except ModuleNotFoundError as error:
            if error.name and error.name.split(".")[0] in OPTIONAL:
                pytest.skip(f"{page.name} block {k} needs {error.name}, not installed")
            raise
    if skipped:
        print(f"{page.name}: not run (marked): {skipped}")
    assert os.getcwd() == str(tmp_path)
