"""The entropic calibration difference (ECD) of "An entropic metric" (2025), the binary-only version 1.

ECD = (1/N) sum_i [NLL_i - H_i]: the mean negative log-likelihood of the true label minus the mean
entropy of the prediction (eq. 8; eq. 12 for classes), natural log. Positive means over-confident,
negative under-confident; 0 means calibrated *or* maximally uncertain. Under calibration,
E[NLL_i - H_i | prediction] = 0 for every prediction, so the expectation is 0 whatever the
distribution of the predictions (given the prediction, the expected NLL of a label drawn from it is
its entropy).

For two classes with p = P(class 1) the summand is (p - y) logit(p) (eq. 15 simplified), computed
here from log-probabilities: y = 1 gives -p_0 (log p_1 - log p_0), y = 0 gives p_1 (log p_1 - log p_0),
so logits need no clipping and a prediction equal to its label contributes exactly 0. One datum's
value is bounded below by 1 - 1/p* = -0.27846 at p* = 0.78219 (p logit p = 1), and unbounded above.

Per bin (10 equal-width bins on the class-1 probability, [k/10, (k+1)/10) with 1 in the last) the
paper reports the plain mean of the summands; the count-weighted sum of the bin values is the
overall ECD for any partition. A Gaussian prediction N(mu, P) of a d-dimensional state gives
ECD = (NEES - d) / 2 per datum (the Gaussian entropy and log-density in eq. 8; the text keeps only
the conclusion of eqs. 9-11, ECD = 0 exactly when NEES = d).

scipy.optimize is imported inside the functions that use it: a command or job that never calls them starts
without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.calibration_errors.binning import equal_width_bin_ids
from calib.validation import CalibInputError, as_float_array, check_inputs, check_positive_int


def ecd_terms(scores, labels, *, kind: str) -> np.ndarray:
    """Per-datum NLL_i - H_i (eq. 12); the binary closed form (p - y) logit p for two classes.

    ``inf`` for a sample whose true class has probability 0.
    """
    logp, y = check_inputs(scores, labels, kind)
    probs = np.exp(logp)
    if logp.shape[1] == 2:
        logit = logp[:, 1] - logp[:, 0]
        weight = np.where(y == 1, -probs[:, 0], probs[:, 1])
        with np.errstate(invalid="ignore"):
            return np.where(weight == 0.0, 0.0, weight * logit)
    with np.errstate(invalid="ignore"):
        negative_entropy = np.sum(np.where(probs > 0, probs * logp, 0.0), axis=1)
    return negative_entropy - logp[np.arange(y.size), y]


def ecd(scores, labels, *, kind: str) -> float:
    """Entropic calibration difference (ECD): mean negative log-likelihood minus mean entropy.

    ECD = (1/N) sum_i [NLL_i - H_i], with NLL_i = -log q_{y_i}(x_i) the negative log-likelihood of
    the true label and H_i = -sum_k q_k(x_i) log q_k(x_i) the entropy of the prediction (natural
    log). For two classes with p = P(class 1) the summand is (p - y) logit(p), computed from the
    log-probabilities, so a prediction equal to its label contributes exactly 0. ECD > 0 means
    over-confident, ECD < 0 under-confident, and 0 calibrated *or* maximally uncertain; under
    calibration the expectation is 0 whatever the distribution of the predictions. One datum's
    value is at least 1 - 1/p* = -0.27846 (at p* = 0.78219) for two classes, lower for more
    (:func:`single_datum_bound`), and unbounded above. O(N K) time.

    Source: "An entropic metric" (2025), eq. 8 (ECD), eq. 12 (the summand for classes), eq. 15 (the
    binary form, simplified).

    Parameters
    ----------
    scores, labels, kind
        Posteriors (N, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them. The paper's version 1 is binary;
        the summand NLL_i - H_i is computed here for any K.

    Returns
    -------
    float
        The ECD in nats; ``inf`` when a sample's true class has probability 0 (its NLL is infinite).

    Raises
    ------
    CalibInputError
        For invalid ``scores``, ``labels`` or ``kind``.

    Examples
    --------
    >>> round(ecd([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]], [0, 1, 1, 1], kind="probs"), 4)
    -0.127
    >>> ecd([[0.5, 0.5], [0.5, 0.5]], [0, 1], kind="probs")
    0.0
    """
    return float(np.mean(ecd_terms(scores, labels, kind=kind)))


def single_datum_bound(n_classes: int = 2) -> tuple[float, float]:
    """(p*, f(p*)): the smallest summand NLL - H of one datum over K classes, and the true class's
    probability p* where it is reached.

    For two classes the summand is (p - y) logit p, smallest at y = 1 where p logit p = 1
    ("An entropic metric" (2025), Sect. IV-D, Fig. 2). For K classes (derived here the same way): with
    the true class at p, the summand -log p + sum_k q_k log q_k is smallest when the other K - 1
    classes share 1 - p equally (their entropy is then largest), and its derivative in p vanishes where
    p log(p (K - 1) / (1 - p)) = 1; there it equals 1 - 1/p*. The bound falls with K (about -1.10 at
    K = 10): no constant bounds ECD below for every K. O(1) time (a root search).

    Parameters
    ----------
    n_classes : int, default 2
        K >= 2.

    Examples
    --------
    >>> [round(bound, 5) for _, bound in (single_datum_bound(), single_datum_bound(3))]
    [-0.27846, -0.46306]
    """
    from scipy.optimize import brentq

    k = check_positive_int(n_classes, "n_classes")
    if k < 2:
        raise CalibInputError(f"n_classes must be at least 2; got {n_classes}")
    p_star = brentq(lambda p: p * np.log(p * (k - 1) / (1.0 - p)) - 1.0, 1.0 / k, 1.0 - 1e-12, xtol=1e-15)
    return float(p_star), float(1.0 - 1.0 / p_star)


@dataclass(frozen=True)
class EntropicBins:
    """The bin table of "An entropic metric" (2025): per bin count, mean class-1 probability, fraction
    of positives, ECE_b = |pos - conf|, ESCE_b = pos - conf (eqs. 3-6) and ECD_b (mean summand, inf if a
    sample of the bin gives its true class probability 0); NaN in empty bins."""

    counts: np.ndarray
    mean_prediction: np.ndarray
    frequency: np.ndarray
    ece: np.ndarray
    esce: np.ndarray
    ecd: np.ndarray

    def weighted(self, name: str) -> float:
        """The table's "Weighted Sum" of ``ece``, ``esce`` or ``ecd`` over the occupied bins."""
        if name not in ("ece", "esce", "ecd"):
            raise CalibInputError(f"name must be 'ece', 'esce' or 'ecd'; got {name!r}")
        full = self.counts > 0
        return float(np.sum(self.counts[full] * getattr(self, name)[full]) / self.counts.sum())


def entropic_bins(scores, labels, *, kind: str, n_bins: int = 10) -> EntropicBins:
    """ECE, ESCE and ECD per equal-width bin of the class-1 probability of a binary problem."""
    logp, y = check_inputs(scores, labels, kind)
    if logp.shape[1] != 2:
        raise CalibInputError(f"the bin table is for binary scores (K = 2); got K = {logp.shape[1]}")
    m = check_positive_int(n_bins, "n_bins")
    p1 = np.exp(logp[:, 1])
    ids = equal_width_bin_ids(p1, m, closed="left")
    counts = np.bincount(ids, minlength=m)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(ids, weights=p1, minlength=m) / counts
        freq = np.bincount(ids, weights=y, minlength=m) / counts
        ecd_b = np.bincount(ids, weights=ecd_terms(logp, y, kind="logprobs"), minlength=m) / counts
    return EntropicBins(counts, mean, freq, np.abs(freq - mean), freq - mean, ecd_b)


def gaussian_ecd(errors, covariances) -> float:
    """ECD of Gaussian predictions N(mu_i, P_i) of d-dimensional states: mean (NEES_i - d) / 2.

    ``errors`` (N, d) are x_i - mu_i and ``covariances`` (N, d, d) or (d, d) the P_i;
    NEES_i = e_i^T P_i^-1 e_i (eq. 7). Consistent estimates (E NEES = d) give 0.
    """
    e = as_float_array(errors, "errors", "(N, d) array")
    if e.ndim != 2 or e.shape[0] == 0 or not np.all(np.isfinite(e)):
        raise CalibInputError(f"errors must be a finite (N, d) array of x - mu with N >= 1; got shape {e.shape}")
    d = e.shape[1]
    cov = as_float_array(covariances, "covariances")
    if cov.shape not in ((d, d), (e.shape[0], d, d)) or not np.all(np.isfinite(cov)):
        raise CalibInputError(
            f"covariances must be finite, shape ({d}, {d}) or ({e.shape[0]}, {d}, {d}); got {cov.shape}"
        )
    cov = np.broadcast_to(cov, (e.shape[0], d, d))
    if not np.allclose(cov, np.swapaxes(cov, 1, 2), rtol=1e-10, atol=0.0):
        raise CalibInputError("covariances must be symmetric positive definite; got a non-symmetric matrix")
    try:
        factor = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError as exc:
        raise CalibInputError("covariances must be symmetric positive definite; got one that is not") from exc
    whitened = np.linalg.solve(factor, e[:, :, None])[:, :, 0]  # L^-1 e, so NEES = |L^-1 e|^2
    nees = np.einsum("ij,ij->i", whitened, whitened)
    return float(np.mean(nees - d) / 2.0)
