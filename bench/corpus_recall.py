"""File-level recall and precision of `corpus.extract`'s selection on a real repository.

    python bench/corpus_recall.py sample  REPO_DIR --lang zh --labels bench/corpus_labels/zh.json
    python bench/corpus_recall.py review  REPO_DIR --lang zh --labels bench/corpus_labels/zh.json
    python bench/corpus_recall.py measure REPO_DIR --lang zh --labels bench/corpus_labels/zh.json
    python bench/corpus_recall.py survey  ROOT --lang zh [--labels bench/corpus_labels/legacy-zh.json]

The labels file (written by hand after reading the files) holds the repository and commit, the
hand-checked sample of files (`files`: path -> true when the file has at least one comment in
`--lang` that explains something in prose, so it should give a target) and the checked targets
(`targets`: "path:line" -> true when the stored comment is a correct target: in the language,
prose not code, the whole comment). `review` prints, for each sampled file, its comments and the
target chosen today, so a person can fill in the labels; `measure` prints recall (sampled files
that should give a target and do; files dropped only by the context-window rule are counted apart),
precision (files that give a target and should; targets
checked correct) and every miss with the reason the selection gives. The selection runs on the
whole repository (de-duplication sees every file), with the default settings of
`python -m corpus.extract`, nothing written. Run it with PYTHONPATH at another checkout to
measure that code ("before").

`survey` runs the selection on each repository folder under ROOT (one `corpus.extract` per
repository) and prints, per repository and in total: files read, the encodings they were read
in, files skipped, files dropped as generated, files that give a target, targets; with
`--labels` (`targets`: "repo/path:line" -> whether it is a correct target) also how many targets
were checked correct or wrong, and every wrong or unchecked target (`--list` prints them all).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _select(root: Path, lang: str):
    """(selected targets by path, per-comment decisions by path, problems by path)."""
    from corpus.extract import discover, load_sources
    from corpus.langid import DEFAULT_CANDIDATES, make_detector
    from corpus.select import SelectionConfig, select_targets

    discovered = discover([root])
    try:
        sources, problems = load_sources(discovered, None, "", lang)
    except TypeError:  # older signature: (discovered, forced_language, repo)
        sources, problems = load_sources(discovered, None, "")
    candidates = DEFAULT_CANDIDATES if lang in DEFAULT_CANDIDATES else DEFAULT_CANDIDATES + (lang,)
    selected, report = select_targets(sources, lang, SelectionConfig(),
                                      detector=make_detector("lingua", candidates))
    prefix = len(str(root)) + 1
    targets = {item.source.key[prefix:]: item.targets for item in selected}
    decisions: dict[str, list[dict]] = {}
    for d in getattr(report, "decisions", []):
        decisions.setdefault(d["file"][prefix:], []).append(d)
    return targets, decisions, {k[prefix:]: v for k, v in problems}


def sample(root: Path, lang: str, labels_path: Path, n: int, seed: int, repo: str,
           commit: str) -> None:
    """A seeded sample of the files that have at least one comment -> a labels skeleton."""
    import random

    from corpus.comments import extract_comments
    from corpus.extract import discover
    from corpus.languages import language_for_path

    with_comments = []
    for file, rel in discover([root]).files:
        text = file.read_bytes().decode("utf-8", errors="replace")
        if extract_comments(text, language_for_path(file)):
            with_comments.append(rel)
    chosen = sorted(random.Random(seed).sample(with_comments, min(n, len(with_comments))))
    labels_path.write_text(json.dumps({"repo": repo, "commit": commit, "language": lang,
                                       "files_with_comments": len(with_comments),
                                       "files": {p: None for p in chosen}, "targets": {}},
                                      indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def review(root: Path, lang: str, labels: dict) -> None:
    from corpus.comments import extract_comments
    from corpus.languages import language_for_path

    targets, decisions, problems = _select(root, lang)
    for path in labels["files"]:
        print(f"=== {path}  should={labels['files'][path]}")
        if path in problems:
            print(f"  (skipped: {problems[path]})")
        file = root / path
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            print(f"  (unreadable: {error})")
            continue
        for d in decisions.get(path, []):
            print(f"  {str(d['line']):>4} {d['decision']:8} {d['reason']:22} {d['excerpt'][:110]}")
        if not decisions.get(path):
            for c in extract_comments(text, language_for_path(file)):
                print(f"  {c.line:>4} {' '.join(c.text.split())[:120]}")
        for t in targets.get(path, []):
            key = f"{path}:{t.line}"
            print(f"  TARGET {key} ok={labels.get('targets', {}).get(key)}: "
                  f"{' '.join(t.text.split())[:200]}")


def measure(root: Path, lang: str, labels: dict) -> dict:
    targets, decisions, problems = _select(root, lang)
    sample = labels["files"]
    gives = {p for p in sample if targets.get(p)}
    # a file dropped only because it does not fit the model's context window follows the
    # study's rule, not a bug: counted apart, out of the recall denominator
    window = {p for p, v in sample.items() if v and p not in gives and any(
        d["reason"] == "context_window" for d in decisions.get(p, []))}
    should = {p for p, v in sample.items() if v} - window
    checked = labels.get("targets", {})
    ok = unchecked = wrong = 0
    for path in gives:
        for t in targets[path]:
            verdict = checked.get(f"{path}:{t.line}")
            if verdict is None:
                unchecked += 1
            elif verdict:
                ok += 1
            else:
                wrong += 1
    result = {
        "language": lang, "repo": labels.get("repo"), "commit": labels.get("commit"),
        "sampled_files": len(sample), "should_give_target": len(should),
        "too_long_for_the_window": len(window),
        "give_target": len(gives), "should_and_give": len(should & gives),
        "recall": round(len(should & gives) / len(should), 4) if should else None,
        "file_precision": round(len(should & gives) / len(gives), 4) if gives else None,
        "targets_checked": ok + wrong, "targets_correct": ok, "targets_unchecked": unchecked,
        "target_precision": round(ok / (ok + wrong), 4) if ok + wrong else None,
        "missed": sorted(should - gives), "unexpected": sorted(gives - should),
        "too_long": sorted(window),
    }
    for path in result["missed"]:
        reasons = sorted({d["reason"] for d in decisions.get(path, [])})
        print(f"missed {path}: {problems.get(path) or ', '.join(reasons) or 'no comments'}",
              file=sys.stderr)
    for path in result["unexpected"]:
        print(f"unexpected {path}: {[t.line for t in targets[path]]}", file=sys.stderr)
    return result


def survey(root: Path, lang: str, labels: dict | None, show_all: bool = False) -> dict:
    from collections import Counter

    checked = (labels or {}).get("targets", {})
    total: Counter = Counter()
    encodings: Counter = Counter()
    rows = []
    for repo in sorted(p for p in root.iterdir() if p.is_dir()):
        targets, decisions, problems = _select(repo, lang)
        read = Counter(d.get("encoding") for d in _encodings(repo, lang))
        encodings.update(read)
        row = Counter(files=sum(read.values()), skipped=len(problems),
                      generated=sum(1 for ds in decisions.values() for d in ds
                                    if d["reason"] == "generated_file"),
                      with_target=len(targets), targets=sum(map(len, targets.values())))
        for path, comments in sorted(targets.items()):
            for t in comments:
                key = f"{repo.name}/{path}:{t.line}"
                verdict = checked.get(key)
                row["correct" if verdict else "wrong" if verdict is False else "unchecked"] += 1
                if show_all or verdict is not True:
                    mark = {True: "ok", False: "WRONG", None: "?"}[verdict]
                    print(f"{mark}\t{key}\t{' '.join(t.text.split())[:100]}", file=sys.stderr)
        total.update(row)
        rows.append({"repo": repo.name, **row, "encodings": dict(read)})
    return {"language": lang, "repos": rows, "total": dict(total),
            "encodings": dict(encodings.most_common())}


def _encodings(repo: Path, lang: str) -> list[dict]:
    """Each readable file's encoding, as `corpus.extract` reads it."""
    from corpus.extract import discover, load_sources

    sources, _ = load_sources(discover([repo]), None, "", lang)
    return [{"file": s.key, "encoding": s.encoding} for s in sources]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("command", choices=["sample", "review", "measure", "survey"])
    p.add_argument("root", type=Path, help="the repository's files (git archive | tar -x)")
    p.add_argument("--lang", required=True)
    p.add_argument("--labels", type=Path, help="required but for survey")
    p.add_argument("--list", action="store_true", help="survey: print every target")
    p.add_argument("--n", type=int, default=40, help="sample: how many files")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repo", default="", help="sample: owner/name for the labels file")
    p.add_argument("--commit", default="")
    args = p.parse_args(argv)
    if args.command == "survey":
        labels = json.loads(args.labels.read_text(encoding="utf-8")) if args.labels else None
        print(json.dumps(survey(args.root, args.lang, labels, args.list), ensure_ascii=False,
                         indent=1))
        return 0
    if args.labels is None:
        p.error("--labels is required")
    if args.command == "sample":
        sample(args.root, args.lang, args.labels, args.n, args.seed, args.repo, args.commit)
        return 0
    labels = json.loads(args.labels.read_text(encoding="utf-8"))
    if args.command == "review":
        review(args.root, args.lang, labels)
    else:
        print(json.dumps(measure(args.root, args.lang, labels), ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/, not installed
    from testing.bench import run

    sys.exit(run(main, "bench/corpus_recall.py"))
