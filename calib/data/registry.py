"""Registry of the published real posterior sets, and their verified materialization.

Every file is pinned by upstream repository, commit, size and sha256 (``real_checksums.tsv``).
A set is materialized from a local mirror directory (same layout as ``../shared/real_posteriors``:
``<family>/<path>``) or downloaded from its upstream repository at the pinned commit; either way
each file's size and sha256 are checked before it is read. Downloads land in a cache directory
through a temporary file, so an interrupted or corrupt download never looks like a good file.
"""

from __future__ import annotations

import csv
import http.client
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from calib._internal.files import atomic_write, sha256_file
from calib.data.real import PosteriorSet, load_npy_pair, load_npz

CHECKSUMS_FILE = Path(__file__).with_name("real_checksums.tsv")
DEFAULT_URL = "https://github.com/{repo}/raw/{commit}/{path}"
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class RealDataError(RuntimeError):
    """A real posterior set cannot be provided: missing, truncated or altered file, failed download."""


@dataclass(frozen=True)
class Upstream:
    """Where a family of sets lives upstream: repository, pinned commit and folder."""

    repo: str
    commit: str
    folder: str


UPSTREAMS = {
    "ferrer2024": Upstream("luferrer/expected_cost", "96253fe48a4ab0f5934b252fb38351bd1838aa14", "notebooks/data"),
    "psrcal_splits": Upstream(
        "luferrer/psr-calibration",
        "831c0e66cabc369ef9a609450bb3a32cd9cd1940",
        "experiments/calibration_comparison/data",
    ),
    "netcal": Upstream(
        "EFS-OpenSource/calibration-framework",
        "2a3db8d7cb2a557f3b563c98ce00954f43dfe927",
        "examples/classification/records",
    ),
}


@dataclass(frozen=True)
class RealSet:
    """One registered set: its files (relative to the mirror root), the kind of its scores, a label."""

    name: str
    files: tuple[str, ...]
    kind: str
    title: str
    class_names: tuple[str, ...] | None = None
    unavailable: str | None = None

    @property
    def family(self) -> str:
        return self.name.split("/", 1)[0]


def _ferrer(directory: str, title: str, kind: str, class_names=None, unavailable=None) -> RealSet:
    base = f"ferrer2024/{directory}"
    return RealSet(base, (f"{base}/scores.npy", f"{base}/targets.npy"), kind, title, class_names, unavailable)


def _split(model: str, split: str, kind: str, class_names=None) -> RealSet:
    base = f"psrcal_splits/{model}/{split}"
    return RealSet(base, (f"{base}/predictions.npy", f"{base}/targets.npy"), kind, f"{model} {split}", class_names)


def _netcal(stem: str, title: str, class_names=None) -> RealSet:
    return RealSet(f"netcal/{stem}", (f"netcal/{stem}.npz",), "probs", title, class_names)


_SETS = [
    _ferrer("sst2_gpt2_4shot", "SST2 GPT2-4sh", "logprobs"),
    _ferrer("sst2_gpt2", "SST2 GPT2-0sh", "logprobs"),
    _ferrer("sitw_plda", "SITW XvPLDA", "logprobs", unavailable="scores missing upstream (only targets.npy)"),
    _ferrer("fvcaus_plda", "FVCAUS XvPLDA", "logprobs"),
    _ferrer("pneumoniamnist_resnet50", "PNEUM Resnet-50", "logprobs"),
    _ferrer("adrenalmnist_resnet50", "ADRENAL Resnet-50", "logprobs"),
    _ferrer("pathmnist_resnet50", "PATH Resnet-50", "logprobs"),
    _ferrer("iemocap_wav2vec_pt", "IEMOCAP W2V2", "logprobs"),
    _ferrer("agnews_gpt2", "AGNEWS GPT2-0sh", "logprobs"),
    _ferrer("cifar10_resnet-20", "CIFAR10 Resnet-20", "logits", CIFAR10_CLASSES),
    _ferrer("cifar10_vgg19_bn", "CIFAR10 Vgg19", "logits", CIFAR10_CLASSES),
    _ferrer("cifar10_repvgg_a2", "CIFAR10 RepVgg-a2", "logits", CIFAR10_CLASSES),
    _ferrer("cifar100_resnet-20", "CIFAR100 Resnet-20", "logits"),
    _ferrer("cifar100_vgg19_bn", "CIFAR100 Vgg19", "logits"),
    _ferrer("cifar100_repvgg_a2", "CIFAR100 RepVgg-a2", "logits"),
    *[
        _split("resnet-50_cifar10", split, "logits", CIFAR10_CLASSES)
        for split in ("trn", "val", "tst", "tst_sh", "tst_sc", "tst_p")
    ],
    *[
        _split(model, split, "logits")
        for model in ("emotion_ep12", "emotion_final")
        for split in ("trn", "tst", "tst_sh")
    ],
    *[_split("spkr_verif", split, "logprobs") for split in ("trn", "tst")],
    _netcal("lenet-5-cifar-10", "LeNet-5 CIFAR-10", CIFAR10_CLASSES),
    _netcal("wideresnet-16-4-cifar-10", "WideResNet-16-4 CIFAR-10", CIFAR10_CLASSES),
    _netcal("densenet-bc-100-cifar-100", "DenseNet-BC-100 CIFAR-100"),
    _netcal("lenet-5-cifar-100", "LeNet-5 CIFAR-100"),
    _netcal("wideresnet-16-4-cifar-100", "WideResNet-16-4 CIFAR-100"),
]
REAL_SETS: dict[str, RealSet] = {s.name: s for s in _SETS}


def checksums() -> dict[str, tuple[int, str]]:
    """Pinned (bytes, sha256) of every registered file, by path relative to the mirror root."""
    with CHECKSUMS_FILE.open(newline="") as handle:
        return {row["path"]: (int(row["bytes"]), row["sha256"]) for row in csv.DictReader(handle, delimiter="\t")}


def upstream_url(path: str, url: str = DEFAULT_URL) -> str:
    """The download address of mirror-relative ``path`` at its family's pinned commit."""
    family, rest = path.split("/", 1)
    up = UPSTREAMS[family]
    return url.format(repo=up.repo, commit=up.commit, path=f"{up.folder}/{rest}")


def get(name: str) -> RealSet:
    """The registered set ``name``, or an error listing the registered names."""
    if name not in REAL_SETS:
        raise KeyError(f"unknown real posterior set {name!r}; registered: {sorted(REAL_SETS)}")
    return REAL_SETS[name]


def verify(path: Path, relpath: str, expected: tuple[int, str], fix: str, shown: str | None = None) -> Path:
    """Check size and sha256 of ``path`` against the pinned values; raise with ``fix`` otherwise, naming
    the file as ``shown`` (default: ``path`` and ``relpath``)."""
    size, digest = expected
    shown = shown or f"{path} ({relpath})"
    actual = path.stat().st_size
    if actual != size:
        what = "truncated" if actual < size else "longer than the pinned file"
        raise RealDataError(f"{shown} is {what}: {actual} bytes, expected {size}. {fix}")
    if (found := sha256_file(path)) != digest:
        raise RealDataError(f"{shown} is altered: sha256 {found}, expected {digest}. {fix}")
    return path


def _download(url: str, dest: Path, relpath: str, expected: tuple[int, str], timeout: float) -> Path:
    """Fetch ``url`` into ``dest`` through a temporary file that is verified before it takes ``dest``'s
    name: a broken, truncated or altered transfer leaves nothing behind."""

    def fetch(tmp: Path) -> None:
        with tmp.open("wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
            shutil.copyfileobj(response, out)
        shown = f"the download of {relpath} from {url}"
        verify(tmp, relpath, expected, "It is not the pinned file; retry, or use a mirror (CALIB_REAL_DATA).", shown)

    use_mirror = "or point real_data.mirror (or the environment variable CALIB_REAL_DATA) at a directory that holds it"
    try:
        return atomic_write(dest, fetch)
    except urllib.error.HTTPError as exc:
        raise RealDataError(
            f"could not download {relpath}: {url} answered {exc.code} {exc.reason}. Check real_data.url (or "
            f"CALIB_REAL_DATA_URL), {use_mirror}"
        ) from exc
    except (TimeoutError, urllib.error.URLError) as exc:
        if not isinstance(getattr(exc, "reason", exc), TimeoutError):
            raise RealDataError(
                f"could not download {relpath} from {url}: {getattr(exc, 'reason', exc)}. Check the network, "
                f"{use_mirror}"
            ) from exc
        raise RealDataError(
            f"could not download {relpath}: {url} did not answer within {timeout:g} s (real_data.timeout_seconds). "
            f"Retry, raise the timeout, {use_mirror}"
        ) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise RealDataError(f"could not download {relpath} from {url}: {exc}. Check the network, {use_mirror}") from exc


def locate(
    relpath: str,
    *,
    mirror: Path | None,
    cache: Path | None = None,
    download: bool = False,
    url: str = DEFAULT_URL,
    timeout: float = 60.0,
) -> Path:
    """A verified local copy of mirror-relative ``relpath``: from ``mirror``, else the download ``cache``."""
    expected = checksums().get(relpath)
    if expected is None:
        raise RealDataError(f"{relpath} is not a registered file (see {CHECKSUMS_FILE.name})")
    source = upstream_url(relpath, url)
    if mirror is not None and (Path(mirror) / relpath).is_file():
        return verify(Path(mirror) / relpath, relpath, expected, f"Replace it with a fresh copy (upstream: {source}).")
    if download:
        if cache is None:
            raise RealDataError("downloading needs a cache directory for the fetched files")
        dest = Path(cache) / relpath
        if dest.is_file():
            try:
                return verify(dest, relpath, expected, "")
            except RealDataError:
                dest.unlink()  # a stale or damaged cached copy: fetch it again
        return _download(source, dest, relpath, expected, timeout)
    where = f"the mirror {mirror}" if mirror is not None else "no mirror (none configured)"
    raise RealDataError(
        f"{relpath} is not available: {where} does not hold it and downloads are off. Set real_data.mirror= "
        "(or the environment variable CALIB_REAL_DATA) to a copy of the real_posteriors directory, or pass "
        f"real_data.download=true to fetch it from {source}"
    )


def materialize(name: str, **where) -> PosteriorSet:
    """Load registered set ``name`` from verified files (``where``: the keyword arguments of :func:`locate`)."""
    entry = get(name)
    if entry.unavailable:
        raise RealDataError(f"{name} ({entry.title}) cannot be materialized: {entry.unavailable}")
    paths = [locate(f, **where) for f in entry.files]
    family = entry.family
    up = UPSTREAMS[family]
    meta = {
        "name": name,
        "class_names": entry.class_names,
        "provenance": f"{entry.title}; github.com/{up.repo} @ {up.commit[:7]}, {up.folder}",
    }
    if len(paths) == 2:
        return load_npy_pair(*paths, kind=entry.kind, **meta)
    return load_npz(paths[0], kind=entry.kind, scores_key="predictions", labels_key="ground_truth", **meta)
