"""The producer registry and the catalog of techniques."""

import pytest

from workbench.catalog import EXTRA_MODULES, TECHNIQUES, experiment_modules, load_all
from workbench.registry import BENCHMARKS, FIGURES, RunContext, register_figure


def test_catalog_lists_each_technique_once():
    import importlib.util

    assert len(set(TECHNIQUES)) == len(TECHNIQUES)
    assert {"greedy", "evolution"} <= set(TECHNIQUES)
    assert experiment_modules() == ("workbench.tour", "workbench.gpu_tour",
                                    *(f"workbench.{slug}.experiments" for slug in TECHNIQUES), *EXTRA_MODULES)
    assert all(m.split(".")[1] in TECHNIQUES for m in EXTRA_MODULES)  # each in a technique's package
    for name in experiment_modules():
        assert importlib.util.find_spec(name) is not None, name


def test_every_producer_is_named_by_its_slug():
    load_all()
    for producer in [*FIGURES.values(), *BENCHMARKS.values()]:
        assert producer.technique in ("tour", *TECHNIQUES)
        assert producer.name == producer.technique or producer.name.startswith(producer.technique + "_")


def test_registry_refuses_duplicates_and_names_without_slug():
    load_all()
    with pytest.raises(ValueError, match="twice"):
        register_figure("tour", technique="tour", description="y")(lambda ctx: {})
    with pytest.raises(ValueError, match="must be named greedy_<what>"):
        register_figure("regression_tree_depth", technique="greedy", description="y")(lambda ctx: {})
    assert "tour" in FIGURES and "regression_tree_depth" not in FIGURES


def test_run_context_pick_and_figure_names(tmp_path):
    assert RunContext(scale="small").pick(1, 2) == 1
    assert RunContext(scale="paper").pick(1, 2) == 2
    with pytest.raises(ValueError, match="evolution_<what>"):
        RunContext(out_dir=tmp_path, technique="evolution").savefig(None, "gdt_vs_cart")
