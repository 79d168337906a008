"""testing/bench.py: every benchmark ends as the commands do (one line, never a traceback) and
names the install that brings a package it compares against, before it measures anything."""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from testing.bench import PACKAGES, MissingPackage, require, run

BENCH = Path(__file__).resolve().parents[2] / "bench"
LIBRARIES = {"grid_report.py", "load_baseline.py"}  # imported by other benchmarks, no main


def test_every_benchmark_ends_through_the_runner():
    scripts = sorted(p.name for p in BENCH.glob("*.py") if p.name not in LIBRARIES)
    assert len(scripts) >= 12
    plain = [name for name in scripts if f'    sys.exit(run(main, "bench/{name}"' not in
             (BENCH / name).read_text(encoding="utf-8").partition('if __name__ == "__main__":')[2]]
    assert not plain, f"benchmarks not ending with testing.bench.run: {plain}"


def test_a_missing_package_is_named_with_its_install_before_anything_runs(capsys):
    ran = []
    code = run(lambda argv: ran.append(argv), "bench/x.py", needs=("no_such_package_xyz",))
    assert code == 2 and ran == []
    assert capsys.readouterr().err == (
        "bench/x.py: error: this benchmark needs no_such_package_xyz, which the default install "
        "leaves out: pip install -e '.[bench]' (bench/README.md)\n")


def test_each_missing_package_is_named_with_the_install_that_brings_it(monkeypatch):
    monkeypatch.setitem(PACKAGES, "judge_lib_xyz", PACKAGES["llama_cpp"])
    with pytest.raises(MissingPackage, match=r"^this benchmark needs llama-cpp-python, "
                                             r"no_such_package_xyz, which the default install "
                                             r"leaves out: pip install -e '\.\[judge-server\]' "
                                             r"and pip install -e '\.\[bench\]'"):
        require("sys", "judge_lib_xyz", "no_such_package_xyz")  # sys is there: not named


def test_an_import_deep_inside_is_named_the_same_way(capsys):
    def main(argv):
        import no_such_package_xyz  # noqa: F401

    assert run(main, "bench/y.py") == 2
    assert "needs no_such_package_xyz, which the default install leaves out" in \
        capsys.readouterr().err


def test_a_benchmark_ends_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench/mqm_pairs.py", str(tmp_path / "missing.tsv"),
                                      "--lang", "en", "--out", str(tmp_path / "p.jsonl")])
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(str(BENCH / "mqm_pairs.py"), run_name="__main__")
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err == f"bench/mqm_pairs.py: error: {tmp_path / 'missing.tsv'}: No such file or " \
                  f"directory\n"
