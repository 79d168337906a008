"""LLM-as-a-judge for generated code comments, in en, zh, nl, el and pl (the study's section 8).

- `judges.prompts`: pure prompt builders per strategy (standard, cot, rubric, hierarchical) and
  language, their output schemas and versions; the wording is data (judges/data/*.yaml, loaded
  and checked by `judges.i18n`); `judges.templates`: prompt variants from a file;
- `judges.order`: prediction order per target (fixed, shuffle, rotate) for position-bias control;
- `judges.parse` (codes: `judges.parse_codes`): the lenient, recording parser and the
  hierarchical merge;
- `judges.client`: OpenAI-compatible and local backends, retries; `judges.cache`: the response
  cache;
- `judges.runner` / `python -m judges.run`: judging the targets of a database, resumably;
- `judges.report` / `python -m judges.report`: failure rates and agreement with the humans;
- `judges.importer` / `python -m judges.importer`: judge results of the study's layout as runs;
- `judges.jury` / `python -m judges.jury`: several runs combined into one verdict per item, as a
  run of its own.
"""
