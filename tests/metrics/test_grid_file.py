"""A `--grid` file is read only when it is the size of a grid: PyYAML spends minutes on a line of
hundreds of megabytes, so a file over 1 MiB is refused at once with its size."""
from __future__ import annotations

import pytest

from metrics.config import ConfigError, load_grid
from metrics.score import main as score_main
from nlce.option_files import MAX_OPTION_FILE_BYTES
from testing.cli import as_command

main = as_command(score_main, "python -m metrics.score")


def test_an_oversized_grid_is_refused_before_parsing(tmp_path, capsys):
    path = tmp_path / "grid.yaml"
    path.write_text("configs:\n  - metric: bleu\n    note: " + "x" * (2 * MAX_OPTION_FILE_BYTES) + "\n")
    assert main(["--grid", str(path), "--db", f"sqlite:///{tmp_path / 'x.db'}"]) == 2
    err = capsys.readouterr().err
    assert f"grid file {path} is 2.0 MiB" in err and "at most 1 MiB" in err


@pytest.mark.parametrize("content, message", [
    (b"configs:\n  - metric: bl\xe9u\n", "is not UTF-8 text"),
    (b"configs: " + b"[" * 5000 + b"]" * 5000 + b"\n", "grid file"),
])
def test_a_broken_grid_names_the_file(tmp_path, content, message):
    path = tmp_path / "grid.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=message) as error:
        load_grid(str(path))
    assert str(path) in str(error.value)


def test_a_grid_that_is_not_yaml_is_one_line_with_the_place(tmp_path, capsys):
    """PyYAML's own message takes four lines; the command's is one, with line and column."""
    path = tmp_path / "grid.yaml"
    path.write_text("runs:\n  - metric: bleu\n    context: [none\n", encoding="utf-8")
    assert main(["--grid", str(path), "--db", f"sqlite:///{tmp_path / 'x.db'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"grid file {path} is not valid YAML at line 4, column 1: expected ',' or ']'" in err
    assert "(while parsing a flow sequence at line 3, column 14)" in err
