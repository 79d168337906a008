"""metrics/options.py: CLI flags, grid keys, checks and refusals made from the metric classes'
option declarations, and an added option that is one class edit."""
from __future__ import annotations

import pytest

from metrics import options
from metrics.config import ScoringConfig, expand_grid
from metrics.core import ConfigError, MetricOption, PairScore, ScoringItem, score_items
from metrics.lexical import LexicalMetric
from metrics.registry import METRICS
from metrics.score import build_parser

# Every metric flag `python -m metrics.score --help` listed before the options were declared on
# the classes (main 861848c), and the key each one sets.
HISTORICAL_FLAGS = {"--model": "model", "--layer": "layer", "--idf": "idf",
                    "--rescale": "rescale", "--bleu-tokenize": "bleu_tokenize",
                    "--chrf-tokenize": "chrf_tokenize", "--dtype": "dtype", "--backend": "backend"}


def _flags(parser) -> dict[str, str]:
    return {flag: action.dest for action in parser._actions for flag in action.option_strings}


def test_every_historical_flag_keeps_its_name_and_key():
    flags = _flags(build_parser())
    assert {flag: flags.get(flag) for flag in HISTORICAL_FLAGS} == HISTORICAL_FLAGS
    args = build_parser().parse_args(
        ["--metric", "bertscore", "--model", "m/x", "--layer", "9", "--idf", "--rescale", "corpus",
         "--dtype", "bfloat16", "--backend", "torch", "--bleu-tokenize", "13a",
         "--chrf-tokenize", "none"])
    assert options.from_args(args) == {
        "model": "m/x", "layer": 9, "idf": True, "rescale": "corpus", "dtype": "bfloat16",
        "backend": "torch", "bleu_tokenize": "13a", "chrf_tokenize": "none"}


def test_a_flag_not_given_sets_nothing():
    args = build_parser().parse_args(["--metric", "bleu"])
    assert options.from_args(args) == {}  # the metric's defaults (or a grid's) apply


def test_flags_are_grouped_by_the_metrics_that_take_them():
    groups = {group.title: [a.option_strings[0] for a in group._group_actions]
              for group in build_parser()._action_groups}
    assert groups["bleu options"] == ["--bleu-tokenize"]
    assert groups["chrf options"] == ["--chrf-tokenize"]
    assert groups["bertscore, bartscore, lmscore options"] == ["--model", "--dtype"]
    assert groups["bertscore options"] == ["--layer", "--backend", "--idf", "--rescale"]
    model_help = next(a.help for a in build_parser()._actions if a.dest == "model")
    for metric in ("bertscore", "bartscore", "lmscore"):  # each metric's own default
        assert METRICS[metric].option_values(ScoringConfig(metric))["model"] in model_help


def test_refusals_name_the_metrics_that_take_the_option():
    with pytest.raises(ConfigError, match=r"^--model applies to bertscore, bartscore, lmscore "
                                          r"only, not meteor$"):
        ScoringConfig("meteor", model="x").validated()
    with pytest.raises(ConfigError, match=r"^--idf applies to bertscore only, not lmscore$"):
        ScoringConfig("lmscore", idf=True, device="cpu").validated()
    with pytest.raises(ConfigError, match="^--backend applies to bertscore only, not chrf$"):
        ScoringConfig("chrf", backend="onnx").validated()


def test_inert_values_are_accepted_and_dropped():
    """Values that change nothing for a metric without the option: unset, the default every
    declaring metric shares, the option's `inert` values (a grid's defaults may name them)."""
    config = ScoringConfig("bleu", idf=False, rescale="none", backend="torch", dtype="float32",
                           chrf_tokenize="comment", layer=None).validated()
    assert config == ScoringConfig("bleu").validated()
    assert config.options == (("bleu_tokenize", "comment"),)
    assert ScoringConfig("lmscore", backend="torch", device="cpu").validated().backend is None


def test_values_are_checked_against_type_and_choices():
    with pytest.raises(ConfigError, match=r"^--layer must be an integer, not '9'$"):
        ScoringConfig("bertscore", layer="9", device="cpu").validated()
    with pytest.raises(ConfigError, match=r"^--idf must be true or false, not 1$"):
        ScoringConfig("bertscore", idf=1, device="cpu").validated()
    with pytest.raises(ConfigError, match=r"^--layer must be an integer, not True$"):
        ScoringConfig("bertscore", layer=True, device="cpu").validated()
    with pytest.raises(ConfigError, match=r"^--rescale must be one of none, package, corpus, "
                                          r"not 'base'$"):
        ScoringConfig("bertscore", rescale="base", device="cpu").validated()
    # a key several metrics share names the metric whose choices refused it
    with pytest.raises(ConfigError, match=r"^--dtype for lmscore must be one of float32, "
                                          r"not 'bfloat16'$"):
        ScoringConfig("lmscore", dtype="bfloat16", device="cpu").validated()


def test_shared_keys_must_agree(monkeypatch):
    class Other(LexicalMetric):
        name = "other"
        options = (MetricOption("model", 3, type=int, prefix=False, signature="own"),)

    monkeypatch.setitem(METRICS, "other", Other())
    with pytest.raises(TypeError, match="option model: other declares another type or help"):
        options.declared()


# ---------------------------------------------------------------- an added option

def _cased_overlap(prediction, reference, lang, case="lower"):
    fold = str.lower if case == "lower" else str
    hyp, ref = set(fold(prediction).split()), set(fold(reference).split())
    return PairScore(f=len(hyp & ref) / len(ref))


class CasedOverlap(LexicalMetric):
    """A throwaway metric: the whole of adding its `case` option is the `options` line below
    (and the pair function's keyword argument)."""

    name = "overlap"
    pair_function = _cased_overlap
    signature_function = staticmethod(lambda: "overlap-v1")
    options = (MetricOption("case", "lower", ("lower", "mixed"), help="fold case or not"),)


@pytest.fixture
def overlap(monkeypatch):
    monkeypatch.setitem(METRICS, CasedOverlap.name, CasedOverlap())


def test_an_added_option_is_one_class_edit(overlap, tmp_path):
    # the CLI flag, with its metric's prefix, in its metric's group
    parser = build_parser()
    assert _flags(parser)["--overlap-case"] == "overlap_case"
    args = parser.parse_args(["--metric", "overlap", "--overlap-case", "mixed"])
    assert options.from_args(args) == {"overlap_case": "mixed"}
    assert "fold case or not [lower | mixed, default lower]" in parser.format_help()
    # the grid key, expanded like any field
    configs = expand_grid({"runs": [{"metric": "overlap", "overlap_case": ["lower", "mixed"]}]})
    assert [c.overlap_case for c in configs] == ["lower", "mixed"]
    # the signature: unchanged at the default (runs stored before the option existed stay
    # valid), name:value otherwise
    lower, mixed = (c.signature() for c in configs)
    assert lower == "metric:overlap|overlap-v1|ctx:none|noise:none|seed:0|runner:1"
    assert mixed == "metric:overlap|overlap-v1|case:mixed|ctx:none|noise:none|seed:0|runner:1"
    # its checks, and the refusal by every other metric
    with pytest.raises(ConfigError, match="^--overlap-case must be one of lower, mixed, not 'up'$"):
        ScoringConfig("overlap", overlap_case="up").validated()
    with pytest.raises(ConfigError, match="^--overlap-case applies to overlap only, not bleu$"):
        ScoringConfig("bleu", overlap_case="mixed").validated()
    # and the scoring: the value reaches the pair function
    item = ScoringItem("generation", 1, 1, "Sum of X", "sum of x", "en")
    assert [s.f for s in score_items(configs[0], [item])] == [1.0]
    assert [s.f for s in score_items(configs[1], [item])] == [1 / 3]
