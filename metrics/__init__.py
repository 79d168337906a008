"""metrics: lexical and neural metrics, context variants, noise controls, the scoring runner.

The path of one configuration, each step calling only the next ones, never back:

1. `metrics.score` (the CLI) reads flags or a grid file into `metrics.config.ScoringConfig`;
   ``validated()`` checks the shared fields, has `metrics.options` check the metric's options
   (declared on its class; the CLI flags and grid keys come from the same declarations) and
   asks the metric's class to check the rest.
2. `metrics.registry.METRICS` holds one class per metric (`metrics.lexical`: bleu, rouge_l,
   meteor, chrf; `metrics.neural`: bertscore, bartscore, lmscore), all implementing
   `metrics.core.Metric`: options, validate, signature, prepare (load once), prepare_run,
   score_batch.
3. `metrics.runner.score_configuration` runs it: `metrics.store` selects the generations and
   gets or creates the MetricRun, `metrics.noise` makes missing noise samples, the chunks go
   through `metrics.parallel` (this process, a process pool or Ray) to `metrics.core.score_chunk`,
   and `metrics.store` writes each chunk's scores.

The computations themselves: `metrics.tokenize`, `metrics.lexical`, `metrics.bertscore`,
`metrics.likelihood`, `metrics.context`, `metrics.noise`. Agreement with the humans is its own
stage, the top-level `align` package (``python -m metrics.align`` is an alias of
``python -m align``). Models load through the top-level `models` package. Nothing heavy is
imported here: import the module you need.
"""
