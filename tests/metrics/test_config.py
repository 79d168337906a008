"""metrics/config.py: ScoringConfig (shared fields plus the metric's options), its validation and
signature, and grid files."""
from __future__ import annotations

import copy
import pickle
from dataclasses import replace

import pytest

from metrics.config import ConfigError, ScoringConfig, expand_grid, load_grid, option_keys
from metrics.core import MetricOption
from metrics.lexical import LexicalMetric
from metrics.registry import METRICS


def test_config_validation_gives_clear_messages():
    with pytest.raises(ConfigError, match="unknown metric 'blue'.*bleu"):
        ScoringConfig(metric="blue").validated()
    with pytest.raises(ConfigError, match="--model applies to bertscore, bartscore, lmscore only, not bleu"):
        ScoringConfig(metric="bleu", model="x").validated()
    with pytest.raises(ConfigError, match="context variants apply to neural"):
        ScoringConfig(metric="chrf", context="full").validated()
    with pytest.raises(ConfigError, match="unknown noise 'gauss'"):
        ScoringConfig(metric="bleu", noise="gauss").validated()
    with pytest.raises(ConfigError, match="unknown context variant"):
        ScoringConfig(metric="bertscore", context="whole").validated()
    with pytest.raises(ConfigError, match="--layer applies to bertscore only"):
        ScoringConfig(metric="lmscore", layer=3).validated()
    with pytest.raises(ConfigError, match="for GPUs"):
        ScoringConfig(metric="bertscore", device="cpu", dtype="float16").validated()
    fast = ScoringConfig(metric="bertscore", device="cpu", dtype="bfloat16").validated()
    assert fast.dtype == "bfloat16" and "dtype:bfloat16" in fast.signature()


def test_signature_names_everything_that_changes_a_score():
    base = ScoringConfig(metric="bertscore", layer=9, context="full", device="cpu").validated()
    sig = base.signature()
    for part in ("metric:bertscore", "model:intfloat/multilingual-e5-small", "layer:9",
                 "ctx:full", "noise:none", "seed:0", "dtype:float32", "idf:no", "transformers-"):
        assert part in sig
    assert sig == ScoringConfig(metric="bert-score", layer=9, context="full",
                                device="cpu").validated().signature()
    # how a run is executed does not change its signature; what is computed does
    assert sig == ScoringConfig(metric="bertscore", layer=9, context="full", device="cpu",
                                batch_size=7, limit=3, langs=("pl",)).validated().signature()
    assert sig != ScoringConfig(metric="bertscore", layer=8, context="full",
                                device="cpu").validated().signature()
    noisy = ScoringConfig(metric="bleu", noise="uniform", seed=3).validated().signature()
    assert "noise:uniform" in noisy and "seed:3" in noisy and "tok:comment-intl-v1" in noisy


def test_grid_expands_lists(tmp_path):
    configs = expand_grid({"defaults": {"seed": 1},
                           "runs": [{"metric": ["bleu", "chrf"], "noise": ["none", "uniform"]},
                                    {"metric": "bertscore", "layer": 9,
                                     "context": ["none", "full"], "device": "cpu"}]})
    assert len(configs) == 6 and all(c.seed == 1 for c in configs)
    assert {(c.metric, c.noise) for c in configs[:4]} == {
        ("bleu", "none"), ("bleu", "uniform"), ("chrf", "none"), ("chrf", "uniform")}
    bad = tmp_path / "grid.yaml"
    bad.write_text("runs:\n  - metric: bleu\n    colour: red\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="grid.yaml: grid run #1: unknown field.*colour"):
        load_grid(str(bad))
    bad.write_text("runs: [metric: bleu\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_grid(str(bad))



def test_a_grid_names_languages_as_the_flag_does_or_as_langs():
    as_flag = expand_grid({"runs": [{"metric": "bleu", "lang": ["de", "nl"]}]})
    as_field = expand_grid({"runs": [{"metric": "bleu", "langs": "de"}]})
    assert [c.langs for c in as_flag] == [("de", "nl")] and [c.langs for c in as_field] == [("de",)]
    with pytest.raises(ConfigError, match="grid run #1: give `lang` or `langs`, not both"):
        expand_grid({"runs": [{"metric": "bleu", "lang": "de", "langs": "nl"}]})


def test_options_are_given_by_key_and_read_as_attributes():
    config = ScoringConfig("bertscore", layer=9, idf=True, model=None)
    assert config.options == (("idf", True), ("layer", 9))  # sorted; None is unset
    assert config == ScoringConfig("bertscore", options=(("layer", 9), ("idf", True)))
    assert (config.layer, config.idf, config.rescale, config.bleu_tokenize) == (9, True, None, None)
    assert replace(config, layer=3).layer == 3 and replace(config, layer=3).idf is True
    with pytest.raises(AttributeError, match="no field or option 'colour'"):
        config.colour  # noqa: B018
    with pytest.raises(ConfigError, match=r"unknown option\(s\) colour; known: .*bleu_tokenize"):
        ScoringConfig("bleu", colour="red")


def test_validated_fills_the_metrics_defaults_and_normalises():
    config = ScoringConfig("Bert-Score", device="cpu", backend="torch", langs=(" PL", "el", ""))
    done = config.validated()
    assert (done.metric, done.langs) == ("bertscore", ("el", "pl"))
    assert dict(done.options) == {"model": "intfloat/multilingual-e5-small", "dtype": "float32",
                                  "backend": "torch", "idf": False, "rescale": "none"}
    assert done.validated() == done  # idempotent
    assert ScoringConfig("lmscore", device="cpu").validated().model == \
        "HuggingFaceTB/SmolLM2-135M-Instruct"
    with pytest.raises(ConfigError, match="--limit must be at least 1"):
        ScoringConfig("bleu", limit=0).validated()
    with pytest.raises(ConfigError, match="--batch-size must be at least 1"):
        ScoringConfig("bleu", batch_size=0).validated()


def test_configs_cross_process_boundaries_whole():
    """Executors pickle configurations (process pools, Ray) and key caches on them."""
    config = ScoringConfig("bertscore", layer=9, idf=True, device="cpu",
                           backend="torch").validated()
    for twin in (pickle.loads(pickle.dumps(config)), copy.deepcopy(config)):
        assert twin == config and hash(twin) == hash(config)
        assert twin.signature() == config.signature() and twin.layer == 9
    assert len({config, ScoringConfig("bertscore", layer=9, idf=True, device="cpu",
                                      backend="torch").validated()}) == 1


def test_library_versions_follow_the_backend():
    torch_run = ScoringConfig("bertscore", device="cpu", backend="torch").validated()
    onnx_run = replace(torch_run, backend="onnx").validated()
    assert "onnxruntime" not in torch_run.library_versions()
    assert "onnxruntime" in onnx_run.library_versions()
    assert set(ScoringConfig("bleu").validated().library_versions()) >= {"sacrebleu", "nltk"}


def test_grid_option_keys_and_refusals():
    configs = expand_grid({"defaults": {"backend": "torch", "device": "cpu"},
                           "runs": [{"metric": "bleu", "bleu_tokenize": ["comment", "13a"]},
                                    {"metric": "bertscore", "idf": [False, True]}]})
    assert [c.bleu_tokenize for c in configs[:2]] == ["comment", "13a"]
    assert [c.idf for c in configs[2:]] == [False, True]
    with pytest.raises(ConfigError, match=r"grid run #1 \(.*\): --idf applies to bertscore only"):
        expand_grid({"runs": [{"metric": "chrf", "idf": True}]})
    with pytest.raises(ConfigError, match="grid run #1: unknown field.*known: metric, context.*"
                                          "bleu_tokenize"):
        expand_grid({"runs": [{"metric": "chrf", "chrf_tokenise": "none"}]})
    with pytest.raises(ConfigError, match="grid run #2 names no metric"):
        expand_grid({"runs": [{"metric": "chrf"}, {"noise": "uniform"}]})
    with pytest.raises(ConfigError, match="a grid file is a mapping with a `runs:` list"):
        expand_grid({"run": []})


def test_load_grid_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read grid file .*missing.yaml"):
        load_grid(str(tmp_path / "missing.yaml"))


def test_an_option_may_not_shadow_a_shared_field(monkeypatch):
    class Seeded(LexicalMetric):
        name = "seeded"
        options = (MetricOption("seed", 0, type=int, prefix=False),)

    monkeypatch.setitem(METRICS, "seeded", Seeded())
    with pytest.raises(TypeError, match="metric option.*seed clash with ScoringConfig's own"):
        option_keys()
