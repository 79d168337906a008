"""metrics: lexical and neural metrics, context variants, noise controls, the scoring runner.

Nothing heavy is imported here (``python -m metrics.align`` must start fast); import the module
you need: ``metrics.tokenize``, ``metrics.lexical``, ``metrics.bertscore``, ``metrics.likelihood``,
``metrics.context``, ``metrics.noise``, ``metrics.runner`` / ``metrics.score`` (CLI and API),
``metrics.hub`` (offline model resolution), ``metrics.align`` (agreement with humans).
"""
