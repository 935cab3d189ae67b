"""One evaluation engine: the metric registry (:mod:`calib.evaluation.metrics`), the settings
(:mod:`calib.evaluation.settings`), passes into states that merge (:mod:`calib.evaluation.passes`,
:mod:`calib.evaluation.data_pass`), the values and intervals (:mod:`calib.evaluation.intervals`), the
calibrators' evidence (:mod:`calib.evaluation.evidence`), the CORP lens (:mod:`calib.evaluation.lens`),
the subgroups (:mod:`calib.evaluation.subgroups`), what a weighted evaluation says of its sample weights
(:mod:`calib.evaluation.weighting`), progress (:mod:`calib.evaluation.progress`), what an
evaluation returns (:mod:`calib.evaluation.results`), the evaluation itself, in memory or out of core
(:mod:`calib.evaluation.engine`), partition by partition (:mod:`calib.evaluation.partitioned`), and where
it runs (:mod:`calib.evaluation.router`)."""
