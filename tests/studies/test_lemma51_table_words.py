"""The Lemma 5.1 table says in words where the inversion failed, and explains its columns."""

from solvers.cli.main import main


def test_the_table_says_inversion_failed_and_explains_its_columns(tmp_path, capsys):
    out = tmp_path / "r.nc"
    assert main(["lemma51", "--sphere", "S2", "--measure", "symmetric", "--beta", "5", "20",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    head = next(k for k, line in enumerate(lines) if line.split()[:2] == ["beta", "lmax"])
    assert lines[head].rstrip().endswith("inversion")
    for row in lines[head + 1:head + 3]:  # one per beta
        lstar = row.split()[3]
        words = "ok up to lmax" if lstar == "none" else f"FAILED from degree {lstar}"
        assert words in row, row
    assert "FAILED from degree" in text or "ok up to lmax" in text
    assert "P(lmax) rec: the partial sum of the recovered coefficients" in text
    assert "inj.vis: the largest degree" in text
