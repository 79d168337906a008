"""Encoder backends: ONNX Runtime scores like torch on every context variant, is exported once
into the model cache, falls back to torch when the export fails, and is named in signatures."""
from __future__ import annotations

import json
import logging
import sys
from dataclasses import replace

import pytest

from metrics.config import ConfigError, ScoringConfig
from metrics.context import build_segment, encode_segment
from metrics.encoders import EXPORT_MANIFEST, ONNX_OPSET, BackendError, resolve_backend, weights_key

TOLERANCE = 1e-4  # the exactness bar for F
E5_SMALL_ID = "intfloat/multilingual-e5-small"
FILES = [  # (lang, file content, the comment in it, predictions)
    ("zh", "def total(items):\n    # 计算所有商品的总价\n    return sum(i.price for i in items)\n",
     "# 计算所有商品的总价", ["# 计算商品总价", "# 返回列表"]),
    ("el", "def mean(xs):\n    # Υπολογίζει τον μέσο όρο της λίστας\n    return sum(xs) / len(xs)\n",
     "# Υπολογίζει τον μέσο όρο της λίστας", ["# Υπολογίζει τον μέσο όρο", "# Επιστρέφει"]),
    ("nl", "def gemiddelde(waarden):\n    # Bereken het gemiddelde van de waarden\n"
           "    return sum(waarden) / len(waarden)\n",
     "# Bereken het gemiddelde van de waarden", ["# Bereken het gemiddelde"]),
]


def _pairs(context: str):
    """(predictions, references) as segments of one context variant: three small files, and
    a long file whose full context fills the model's whole window."""
    files = list(FILES)
    before = "".join(f"total_{i} = compute(values[{i}], limit={i * 7})\n" for i in range(300))
    after = "".join(f"result_{i} = total_{i} * {i}\n" for i in range(200))
    comment = "# Oblicza sumę kontrolną każdego rekordu przed zapisem"
    files.append(("pl", before + comment + "\n" + after, comment,
                  ["# Oblicza sumę kontrolną rekordu", "# Zapisuje rekord"]))
    preds, refs = [], []
    for lang, content, ref, predictions in files:
        start = content.index(ref)
        span = (start, start + len(ref))
        for pred in predictions:
            preds.append(build_segment(pred, context, lang, content, span))
            refs.append(build_segment(ref, context, lang, content, span))
    return preds, refs


@pytest.mark.slow
@pytest.mark.parametrize("context", ["none", "minimal", "full"])
def test_onnx_scores_equal_torch_on_every_context_variant(e5_scorer, e5_onnx_scorer, context):
    preds, refs = _pairs(context)
    if context == "full":  # the long file really fills the window
        longest = max(len(encode_segment(e5_scorer.tokenizer, s, e5_scorer.max_tokens).input_ids)
                      for s in refs)
        assert longest == e5_scorer.max_tokens == 512
    for scorer in (e5_scorer, e5_onnx_scorer):
        scorer.clear_cache()
    match_special = context == "none"
    before = e5_onnx_scorer.work["texts"]
    torch_scores = e5_scorer.score_segments(preds, refs, match_special=match_special)
    onnx_scores = e5_onnx_scorer.score_segments(preds, refs, match_special=match_special)
    assert e5_onnx_scorer.work["texts"] > before  # the ONNX session encoded them
    for a, b in zip(torch_scores, onnx_scores):
        assert a.error is None and b.error is None
        assert abs(a.f - b.f) <= TOLERANCE
        assert abs(a.precision - b.precision) <= TOLERANCE
        assert abs(a.recall - b.recall) <= TOLERANCE
        assert a.details == b.details
    # only the comment's tokens are scored, the same ones in both backends
    for a, b in zip(e5_scorer.embed(preds + refs, match_special),
                    e5_onnx_scorer.embed(preds + refs, match_special)):
        assert a.token_ids == b.token_ids
        assert a.vectors.shape == b.vectors.shape and a.specials.shape == b.specials.shape
        assert float((a.vectors - b.vectors).abs().max()) <= TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("context", ["none", "full"])
def test_openvino_scores_equal_torch(e5_small_encoder, e5_scorer, context):
    """OpenVINO compiles the same ONNX export (issue 27): F within 1e-4 of torch, and the
    signature names the backend and its version."""
    pytest.importorskip("openvino")
    from metrics.bertscore import BertScorer
    from metrics.config import ScoringConfig

    model, tokenizer = e5_small_encoder
    scorer = BertScorer(model, tokenizer, layer=9, model_name=E5_SMALL_ID, backend="openvino")
    assert scorer.backend == "openvino" and type(scorer.engine).__name__ == "OpenVinoEncoder"
    preds, refs = _pairs(context)
    e5_scorer.clear_cache()
    match_special = context == "none"
    expected = e5_scorer.score_segments(preds, refs, match_special=match_special)
    got = scorer.score_segments(preds, refs, match_special=match_special)
    assert scorer.work["texts"] > 0
    for a, b in zip(expected, got):
        assert b.error is None and abs(a.f - b.f) <= TOLERANCE
        assert abs(a.precision - b.precision) <= TOLERANCE and a.details == b.details
    signature = ScoringConfig("bertscore", device="cpu", backend="openvino").validated().signature()
    assert "|backend:openvino|" in signature and ",openvino-20" in signature


@pytest.mark.slow
def test_export_is_made_once_and_reused(e5_small_encoder, e5_onnx_scorer):
    from metrics.bertscore import BertScorer, truncate_to_layer

    model, tokenizer = e5_small_encoder
    path = e5_onnx_scorer.engine.path
    manifest = json.loads((path.parent / EXPORT_MANIFEST).read_text(encoding="utf-8"))
    assert (manifest["model"], manifest["layer"], manifest["opset"]) == (E5_SMALL_ID, 9,
                                                                          ONNX_OPSET)
    assert manifest["key"] in path.parent.name and "onnx" in manifest["versions"]
    stamp = path.stat().st_mtime_ns
    again = BertScorer(model, tokenizer, layer=9, model_name=E5_SMALL_ID, backend="onnx")
    assert again.backend == "onnx" and again.engine.path == path
    assert path.stat().st_mtime_ns == stamp  # reused, not exported again
    # another layer (other weights in the graph) is another export
    assert weights_key(truncate_to_layer(model, 8)[0], 8) != manifest["key"]


@pytest.mark.slow
def test_the_export_is_keyed_by_the_weights_not_the_path(e5_small_encoder, e5_onnx_scorer):
    """The same weights reached by another path (a local folder, a copy) find the same export;
    one changed weight makes another."""
    import copy

    import torch

    from metrics.bertscore import BertScorer, truncate_to_layer

    model, tokenizer = e5_small_encoder
    path = e5_onnx_scorer.engine.path
    elsewhere = copy.deepcopy(model)
    elsewhere.config._name_or_path = "/data/checkpoints/my-e5-copy"
    stamp = path.stat().st_mtime_ns
    again = BertScorer(elsewhere, tokenizer, layer=9, model_name="/data/checkpoints/my-e5-copy",
                       backend="onnx")
    assert again.engine.path == path and path.stat().st_mtime_ns == stamp
    key = weights_key(truncate_to_layer(elsewhere, 9)[0], 9)
    assert path.parent.name == f"layer9-{key}"
    with torch.no_grad():
        elsewhere.embeddings.word_embeddings.weight[7, 3] += 1e-3
    assert weights_key(truncate_to_layer(elsewhere, 9)[0], 9) != key


@pytest.mark.slow
def test_failed_export_falls_back_to_torch(e5_small_encoder, e5_scorer, tmp_path, monkeypatch,
                                           caplog):
    from metrics.bertscore import BertScorer

    model, tokenizer = e5_small_encoder
    blocker = tmp_path / "a-file-not-a-folder"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("NLCE_CACHE_DIR", str(blocker))  # the export cannot be written there
    with caplog.at_level(logging.WARNING, logger="metrics.bertscore"):
        scorer = BertScorer(model, tokenizer, layer=9, model_name=E5_SMALL_ID, backend="onnx")
    assert scorer.backend == "torch" and scorer.signature_parts()["backend"] == "torch"
    warnings = [r.getMessage() for r in caplog.records if r.name == "metrics.bertscore"]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert "ONNX backend" in warnings[0] and "encoding with torch" in warnings[0]
    preds, refs = ["Zwraca sumę listy"], ["Zwraca sumę elementów listy"]
    assert scorer.score(preds, refs)[0].f == e5_scorer.score(preds, refs)[0].f


def test_default_backend_and_clear_refusals():
    assert resolve_backend("cpu", "float32") == "openvino"  # in the default install
    assert resolve_backend("cpu", "bfloat16") == "torch"
    assert resolve_backend("cuda", "float16") == "torch"
    with pytest.raises(BackendError, match="CPU only"):
        resolve_backend("cuda", "float16", "onnx")
    with pytest.raises(BackendError, match="float32 only"):
        resolve_backend("cpu", "bfloat16", "onnx")
    with pytest.raises(ConfigError,
                       match="--backend must be one of torch, onnx, openvino, not 'tvm'"):
        ScoringConfig(metric="bertscore", device="cpu", backend="tvm").validated()
    with pytest.raises(ConfigError, match="--backend applies to bertscore only"):
        ScoringConfig(metric="lmscore", device="cpu", backend="onnx").validated()


def test_without_openvino_the_default_is_onnx_and_without_both_torch_logged(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "openvino", None)  # as if it were not installed
    assert ScoringConfig(metric="bertscore", device="cpu").validated().backend == "onnx"
    with pytest.raises(ConfigError, match=r"needs openvino: pip install onnx openvino \(part of "
                                          r"the default install\)"):
        ScoringConfig(metric="bertscore", device="cpu", backend="openvino").validated()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with caplog.at_level(logging.INFO, logger="metrics.encoders"):
        config = ScoringConfig(metric="bertscore", device="cpu").validated()
    assert config.backend == "torch" and "backend" not in config.signature()
    assert "neither openvino nor onnxruntime is installed" in caplog.text
    with pytest.raises(ConfigError, match=r"needs onnxruntime: pip install 'nlcomment-eval\[onnx\]'"):
        ScoringConfig(metric="bertscore", device="cpu", backend="onnx").validated()


def test_torch_signature_is_unchanged_and_onnx_is_named():
    from metrics.core import version as _version

    torch_sig = ScoringConfig(metric="bertscore", layer=9, device="cpu",
                              backend="torch").validated().signature()
    assert torch_sig == (  # the signature of torch runs stored before backends existed
        "metric:bertscore|model:intfloat/multilingual-e5-small|layer:9|"
        "tok:hf:intfloat/multilingual-e5-small|dtype:float32|idf:no|rescale:none|"
        f"versions:torch-{_version('torch')},transformers-{_version('transformers')}|"
        "ctx:none|noise:none|seed:0|runner:1")
    onnx = ScoringConfig(metric="bertscore", layer=9, device="cpu", backend="onnx").validated()
    assert onnx.signature() == torch_sig.replace(
        "|dtype:float32|", "|dtype:float32|backend:onnx|").replace(
        "|ctx:", f",onnxruntime-{_version('onnxruntime')}|ctx:")
    assert "onnxruntime" in onnx.library_versions()
    default = ScoringConfig(metric="bertscore", layer=9, device="cpu").validated()
    assert default == replace(onnx, backend="openvino")  # the CPU default
    assert "|backend:openvino|" in default.signature() and ",openvino-" in default.signature()


@pytest.mark.slow
def test_cli_backend_option_stores_both_runs(scoring_db, e5_small_encoder, capsys):
    from sqlalchemy import select

    from db import session_scope
    from db.models import MetricRun, MetricScore
    from metrics.score import main

    for backend in ("torch", "onnx"):
        assert main(["--metric", "bertscore", "--layer", "9", "--device", "cpu", "--backend",
                     backend, "--db", scoring_db, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("signature:") == 2 and out.count("backend:onnx") == 1
    with session_scope(scoring_db) as session:
        runs = {r.id: "onnx" if "backend:onnx" in r.signature else "torch"
                for r in session.execute(select(MetricRun)).scalars()}
        f = {}
        for s in session.execute(select(MetricScore)).scalars():
            f.setdefault(runs[s.run_id], {})[s.generation_id] = s.f
    assert len(runs) == 2 and f["torch"].keys() == f["onnx"].keys()
    scored = [g for g, v in f["torch"].items() if v is not None]
    assert len(scored) == 10  # the blank one scores the floor, 0, under both backends
    assert [g for g in scored if f["torch"][g] == 0.0] == [g for g in scored if f["onnx"][g] == 0.0]
    assert all(abs(f["torch"][g] - f["onnx"][g]) <= TOLERANCE for g in scored)


def test_grid_files_take_a_backend():
    from metrics.config import expand_grid

    configs = expand_grid({"runs": [{"metric": "bertscore", "device": "cpu", "layer": 9,
                                     "backend": ["torch", "onnx"]}]})
    assert [c.backend for c in configs] == ["torch", "onnx"]
    assert len({c.signature() for c in configs}) == 2
