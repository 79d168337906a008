"""The metric grid on three executors: in this process, a local process pool and a local Ray
cluster started by the test. Same stored scores on each, a re-run scores nothing, a failing
shard is retried and a shard that keeps failing is reported while the rest is stored."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import delete, select

from metrics.executors import (InProcessExecutor, ProcessPoolExecutor, RayExecutor, Shard,
                               run_shards)
from metrics.grid import GridConfig, plan_shards, run_grid, stored_scores

HERE = Path(__file__).parent
LEXICAL = [GridConfig("bleu"), GridConfig("rouge_l"), GridConfig("chrf")]
CONFIGS = LEXICAL + [GridConfig("bertscore", layer=3, context="none"),
                     GridConfig("bertscore", layer=3, context="full")]
# Loading torch and the encoder costs each fresh worker process ~20 s on a busy 2-core box, so
# BERTScore runs on the session's Ray workers (loaded once) and the process pool gets the
# lexical grid; both go through the same worker code (metrics.executors.score_shard).
CONFIGS_FOR = {"process": LEXICAL, "ray": CONFIGS}
LANGUAGES = ("zh", "el", "nl")  # three targets, two models each: six generations


def seed_grid_db(url: str) -> list[int]:
    """Six generations in three languages; the first has an empty prediction (an error row)."""
    from annotate.synthetic import add_synthetic_corpus
    from db import session_scope
    from db.models import Generation

    with session_scope(url) as session:
        add_synthetic_corpus(session, targets_per_language=1, languages=LANGUAGES,
                             models=("model-a", "model-b"))
        first = session.execute(select(Generation).order_by(Generation.id)).scalars().first()
        first.predicted_comment = "   "
        return list(session.execute(select(Generation.id)).scalars())


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    """One local Ray cluster for the whole session (starting one costs seconds)."""
    ray = pytest.importorskip("ray")
    fail_dir = tmp_path_factory.mktemp("ray-fail")
    # Ray's workers are children of this process: they inherit the import path and the folder
    # where the flaky scorer counts attempts.
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE)] + [p for p in os.sys.path if p])
    os.environ["NLCE_TEST_FAIL_DIR"] = str(fail_dir)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 1024 * 1024)
    yield ray
    ray.shutdown()


def _executor(kind: str, request):
    if kind == "inprocess":
        return InProcessExecutor()
    if kind == "process":
        return ProcessPoolExecutor(workers=2)
    request.getfixturevalue("ray_cluster")
    return RayExecutor()


@pytest.fixture(scope="module")
def reference_scores(tmp_path_factory):
    """The grid scored in this process: what every other executor must reproduce."""
    url = f"sqlite:///{tmp_path_factory.mktemp('grid-ref') / 'ref.db'}"
    seed_grid_db(url)
    report, runs = run_grid(url, CONFIGS, InProcessExecutor(), batch_size=2,
                            show_progress=False)
    assert not report.failed and report.items == 6 * len(CONFIGS)
    return stored_scores(url)


@pytest.mark.slow
def test_reference_grid_is_complete_and_sane(reference_scores):
    assert len(reference_scores) == 6 * len(CONFIGS)
    errors = [key for key, (p, r, f, error) in reference_scores.items() if error]
    assert len(errors) == len(CONFIGS)  # the empty prediction, once per configuration
    assert all("empty" in reference_scores[key][3] for key in errors)
    good = [f for (p, r, f, error) in reference_scores.values() if not error]
    assert all(0.0 <= f <= 1.0 + 1e-6 for f in good)
    assert any(f == pytest.approx(1.0) for f in good)  # unchanged predictions score the maximum


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["process", "ray"])
def test_executor_stores_the_same_scores_and_resumes(kind, request, tmp_path, reference_scores):
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    seed_grid_db(url)
    configs = CONFIGS_FOR[kind]
    signatures = {config.signature() for config in configs}
    reference_scores = {k: v for k, v in reference_scores.items() if k[0] in signatures}
    with _executor(kind, request) as executor:
        report, runs = run_grid(url, configs, executor, batch_size=2, show_progress=False)
        assert not report.failed, report.failed
        assert report.items == 6 * len(configs)
        assert len(report.done) == 3 * len(configs)  # 6 items in batches of 2
        assert stored_scores(url) == reference_scores  # bit for bit, every configuration

        again, runs = run_grid(url, configs, executor, batch_size=2, show_progress=False)
        assert again.done == [] and again.failed == {}
        assert all(before == total for _config, total, before in runs.values())

        # an interrupted run: drop part of one configuration's scores, only that is re-scored
        from db import session_scope
        from db.models import MetricScore

        run_id = max(runs)  # the last configuration
        with session_scope(url) as session:
            dropped = session.execute(delete(MetricScore).where(
                MetricScore.run_id == run_id,
                MetricScore.generation_id.in_(sorted({g for (_s, g) in reference_scores})[:3]))
            ).rowcount
        assert dropped == 3
        resumed, _ = run_grid(url, configs, executor, batch_size=2, show_progress=False)
        assert resumed.items == 3
        assert {r.shard.config["run_id"] for r in resumed.done} == {run_id}
        assert stored_scores(url) == reference_scores


@pytest.mark.parametrize("kind", ["inprocess", "process", "ray"])
def test_failed_shard_is_retried_and_a_hopeless_one_reported(kind, request, tmp_path):
    shards = [Shard(f"s{k}", dict(name="flaky", fail_dir=str(tmp_path),
                                  fail_times=1 if k < 3 else 0),
                    tuple(dict(id=10 * k + j, x=10 * k + j) for j in range(3)))
              for k in range(5)]
    shards.append(Shard("hopeless", dict(name="hopeless", fail_dir=str(tmp_path), fail_times=99),
                        (dict(id=999, x=1),)))
    stored = {}

    def store(result):
        assert result.shard.key not in stored, "a shard is written once"
        stored[result.shard.key] = result.scores

    with _executor(kind, request) as executor:
        report = run_shards(shards, "flaky_scorer:double_or_fail", executor, on_result=store,
                            retries=2)
    assert sorted(stored) == [f"s{k}" for k in range(5)]
    assert all(s["value"] == 2 * s["id"] for scores in stored.values() for s in scores)
    assert {r.shard.key: r.attempts for r in report.done} == {
        "s0": 2, "s1": 2, "s2": 2, "s3": 1, "s4": 1}
    assert list(report.failed) == ["hopeless"]
    assert "failing attempt 3 on purpose" in report.failed["hopeless"]
    assert report.retried == {"s0": 1, "s1": 1, "s2": 1, "hopeless": 3}
    assert (tmp_path / "hopeless-999").read_text() == "3"  # 1 try + 2 retries, then given up


@pytest.mark.slow
def test_grid_retries_failed_shards_on_ray(ray_cluster, tmp_path, reference_scores):
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    seed_grid_db(url)
    lexical = [c for c in CONFIGS if c.metric != "bertscore"]
    report, _ = run_grid(url, lexical, RayExecutor(), batch_size=4, show_progress=False,
                         scorer="flaky_scorer:grid_fail_first")
    assert not report.failed
    assert all(r.attempts == 2 for r in report.done)  # every shard failed once, then stored
    expected = {k: v for k, v in reference_scores.items()
                if k[0] in {c.signature() for c in lexical}}
    assert stored_scores(url) == expected


def test_plan_rejects_bad_configurations():
    from metrics.grid import GridError

    with pytest.raises(GridError, match="unknown metric 'blue'"):
        GridConfig("blue")
    with pytest.raises(GridError, match="lexical: it reads no context"):
        GridConfig("bleu", context="full")
    with pytest.raises(ValueError, match="unknown context variant 'fully'"):
        GridConfig("bertscore", context="fully")
    with pytest.raises(GridError, match="batch size must be at least 1"):
        plan_shards("sqlite://", [GridConfig("bleu")], batch_size=0)
