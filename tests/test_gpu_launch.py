"""The launch helper: real-device limits, declared kernels and signatures, the launch plan of 2,000,000 rows."""

import ast
from pathlib import Path

import numpy as np
import pytest

from dtlab.backend import cuda_status
from dtlab.gpu import kernels
from dtlab.gpu.launch import LaunchError, check_launch, chunks, device_limits, grid_for, launch, limits, recording

ROOT = Path(__file__).resolve().parents[1]
needs_cuda = pytest.mark.skipif(not cuda_status()[0], reason="cuda backend unavailable")


def test_limits_of_a_real_device_are_checked():
    assert check_launch(7, 32) == ((7, 1, 1), (32, 1, 1))
    assert check_launch((2**31 - 1, 65_535, 65_535), (32, 32)) == ((2**31 - 1, 65_535, 65_535), (32, 32, 1))
    for grid, block, shared, match in [
        ((1, 65_536), 32, 0, "grid y = 65,536 blocks exceeds the device's 65,535"),
        ((1, 1, 70_000), 32, 0, "grid z"),
        (2**31, 32, 0, "grid x = 2,147,483,648"),
        (0, 32, 0, "empty launch"),
        (4, 0, 0, "empty launch"),
        (4, 1025, 0, "block x = 1025 threads exceeds the device's 1024"),
        (4, (32, 33), 0, "a block of 1056 threads"),
        (4, (1, 1, 65), 0, "block z"),
        (4, 32, 48 * 1024 + 1, "dynamic shared memory"),
    ]:
        with pytest.raises(LaunchError, match=match):
            check_launch(grid, block, shared, "k")


def test_chunks_and_capped_grids():
    assert list(chunks(5, 2)) == [(0, 2), (2, 2), (4, 1)]
    assert list(chunks(0, 2)) == []
    assert grid_for(10, 4) == 3 and grid_for(0, 4) == 1
    with device_limits(max_grid=(3, 2, 2)):
        assert grid_for(100, 4) == 3 and limits().max_grid == (3, 2, 2)
        with pytest.raises(LaunchError):
            check_launch((1, 3), 1)
    check_launch((1, 3), 1)  # the limits are restored


def test_type_names_match_numba_signatures():
    assert kernels.type_name(np.zeros((3, 4), np.float32)) == "array(float32, 2d, C)"
    assert kernels.type_name(np.zeros((3, 4), np.float32).T) == "array(float32, 2d, F)"
    assert kernels.type_name(np.zeros((3, 4))[:, ::2]) == "array(float64, 2d, A)"
    assert kernels.type_name(np.zeros(3, np.bool_)) == "array(bool, 1d, C)"
    assert [kernels.type_name(v) for v in (True, 3, 2.0, np.uint64(1), np.float32(1))] == \
        ["bool", "int64", "float64", "uint64", "float32"]
    assert kernels.signature_types("void(float32[:, ::1], int64[::1], bool, uint64)") == \
        ("array(float32, 2d, C)", "array(int64, 1d, C)", "bool", "uint64")


@needs_cuda
def test_undeclared_kernels_and_signatures_are_refused():
    from numba import cuda

    @cuda.jit
    def stray(x):
        x[0] = 1

    with pytest.raises(LaunchError, match="stray is not declared"):
        launch(stray, 1, 1, np.zeros(1))
    from dtlab.inference import _predict_cuda as K

    with pytest.raises(LaunchError, match=r"argument 0: array\(int64, 1d, C\) \(declared array\(int32, 2d, C\)\)"):
        launch(K._sum_leaves_kernel, 1, 32, np.zeros(3, np.int64), np.zeros(2, np.int64), np.zeros((2, 1)),
               np.zeros(1, np.int64), np.zeros((3, 1)))


def _forest(rng, n_trees=3):
    from dtlab.inference import Forest
    from dtlab.testing import random_grid_tree

    grid = np.linspace(-1, 1, 9)
    return Forest([random_grid_tree(rng, 2, 3, grid, p_split=0.9) for _ in range(n_trees)], combine="sum")


@needs_cuda
def test_bitmask_plan_for_two_million_rows_stays_within_the_limits():
    """The launches of a 2,000,000-row bitmask prediction, checked and recorded without running the threads
    (the simulator would take hours): rows on grid x (limit 2^31 - 1), trees on grid y; the old grid of
    (n_trees, ceil(n / 16)) had 125,000 blocks on y, which a device refuses above 65,535."""
    from dtlab.inference import _predict_cuda as K

    forest = _forest(np.random.default_rng(0))
    n = 2_000_000
    X = np.zeros((n, 2), np.float32)
    with recording(execute=False) as plan:
        forest.predict(X, method="bitmask", backend="cuda")
    names = [p.name for p in plan]
    assert names == ["inference.bitmask", "inference.sum_leaves"]
    bitmask, summed = plan
    assert bitmask.grid[1] == forest.n_trees and bitmask.grid[0] * K.ROWS_PER_BLOCK >= n
    assert summed.grid[0] * summed.block[0] >= n
    assert -(-n // K.ROWS_PER_BLOCK) > limits().max_grid[1]  # the old layout's y would not have launched
    for p in plan:  # recorded launches passed check_launch; checked again here against the real limits
        check_launch(p.grid, p.block, p.shared_bytes, p.name)


@needs_cuda
@pytest.mark.parametrize("method", ["bitmask", "traversal", "quickscorer"])
def test_split_and_grid_stride_launches_predict_what_the_cpu_does(method):
    """With limits lowered to 3 blocks on x and 2 on y, the same code splits the trees over launches and loops
    its blocks over the rows: the sums still equal the CPU's to the bit."""
    rng = np.random.default_rng(1)
    forest = _forest(rng, n_trees=5)
    X = rng.uniform(-1.2, 1.2, (70, 2)).astype(np.float32)
    expected = forest.predict(X, method="traversal", backend="cpu")
    with device_limits(max_grid=(3, 2, 65_535)), recording() as log:
        got = forest.predict(X, method=method, backend="cuda")
    np.testing.assert_array_equal(got, expected)
    assert all(p.grid[0] <= 3 and p.grid[1] <= 2 for p in log)
    if method == "bitmask":
        assert [p.shapes[1] for p in log if p.name == "inference.bitmask"] == [0, 2, 4]  # tree offsets


def _kernel_definitions() -> set[tuple[str, str]]:
    """(module, qualified name) of every function in dtlab decorated as a numba.cuda kernel (not device=True)."""
    found = set()
    for path in sorted((ROOT / "dtlab").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)

        def visit(node, prefix, module=module):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for dec in child.decorator_list:
                        call = dec if isinstance(dec, ast.Call) else None
                        target = dec.func if call else dec
                        device = call is not None and any(k.arg == "device" for k in call.keywords)
                        if ast.unparse(target) == "cuda.jit" and not device:
                            found.add((module, prefix + child.name))
                    visit(child, prefix + child.name + ".<locals>.", module)
                elif isinstance(child, ast.ClassDef):
                    visit(child, prefix + child.name + ".", module)

        visit(ast.parse(path.read_text()), "")
    return found


def test_every_kernel_of_the_package_is_declared():
    """A kernel defined in dtlab but not declared would launch (the helper refuses it) nowhere and compile in
    no check: every one is declared, so make gpu-compile compiles what the package launches."""
    specs = kernels.discover()
    declared = set()
    for spec in specs.values():
        fn = kernels.python_function(spec.build())
        declared.add((fn.__module__, fn.__qualname__))
    defined = _kernel_definitions()
    assert defined and not defined - declared, f"kernels defined but not declared: {sorted(defined - declared)}"


def test_every_launch_goes_through_the_helper():
    """No ``kernel[grid, block](...)`` launch (a call of a tuple subscript, in a module that uses numba.cuda) in
    the package outside dtlab.gpu.launch."""
    offenders = []
    for path in sorted((ROOT / "dtlab").rglob("*.py")):
        source = path.read_text()
        if (path.parent.name == "gpu" and path.name == "launch.py") or "from numba import cuda" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                    and isinstance(node.func.slice, (ast.Tuple, ast.Call))):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:100]}")
    assert not offenders, "launches that bypass dtlab.gpu.launch.launch:\n" + "\n".join(offenders)
