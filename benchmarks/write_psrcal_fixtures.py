"""Write the outputs of the paper-000 authors' calibration code (psrcal) as test fixtures.

``pipeline/authors_code.py`` redoes in numpy what psrcal 1.0 computes (float32 L-BFGS affine fits,
histogram binning, ECE bins); ``tests/pipeline/test_authors_code.py`` checks it against these stored
outputs, so CI needs neither torch nor psrcal. Inputs are regenerated from the seeds stored beside
the outputs.

Run it where psrcal and a CPU torch are installed (``pip install torch==2.13.0 psrcal``)::

    python benchmarks/write_psrcal_fixtures.py tests/fixtures/peers/psrcal.json
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np

CASES = [  # seed, n, K, logit scale
    (0, 400, 2, 3.0),
    (1, 1000, 3, 1.5),
    (2, 2000, 10, 0.7),
]


def case_inputs(seed: int, n: int, k: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Float32 log-posteriors of scaled random logits, and labels drawn from the unscaled ones."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k))
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    z = scale * logits
    shift = z.max(axis=1, keepdims=True)
    logp = z - shift - np.log(np.exp(z - shift).sum(axis=1, keepdims=True))
    return logp.astype(np.float32), labels.astype(np.int64)


def main(out: str) -> None:
    import torch
    from psrcal import losses
    from psrcal.calibration import AffineCalLogLoss, HistogramBinningCal

    cases = []
    for seed, n, k, scale in CASES:
        logp, labels = case_inputs(seed, n, k, scale)
        x, y = torch.as_tensor(logp), torch.as_tensor(labels)
        record = {"seed": seed, "n": n, "k": k, "scale": scale}
        for name, bias in (("affine", True), ("temperature", False)):
            model = AffineCalLogLoss(x, y, bias=bias)
            model.train()
            record[name] = {
                "params": [float(v) for v in model.get_paramvec()],
                "logp_first_rows": model.calibrate(x[:5]).detach().numpy().astype(float).tolist(),
            }
        record["ece_top_label"] = float(losses.ECE(x, y, 15))
        if k == 2:
            record["ece_binary"] = float(losses.ECEbin(x, y, 15))
            hist = HistogramBinningCal(x, y, M=10)
            hist.train()
            record["histogram_p1"] = torch.exp(hist.calibrate(x)[:, 1]).numpy().astype(float).tolist()
        cases.append(record)
    peer = {"peer": "psrcal", "version": version("psrcal"), "torch": version("torch"), "cases": cases}
    Path(out).write_text(json.dumps(peer, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
