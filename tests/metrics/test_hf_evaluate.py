"""metrics/hf_evaluate.py: a Hugging Face evaluate module written here (outside the project)
scores the demo through `--metric evaluate:PATH`, offline, and align lists it like any metric."""
from __future__ import annotations

import json
import textwrap

import pytest
from sqlalchemy import select

from db import session_scope
from db.models import MetricRun, MetricScore
from metrics.config import ScoringConfig, load_grid
from metrics.core import ConfigError
from testing.cli import run_in_process

pytest.importorskip("evaluate")

MODULE = '''
import datasets
import evaluate


class {cls}(evaluate.Metric):
    """Word overlap: the share of the reference's words the prediction has."""

    def _info(self):
        return evaluate.MetricInfo(
            description="word overlap", citation="", inputs_description="",
            features=datasets.Features({{"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}}))

    def _compute(self, predictions, references{extra}):
        def share(p, r):
            ref = r.lower().split()
            return sum(w in p.lower().split() for w in ref) / max(1, len(ref))
        scores = [share(p, r) for p, r in zip(predictions, references)]
        out = {{"overlap": scores, "mean": sum(scores) / max(1, len(scores))}}
        {body}
        return out
'''


def write_module(folder, name="overlap", extra="", body="pass"):
    """A module folder as evaluate wants it: <folder>/<name>/<name>.py."""
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{name}.py").write_text(textwrap.dedent(MODULE).format(
        cls=name.title(), extra=extra, body=body), encoding="utf-8")
    return path


@pytest.fixture
def overlap(tmp_path):
    return write_module(tmp_path / "modules")


def score(*args):
    return run_in_process("metrics.score", *args, "--no-progress")


def _runs(url):
    with session_scope(url) as session:
        return session.execute(select(MetricRun.id, MetricRun.metric, MetricRun.signature)
                               .order_by(MetricRun.id)).all()


def _scores(url, run_id):
    with session_scope(url) as session:
        return session.execute(select(MetricScore.f, MetricScore.error)
                               .where(MetricScore.run_id == run_id)).all()


def test_a_module_scores_the_demo_and_a_rerun_resumes(overlap, demo_db_url):
    result = score("--metric", f"evaluate:{overlap}", "--evaluate-key", "overlap",
                   "--db", demo_db_url)
    assert result.returncode == 0, result.stderr
    assert "evaluate:overlap ctx=none noise=none: run 1: 125 selected, 0 already stored, " \
           "125 scored, 0 errors" in result.stdout
    [(run_id, metric, signature)] = _runs(demo_db_url)
    assert metric == "evaluate:overlap"
    assert signature.startswith("metric:evaluate|module:overlap|code:")
    assert "|key:overlap|version:" in signature and signature.endswith("|ctx:none|noise:none|"
                                                                       "seed:0|runner:1")
    scores = _scores(demo_db_url, run_id)
    assert len(scores) == 125 and all(e is None and 0 <= f <= 1 for f, e in scores)
    assert len({f for f, _ in scores}) > 10  # a score per pair, not the chunk's mean
    again = score("--metric", f"evaluate:{overlap}", "--evaluate-key", "overlap",
                  "--db", demo_db_url)
    assert "125 selected, 125 already stored, 0 scored" in again.stdout


def test_the_batch_and_a_call_per_pair_give_the_same_scores(overlap, demo_db_url):
    one_call = write_module(overlap.parent / "single", body="out.pop('mean')")
    assert score("--metric", f"evaluate:{overlap}", "--evaluate-key", "overlap", "--limit", "30",
                 "--db", demo_db_url).returncode == 0
    result = score("--metric", f"evaluate:{one_call}", "--limit", "30", "--db", demo_db_url)
    assert result.returncode == 0, result.stderr
    (first, *_), (second, *_) = _runs(demo_db_url)
    assert _scores(demo_db_url, first) == _scores(demo_db_url, second)


def test_several_numbers_without_a_key_name_them(overlap, demo_db_url):
    result = score("--metric", f"evaluate:{overlap}", "--limit", "5", "--db", demo_db_url)
    assert result.returncode == 1
    assert "compute() returned the numbers overlap, mean: choose the score with " \
           "--evaluate-key" in result.stderr
    result = score("--metric", f"evaluate:{overlap}", "--evaluate-key", "median", "--limit", "5",
                   "--db", demo_db_url)
    assert "compute() returned no 'median' (it returned overlap, mean)" in result.stderr


def test_the_signature_follows_the_code_and_the_options(overlap):
    def signature(**options):
        return ScoringConfig(f"evaluate:{overlap}", **options).validated().signature()

    plain = signature(evaluate_key="overlap")
    assert signature(evaluate_key="overlap") == plain
    assert signature(evaluate_key="mean") != plain
    with_args = signature(evaluate_key="overlap", evaluate_args='{"b": 1, "a": "ü"}')
    assert '|args:{"a": "ü", "b": 1}|' in with_args
    script = overlap / "overlap.py"
    script.write_text(script.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    changed = signature(evaluate_key="overlap")
    assert changed != plain and changed.split("|code:")[0] == plain.split("|code:")[0]


def test_noise_is_scored_like_the_lexical_metrics(overlap, demo_db_url):
    result = score("--metric", f"evaluate:{overlap}", "--evaluate-key", "overlap",
                   "--noise", "targeted", "--db", demo_db_url)
    assert result.returncode == 0, result.stderr
    assert "25 selected, 0 already stored, 25 scored, 0 errors, 25 noise samples created" \
        in result.stdout
    assert "|noise:targeted|noisetok:comment-v1@dataset-vocab|" in result.stdout


def test_context_goes_to_a_module_that_takes_it_and_is_refused_by_others(overlap, demo_db_url):
    result = score("--metric", f"evaluate:{overlap}", "--evaluate-key", "overlap",
                   "--context", "full", "--db", demo_db_url)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "error: evaluate:overlap: evaluate:overlap takes no context (its compute() has no "
        "`contexts` input): score it with --context none")
    # this one scores how much of the context the prediction repeats, and records the language
    with_context = write_module(
        overlap.parent / "ctx", name="contextual", extra=", contexts=None, lang=None",
        body="out['overlap'] = [len(c) + (1000 if lang == 'zh' else 0) for c in contexts]")
    result = score("--metric", f"evaluate:{with_context}", "--evaluate-key", "overlap",
                   "--context", "minimal", "--db", demo_db_url)
    assert result.returncode == 0, result.stderr
    from metrics.context import MINIMAL_PREFIX

    [(run_id, _, _)] = [r for r in _runs(demo_db_url) if r.metric == "evaluate:contextual"]
    values = {f for f, _ in _scores(demo_db_url, run_id)}
    assert values == {len(MINIMAL_PREFIX[lang]) + (1000 if lang == "zh" else 0)
                      for lang in ("en", "nl", "zh", "el", "pl")}


def test_a_grid_file_names_it_too(overlap, tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"runs:\n  - metric: evaluate:{overlap}\n    evaluate_key: overlap\n"
                    f"    noise: [none, uniform]\n", encoding="utf-8")
    configs = load_grid(str(grid))
    assert [(c.metric, c.evaluate_module, c.noise) for c in configs] == [
        ("evaluate", str(overlap), "none"), ("evaluate", str(overlap), "uniform")]


def test_bad_modules_and_options_get_one_line(overlap, tmp_path, demo_db_url):
    with pytest.raises(ConfigError, match="^evaluate needs a module: --metric evaluate:NAME_OR"):
        ScoringConfig("evaluate").validated()
    with pytest.raises(ConfigError, match="no such file or folder"):
        ScoringConfig(f"evaluate:{tmp_path / 'missing'}").validated()
    with pytest.raises(ConfigError, match="^--evaluate-args must be a JSON object"):
        ScoringConfig(f"evaluate:{overlap}", evaluate_args="[1]").validated()
    with pytest.raises(ConfigError, match="^metric bleu takes no argument after ':'"):
        ScoringConfig("bleu:x").validated()
    result = score("--metric", f"evaluate:{overlap}", "--evaluate-args", "{lowercase",
                   "--db", demo_db_url)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--evaluate-args is not JSON" in result.stderr
    broken = write_module(tmp_path / "broken", name="broken", body="out = 1 / 0")
    (broken / "broken.py").write_text("import nonexistent_package_xyz\n", encoding="utf-8")
    result = score("--metric", f"evaluate:{broken}", "--db", demo_db_url)
    assert result.returncode == 2 and "cannot load evaluate module" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_hub_name_offline_says_to_give_a_local_module(demo_db_url, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = score("--metric", "evaluate:no-such-metric-xyz", "--db", demo_db_url)
    assert result.returncode == 2
    assert "cannot load evaluate module 'no-such-metric-xyz'" in result.stderr
    assert "offline, give the module's local script or folder" in result.stderr


def test_align_lists_it_like_any_metric(overlap, demo_db_url, tmp_path):
    assert score("--metric", f"evaluate:{overlap}", "--evaluate-key", "overlap",
                 "--db", demo_db_url).returncode == 0
    report = tmp_path / "align"
    result = run_in_process("align", "--db", demo_db_url, "--out", str(report), "--format",
                            "json", "--no-figures", "--resamples", "0", "--slice", "all",
                            "--metric", "evaluate:overlap")
    assert result.returncode == 0, result.stderr
    rows = json.loads((report / "results.json").read_text(encoding="utf-8"))["kappa"]
    assert [(r["metric"], r["slice"], r["n"]) for r in rows] == [("evaluate:overlap", "all", 125)]
