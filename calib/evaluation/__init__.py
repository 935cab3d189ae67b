"""One evaluation engine: the metric registry (:mod:`calib.evaluation.metrics`), the settings
(:mod:`calib.evaluation.settings`), passes into states that merge (:mod:`calib.evaluation.passes`) and
the evaluation itself, in memory or out of core, overall and per subgroup (:mod:`calib.evaluation.engine`)."""
