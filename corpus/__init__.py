"""corpus: from source files to FIM-generated comments (the study's sections 4.2 and 4.3).

- `corpus.comments`: comments with exact spans through Pygments lexers;
- `corpus.langid`, `corpus.filters`, `corpus.tokens`, `corpus.dedup`: the selection's parts;
- `corpus.select`: the selection as data, with a report of what every filter removed;
- `corpus.extract`: CLI, files into Dataset / SourceFile / Target rows;
- `corpus.fim`: FIM layouts per model family and the language prime;
- `corpus.cutting`: the predicted comment out of raw output;
- `corpus.backends`, `corpus.generate`: transformers / OpenAI-compatible generation, CLI.
"""
