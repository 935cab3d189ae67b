"""--weights COLUMN and --weights-file PATH of ``calib evaluate``, ``calibrate`` and ``compare`` (issue 56).

What the command refuses is refused in one line naming the option, the file and the row; what it computes
with integer weights is what it computes on the rows repeated that many times (the tests that need the
engine's and the calibrators' ``sample_weight=`` run once they take it).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calib.cli
import calib.data.chunks

N = 240


def _frame(seed: int = 0) -> pd.DataFrame:
    """Two classes by name, 0 / 1 labels named no, yes, and whole-number weights from 1 to 3."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, N)
    labels = np.where(rng.random(N) < p, "yes", "no")
    return pd.DataFrame({"no": 1 - p, "yes": p, "label": labels, "w": rng.integers(1, 4, N)})


def _run(*argv, capsys) -> tuple[int, str, str]:
    """``calib *argv --quiet`` in this process: (exit status, stdout, stderr)."""
    code = calib.cli.main([*map(str, argv), "--quiet"])
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line_error(err: str, command: str = "evaluate") -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"calib {command}: error: ")
    return lines[0]


@pytest.fixture
def chunked(monkeypatch):
    """Every file read in chunks of 32 rows."""
    monkeypatch.setattr(calib.cli, "CHUNKED_FILE_BYTES", 0)
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 32)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (-1, "must be >= 0; found -1 at line 52"),
        ("", "are missing at line 52"),
        ("nan", "are missing at line 52"),
        ("inf", "must be finite; found inf at line 52"),
        ("lots", "hold 'lots' at line 52, not a number"),
    ],
)
@pytest.mark.parametrize("how", ["whole", "chunks"])
def test_a_bad_weight_is_one_line_naming_the_option_the_file_and_the_line(tmp_path, capsys, request, value, says, how):
    if how == "chunks":
        request.getfixturevalue("chunked")
    frame = _frame().astype({"w": object})
    frame.loc[50, "w"] = value
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    code, _, err = _run("evaluate", path, "--weights", "w", "--n-boot", "0", capsys=capsys)
    assert code == 1
    assert _one_line_error(err).startswith(f"calib evaluate: error: {path}: the weights of --weights w {says}")


def test_weights_all_zero_are_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    _frame().assign(w=0).to_csv(path, index=False)
    code, _, err = _run("evaluate", path, "--weights", "w", capsys=capsys)
    assert code == 1
    assert "the weights of --weights w are all 0" in _one_line_error(err)


def test_a_weights_column_and_a_weights_file_together_are_refused(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    _frame().to_csv(path, index=False)
    np.save(tmp_path / "w.npy", np.ones(N))
    fit = ["calibrate", "--method", "temperature", "--train", path, "--apply", path, "--out", tmp_path / "o.npz"]
    for command in (["evaluate", path], ["compare", path, path], fit):
        code, _, err = _run(*command, "--weights", "w", "--weights-file", tmp_path / "w.npy", capsys=capsys)
        assert code == 2
        line = _one_line_error(err, command[0])
        assert line.endswith(
            f"--weights w and --weights-file {tmp_path / 'w.npy'} both give the rows' weights; give one"
        )


@pytest.mark.parametrize("how", ["whole", "chunks"])
def test_a_weights_file_of_another_length_is_one_line_naming_both_counts(tmp_path, capsys, request, how):
    if how == "chunks":
        request.getfixturevalue("chunked")
    path = tmp_path / "scores.csv"
    _frame().drop(columns="w").to_csv(path, index=False)
    (tmp_path / "w.txt").write_text("weight\n" + "1\n" * (N - 3))
    code, _, err = _run("evaluate", path, "--weights-file", tmp_path / "w.txt", capsys=capsys)
    assert code == 1
    line = _one_line_error(err)
    assert f"the weights of --weights-file {tmp_path / 'w.txt'} are {N - 3} for " in line
    assert f"for {N} rows" in line or how == "chunks"  # a CSV's rows are known once read


def test_a_weights_column_of_an_archive_is_refused_with_the_weights_file_fix(tmp_path, capsys):
    frame = _frame()
    np.savez(tmp_path / "s.npz", scores=frame[["no", "yes"]].to_numpy(), labels=(frame["label"] == "yes").to_numpy())
    code, _, err = _run("evaluate", tmp_path / "s.npz", "--weights", "w", capsys=capsys)
    assert code == 2
    assert _one_line_error(err).endswith("give the weights with --weights-file WEIGHTS.npy (one per row)")


def test_a_saved_calibrator_takes_no_weights(tmp_path, capsys):
    code, _, err = _run("calibrate", "--model", tmp_path / "m.json", "--apply", tmp_path / "s.csv", "--out",
                        tmp_path / "o.npz", "--weights", "w", capsys=capsys)  # fmt: skip
    assert code == 2
    assert "drop them with --model" in _one_line_error(err, "calibrate")


def test_compare_refuses_a_second_file_whose_weights_differ(tmp_path, capsys):
    frame = _frame()
    frame.to_csv(tmp_path / "a.csv", index=False)
    frame.assign(w=frame["w"].where(frame.index != 7, 9)).to_csv(tmp_path / "b.csv", index=False)
    code, _, err = _run("compare", tmp_path / "a.csv", tmp_path / "b.csv", "--weights", "w", capsys=capsys)
    assert code == 1
    line = _one_line_error(err, "compare")
    assert "differs from that of" in line
    assert "in 1 rows (first at row 7 of" in line


@pytest.mark.parametrize("command", ["evaluate", "calibrate", "compare"])
def test_the_help_says_what_a_weight_means(command, capsys):
    with pytest.raises(SystemExit):
        calib.cli.main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--weights COLUMN", "--weights-file PATH"):
        assert option in text
    assert text.count("a row counts w times (a negative kept 1 in 10 weighs 10") == 2
    assert text.count("intervals resample rows, each keeping its weight") == 2


def _repeated(frame: pd.DataFrame) -> pd.DataFrame:
    """Each row of ``frame`` as many times as its weight, without the weights."""
    return frame.loc[frame.index.repeat(frame["w"])].drop(columns="w").reset_index(drop=True)


def _point_metrics(document: dict) -> dict:
    return {m["metric"]: m["value"] for m in document["metrics"] if m["metric"] in ("accuracy", "NCE", "NBS")}


@pytest.mark.parametrize("how", ["whole", "chunks"])
def test_whole_number_weights_evaluate_as_the_rows_repeated(tmp_path, capsys, request, how):
    if how == "chunks":
        request.getfixturevalue("chunked")
    frame = _frame()
    frame.to_csv(tmp_path / "weighted.csv", index=False)
    _repeated(frame).to_csv(tmp_path / "repeated.csv", index=False)
    np.save(tmp_path / "w.npy", frame["w"].to_numpy())
    options = ("--json", "--n-boot", "0", "--calibrators", "none")
    documents = []
    for argv in (["weighted.csv", "--weights", "w"], ["weighted.csv", "--class-columns", "no", "yes", "--weights-file",
                                                      tmp_path / "w.npy"], ["repeated.csv"]):  # fmt: skip
        code, out, err = _run("evaluate", tmp_path / argv[0], *argv[1:], *options, capsys=capsys)
        assert code == 0, err
        documents.append(_point_metrics(json.loads(out)))
    assert documents[0] == pytest.approx(documents[2], rel=1e-12)
    assert documents[1] == pytest.approx(documents[2], rel=1e-12)


def test_compare_with_whole_number_weights_is_compare_on_the_rows_repeated(tmp_path, capsys):
    frame, other = _frame(), _frame(1).assign(label=_frame()["label"])
    for name, table in (("a", frame), ("b", other)):
        table.assign(w=frame["w"]).to_csv(tmp_path / f"{name}.csv", index=False)
        _repeated(table.assign(w=frame["w"])).to_csv(tmp_path / f"{name}_repeated.csv", index=False)
    names = ("--names", "a", "b", "--n-boot", "0")
    weighted = _run("compare", tmp_path / "a.csv", tmp_path / "b.csv", "--weights", "w", *names, capsys=capsys)
    repeated = _run("compare", tmp_path / "a_repeated.csv", tmp_path / "b_repeated.csv", *names, capsys=capsys)
    assert weighted[0] == repeated[0] == 0, weighted[2] + repeated[2]
    first, rest = weighted[1].split("\n", 1)
    w = frame["w"].to_numpy(dtype=float)
    total, effective = w.sum(), w.sum() ** 2 / (w @ w)
    assert (
        first
        == f"weights: column 'w', total {total:g}, Kish's effective sample size {effective:.6g} (every sum is weighted)"
    )
    assert rest == repeated[1]


def test_calibrate_fits_on_the_weights_of_train_as_on_the_rows_repeated(tmp_path, capsys):
    frame = _frame()
    frame.to_csv(tmp_path / "train.csv", index=False)
    _repeated(frame).to_csv(tmp_path / "repeated.csv", index=False)
    frame.drop(columns=["w", "label"]).to_csv(tmp_path / "apply.csv", index=False)  # no weights: scores to calibrate
    outputs = []
    for train, weights in (("train.csv", ("--weights", "w")), ("repeated.csv", ())):
        out = tmp_path / f"calibrated-{train}.npz"
        code, _, err = _run("calibrate", "--method", "temperature", "--train", tmp_path / train, *weights, "--apply",
                            tmp_path / "apply.csv", "--out", out, capsys=capsys)  # fmt: skip
        assert code == 0, err
        outputs.append(np.load(out)["scores"])
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-12, atol=1e-14)
