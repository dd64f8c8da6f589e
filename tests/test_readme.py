"""The README's example runs as written."""
import pathlib
import re

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README.md has no python example"
    namespace = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    model = namespace["model"]
    assert model.converged_ and model.gap_ >= 0
