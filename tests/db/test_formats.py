"""Pure helpers of db.formats: record checks, locating comments, release columns."""
from __future__ import annotations

import math

import numpy as np
import pytest

from db.formats import (
    STUDY_MODELS,
    FormatError,
    check_record,
    language_from_filename,
    locate_comment,
    parse_error_codes,
    programming_language_of,
    release_models,
)


def test_check_record_normalises_and_rejects():
    record = check_record({"type": "target", "dataset": "d", "repo": "r", "path": "p",
                           "span": (3, 9), "original_comment": "# x"})
    assert record["span"] == [3, 9]
    with pytest.raises(FormatError) as caught:
        check_record({"type": "file", "dataset": "d", "repo": "r", "path": "p"})
    assert caught.value.field == "natural_language" and "missing" in str(caught.value)
    with pytest.raises(FormatError, match="integer"):
        check_record({"type": "assignment", "dataset": "d", "repo": "r", "path": "p",
                      "span": [0, 1], "model": "m", "annotator": "a", "position": 1.5})
    with pytest.raises(FormatError, match="span or an original_comment"):
        check_record({"type": "target", "dataset": "d", "repo": "r", "path": "p"})
    with pytest.raises(FormatError, match="JSON object"):
        check_record(["type", "dataset"])


def test_locate_comment():
    content = "# a b c\nx = 1\n# a b c\ny = 2\n"
    assert locate_comment("x\n# once here\n", "# once here") == (2, 13)
    with pytest.raises(FormatError, match="not found"):
        locate_comment(content, "# nope")
    with pytest.raises(FormatError, match="ambiguous: occurs 2 times"):
        locate_comment(content, "# a b c")
    hint = "<fim_prefix># a b c\nx = 1\n# a<fim_suffix>\ny = 2\n<fim_middle>"
    assert locate_comment(content, "# a b c", [hint]) == (14, 21)


@pytest.mark.parametrize("value, codes", [
    ("MS-LT, SE-HA1", ["MS-LT", "SE-HA1"]),
    ("MS-LT;SE-HA1", ["MS-LT", "SE-HA1"]),
    (["MS-LT", "SE-HA1"], ["MS-LT", "SE-HA1"]),
    (np.array(["MS-LT"]), ["MS-LT"]),
    ("['MS-LT', 'SE-HA1']", ["MS-LT", "SE-HA1"]),
    ("None", []), (None, []), ("", []), ([], []), (math.nan, []), (["None"], []),
])
def test_parse_error_codes(value, codes):
    assert parse_error_codes(value, "error_codes_m") == codes


def test_parse_error_codes_rejects_other_types():
    with pytest.raises(FormatError) as caught:
        parse_error_codes(42, "error_codes_m")
    assert caught.value.field == "error_codes_m"


def test_release_names():
    assert language_from_filename("data/Chinese.parquet") == "zh"
    assert language_from_filename("greek_test.jsonl") == "el"
    assert language_from_filename("pl.parquet") == "pl"
    with pytest.raises(FormatError, match="more than one"):
        language_from_filename("dutch-polish.jsonl")
    assert programming_language_of("src/App.JAVA") == "java"
    columns = ["file_id", "content"] + [f"{p}{m}" for m in STUDY_MODELS
                                        for p in ("masked_data_", "predict_",
                                                  "predicted_comment_", "expert_accuracy_",
                                                  "error_codes_")]
    assert release_models(columns) == list(STUDY_MODELS)
