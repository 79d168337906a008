"""Programming languages the corpus can lex: names, file extensions and Pygments lexers."""
from __future__ import annotations

from pathlib import PurePath

from nlce.cli import InputError


class UnknownLanguageError(InputError):
    """A programming language (or file extension) that the corpus cannot lex."""


# name -> (Pygments lexer alias, file extensions)
PROGRAMMING_LANGUAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "python": ("python", (".py", ".pyw", ".pyi")),
    "java": ("java", (".java",)),
    "javascript": ("javascript", (".js", ".mjs", ".cjs", ".jsx")),
    "typescript": ("typescript", (".ts", ".tsx", ".mts", ".cts")),
    "c": ("c", (".c", ".h")),
    "cpp": ("cpp", (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp")),
    "csharp": ("csharp", (".cs",)),
    "go": ("go", (".go",)),
    "php": ("php", (".php", ".phtml")),
    "rust": ("rust", (".rs",)),
    "kotlin": ("kotlin", (".kt", ".kts")),
    "swift": ("swift", (".swift",)),
    "scala": ("scala", (".scala",)),
}

_BY_EXTENSION = {ext: name for name, (_, exts) in PROGRAMMING_LANGUAGES.items() for ext in exts}


def language_for_path(path: str | PurePath) -> str | None:
    """The programming language of a file name by its extension, or None when unknown."""
    return _BY_EXTENSION.get(PurePath(path).suffix.lower())


def lexer_name(language: str) -> str:
    try:
        return PROGRAMMING_LANGUAGES[language][0]
    except KeyError:
        known = ", ".join(sorted(PROGRAMMING_LANGUAGES))
        raise UnknownLanguageError(
            f"unknown programming language {language!r}; known: {known}") from None
