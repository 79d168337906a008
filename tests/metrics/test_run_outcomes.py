"""Runs that score nothing fail loudly, and languages outside the study's five (issue 12)."""
from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import select

from metrics.config import ConfigError, ScoringConfig
from metrics.score import main
from testing.cli import as_command


def _add_target(url, lang: str, content: str, comment: str, predictions=("# Gibt zurück",)):
    """One file, one target (the comment inside it), a generation per prediction."""
    from db import session_scope
    from db.models import Dataset, Generation, SourceFile, Target

    with session_scope(url) as session:
        dataset = session.execute(select(Dataset).where(Dataset.name == "outcomes")
                                  ).scalar_one_or_none()
        if dataset is None:
            dataset = Dataset(name="outcomes")
            session.add(dataset)
            session.flush()
        path = f"f{hashlib.sha256(content.encode()).hexdigest()[:8]}.py"
        f = SourceFile(dataset_id=dataset.id, natural_language=lang, programming_language="py",
                       repo="test", path=path, content=content,
                       content_sha256=hashlib.sha256(content.encode()).hexdigest())
        session.add(f)
        session.flush()
        start = content.index(comment)
        t = Target(source_file_id=f.id, span_start=start, span_end=start + len(comment),
                   original_comment=comment, comment_kind="line")
        session.add(t)
        session.flush()
        for k, prediction in enumerate(predictions):
            session.add(Generation(target_id=t.id, model=f"model-{k}",
                                   predicted_comment=prediction))


def test_targeted_noise_without_context_fails_naming_the_fix(db_url, capsys):
    for comment in ("# Return the sum of the list", "# Sort the values in place"):
        _add_target(db_url, "en", comment, comment)  # the file is the comment: no context
    status = main(["--metric", "bleu", "--noise", "targeted", "--db", db_url, "--no-progress"])
    out, err = capsys.readouterr()
    assert "2 selected" in out and "0 scored" in out
    assert status == 1
    assert "nothing scored" in err and "none outside the comment" in err
    assert "--noise uniform" in err  # what to do instead


def test_a_run_of_invalid_language_codes_fails_suggesting_the_code(db_url, capsys):
    _add_target(db_url, "german", "x = 1\n# Gibt die Summe zurück\n", "# Gibt die Summe zurück")
    status = main(["--metric", "chrf", "--db", db_url, "--no-progress"])
    err = capsys.readouterr().err
    assert status == 1
    assert "nothing scored" in err and "'german' is not a language code; did you mean 'de'" in err


def test_nothing_selected_is_a_failure(db_url, capsys):
    _add_target(db_url, "en", "x = 1\n# Return x\n", "# Return x")
    assert main(["--metric", "bleu", "--lang", "nl", "--db", db_url, "--no-progress"]) == 1
    assert "nothing selected" in capsys.readouterr().err
    # a re-run that finds everything stored did its job
    assert main(["--metric", "bleu", "--db", db_url, "--no-progress"]) == 0
    assert main(["--metric", "bleu", "--db", db_url, "--no-progress"]) == 0
    assert "1 already stored, 0 scored" in capsys.readouterr().out


def test_languages_outside_the_five_are_scored_with_a_warning(db_url, capsys):
    _add_target(db_url, "de", "x = 1\n# Gibt die Summe der Liste zurück\n",
                "# Gibt die Summe der Liste zurück", ("# Gibt die Summe zurück",))
    _add_target(db_url, "xx", "y = 2\n# Gibt y zurück\n", "# Gibt y zurück", ("# Gibt y",))
    assert main(["--metric", "rouge_l", "--db", db_url, "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "2 selected, 0 already stored, 2 scored, 1 errors" in out
    assert "tok:comment-intl-v1+zh,ja:comment-cjk-v1" in out  # de's tokenizer, in the signature
    assert "warning: language 'de' (German) is not one of the study's" in err
    assert "comment-intl-v1" in err.split("warning: language 'de'")[1].splitlines()[0]
    assert "'xx' is not a language code" in out  # the item's error example


def test_the_tokenizer_warning_comes_once_and_only_for_the_comment_tokenizer(db_url, capsys,
                                                                           tmp_path):
    _add_target(db_url, "de", "x = 1\n# Gibt die Summe der Liste zurück\n",
                "# Gibt die Summe der Liste zurück", ("# Gibt die Summe zurück",))
    grid = tmp_path / "grid.yaml"
    grid.write_text("runs:\n  - metric: [bleu, chrf]\n    noise: [none, uniform]\n",
                    encoding="utf-8")
    assert main(["--grid", str(grid), "--db", db_url, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: language 'de' (German)") == 1  # four configurations, one line
    # sacrebleu's own tokenizers are standard: nothing to check
    assert main(["--metric", "bleu", "--bleu-tokenize", "13a", "--db", db_url,
                 "--no-progress"]) == 0
    assert main(["--metric", "chrf", "--chrf-tokenize", "none", "--db", db_url,
                 "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_an_invalid_language_option_is_an_error_suggesting_the_code(db_url, capsys):
    with pytest.raises(ConfigError, match="--lang: 'german' is not a language code; did you "
                                          "mean 'de'"):
        ScoringConfig("bleu", langs=("german",)).validated()
    assert ScoringConfig("bleu", langs=("DE", "deu", "nl")).validated().langs == ("de", "nl")
    score = as_command(main, "python -m metrics.score")
    assert score(["--metric", "bleu", "--lang", "german", "--db", db_url]) == 2
    assert "did you mean 'de'" in capsys.readouterr().err


@pytest.mark.slow
def test_no_progress_silences_the_model_loading_bar(scoring_db):
    """A fresh process each (a model is loaded once per process); with the flag, no bar at all,
    without it the loading bar shows (so the check cannot pass by the bar being renamed)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    command = [sys.executable, "-m", "metrics.score", "--metric", "bertscore", "--layer", "2",
               "--device", "cpu", "--limit", "2", "--db", scoring_db]
    quiet = subprocess.run(command + ["--no-progress"], capture_output=True, text=True,
                           env=env, cwd=root, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    assert "2 scored" in quiet.stdout
    assert "it/s]" not in quiet.stderr and "Loading weights" not in quiet.stderr, quiet.stderr
    shown = subprocess.run(command + ["--lang", "el"], capture_output=True, text=True, env=env,
                           cwd=root, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert "Loading weights" in shown.stderr
