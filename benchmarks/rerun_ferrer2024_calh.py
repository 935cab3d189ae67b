"""Rerun the authors' own code for the calh rows of Ferrer & Ramos (2024), Table 2, and record its output.

The calh rows (histogram binning with 10 bins, cross-validated on the test set) are the one part of
Table 2 whose folds the authors drew from NumPy's global random stream
(``calibration_with_crossval(..., calmethod=HistogramBinningCal, calparams={'M': 10})`` without a
seed, in notebooks/evaluating_posteriors_paper/section_3.5_metrics_on_real_data.ipynb). This script
runs that notebook's Table 2 loop, as written, for the binary systems: their code at the pinned commit
(the ``expected_cost`` package of a checkout of github.com/luferrer/expected_cost at 96253fe4), psrcal
and torch from PyPI, the published scores from the mirror. The state of the global stream at the
calh split is the notebook's: ``get_llks_for_multi_classif_task`` seeds it with 0 at every load and
the calibrations before it (seeded) do not draw from it.

Its output, ``configs/reference/ferrer2024_table2_calh_rerun.csv``, is the record the report points
to: it shows that the authors' code, rerun, does not land on the printed calh cells either, which is
why calh is judged as a Monte-Carlo cell over fold seeds (``pipeline/papers/ferrer2024.py``). Not run
by CI (it needs torch); run it where the authors' code can be installed::

    python -m venv /tmp/authors && /tmp/authors/bin/pip install torch==2.13.0 psrcal llreval scikit-learn
    git clone https://github.com/luferrer/expected_cost /tmp/expected_cost
    git -C /tmp/expected_cost checkout 96253fe48a4ab0f5934b252fb38351bd1838aa14
    /tmp/authors/bin/python benchmarks/rerun_ferrer2024_calh.py /tmp/expected_cost ../shared/real_posteriors
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "configs" / "reference" / "ferrer2024_table2_calh_rerun.csv"
COMMIT = "96253fe48a4ab0f5934b252fb38351bd1838aa14"
# The notebook's binary systems (K = 2), with its names and the mirror's folders.
SYSTEMS = {
    "SST2 GPT2-4sh": "sst2_gpt2_4shot",
    "SST2 GPT2-0sh": "sst2_gpt2",
    "FVCAUS XvPLDA": "fvcaus_plda",
    "CIFAR-1vsO Resnet-20": ("cifar100_resnet-20", 1),
    "CIFAR-2vsO Resnet-20": ("cifar100_resnet-20", 2),
    "PNEUM Resnet-50": "pneumoniamnist_resnet50",
    "ADRENAL Resnet-50": "adrenalmnist_resnet50",
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("authors_code", type=Path, help=f"a checkout of luferrer/expected_cost at {COMMIT[:8]}")
    parser.add_argument("mirror", type=Path, help="the real-posteriors mirror (its ferrer2024/ folder is read)")
    args = parser.parse_args(argv)
    head = subprocess.run(["git", "-C", str(args.authors_code), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.stdout.strip() != COMMIT:
        raise SystemExit(f"{args.authors_code} is at {head.stdout.strip() or '?'}, not {COMMIT}: check it out first")
    sys.path.insert(0, str(args.authors_code))
    from expected_cost import ec
    from expected_cost.calibration import calibration_with_crossval
    from expected_cost.data import get_llks_for_multi_classif_task
    from expected_cost.psrcal_wrappers import ECE, CalLoss, ECEbin, LogLoss
    from psrcal.calibration import HistogramBinningCal

    data_dir = f"{args.mirror / 'ferrer2024'}/"
    lines = ["system,posteriors,NRisk-01,NRisk-01r,NRisk-imb,NCE,RCL-CE-Dxv,ECEmc,ECEbin"]
    for name, info in SYSTEMS.items():
        folder, one_vs_other = info if isinstance(info, tuple) else (info, None)
        targets, logpost_raw, _ = get_llks_for_multi_classif_task(
            data_dir + folder + "/", logpost=True, one_vs_other=one_vs_other
        )
        k = logpost_raw.shape[1]
        # As the notebook: the seeded calibrations first (they do not draw from the global stream), then calh.
        calibration_with_crossval(logpost_raw, targets, seed=0, calparams={"bias": False})
        calibration_with_crossval(logpost_raw, targets, seed=0, calparams={"bias": True})
        calh = calibration_with_crossval(logpost_raw, targets, calmethod=HistogramBinningCal, calparams={"M": 10})
        costs = [ec.CostMatrix.zero_one_costs(k), ec.CostMatrix.zero_one_costs(k, abstention_cost=0.1)]
        imbalanced = costs[0].get_matrix().copy()
        imbalanced[k - 1, :], imbalanced[k - 1, k - 1] = 10, 0
        costs.append(ec.CostMatrix(imbalanced))
        risks = []
        for cost in costs:
            decisions, _ = ec.bayes_decisions(calh, cost, score_type="log_posteriors")
            risks.append(ec.average_cost(targets, decisions, cost, adjusted=True))
        refit = calibration_with_crossval(calh, targets, seed=0, calparams={"bias": True})
        values = [*risks, LogLoss(calh, targets), CalLoss(LogLoss, calh, refit, targets), ECE(calh, targets)]
        values.append(ECEbin(calh, targets))
        lines.append(f"{name},calh," + ",".join(f"{float(v):.6g}" for v in values))
        print(lines[-1], file=sys.stderr, flush=True)
    versions = f"expected_cost {COMMIT}, psrcal {version('psrcal')}, torch {version('torch')}, numpy {np.__version__}"
    OUT.write_text("\n".join(lines) + "\n")
    OUT.with_suffix(".txt").write_text(
        f"Written by benchmarks/rerun_ferrer2024_calh.py with {versions}.\n"
        "The authors' notebook (section_3.5_metrics_on_real_data.ipynb), rerun as written for the binary systems.\n"
    )
    print(f"wrote {OUT} ({versions})")


if __name__ == "__main__":
    main()
