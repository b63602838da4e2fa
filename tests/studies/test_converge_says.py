"""``converge`` says what it ran and what its orders mean: the default method is named, orders
far below an upper bound are flagged, and the S^2 ladder rule is stated (and suggested)."""

import numpy as np
import pytest

from solvers.cli.main import main
from solvers.model.config import ConfigError, load_config
from solvers.studies.converge import parse_ladder
from solvers.studies.converge_report import LEGEND, method_line
from solvers.studies.orders import DesignOrder, in_asymptotic_range, order_flags

SMALL = '[domain]\nresolution = 64\n[model]\nbeta = 1.0\n[time]\nt_end = 1.0\n'


def test_the_default_method_is_named():
    line = method_line(load_config(SMALL))
    assert "the default method (time.scheme is not set" in line and "--set time.scheme" in line
    assert method_line(load_config(SMALL, ['time.scheme="fv"'])) == 'method: fv (time.scheme = "fv")'


def test_orders_far_below_an_upper_bound_are_flagged_low():
    bound = DesignOrder("algebraic", 5, True, "relu: C^1 potential")
    orders = [np.nan, 0.7, 0.9, 1.07]
    flags = order_flags(orders, bound)
    assert all("L" in f for f in flags[1:]) and flags[0] == ""
    assert "L low" in LEGEND
    assert order_flags([np.nan, 4.9, 5.0], bound) == ["", "", ""]  # at the bound: no flag
    # a steady order below the bound is still asymptotic (Richardson applies)
    assert in_asymptotic_range([np.nan, 1.0, 1.05], order_flags([np.nan, 1.0, 1.05], bound), bound)


def test_the_sphere_ladder_rule_is_stated_and_its_example_works(capsys):
    with pytest.raises(ConfigError, match=r"resolution \+ 1 \(the grid's latitudes\).*31,63,127"):
        parse_ladder("64,128,256", "--resolutions", True, 1)
    assert parse_ladder("31,63,127", "--resolutions", True, 1) == [31, 63, 127]
    assert parse_ladder("64,128,256", "--resolutions", True, 0) == [64, 128, 256]
    with pytest.raises(SystemExit):
        main(["converge", "--help"])
    assert "31,63,127" in " ".join(capsys.readouterr().out.split())
