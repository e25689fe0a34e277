"""liblinear-multicore in a process of its own (see :class:`workbench.linear.peers.Liblinear`): a script, not a module.

Multi-core LIBLINEAR is OpenMP code; loaded into a process whose numba
threads are running too, its threads contend with theirs (a 0.009 s fit took
0.44 s there).  So the benchmark runs it here, in a process that imports
nothing of dtlab (no numba), and times the ``train`` call here, as a user's
program would see it.  Argument: the folder of the ``liblinear`` package of
``liblinear-multicore`` (``.peers/liblinear-multicore/liblinear``).  One
JSON line per request on stdin, one reply line each (``{"error": traceback}``
where a request failed):

* ``{"cmd": "data", "path": npz}``: the CSR arrays (``data``, ``indices``,
  ``indptr``, ``shape``) and labels ``y`` (+-1) of the problem; replies
  ``{"version": LIBLINEAR's version}``.
* ``{"cmd": "train", "options": "-s 0 -c 4 ...", "details": bool}``: one
  ``train``; replies ``{"seconds"}`` and, with ``details``, ``log`` (what
  LIBLINEAR printed), ``w``, ``bias`` and ``first_label``.

LIBLINEAR prints its log to file descriptor 1, so the replies go to a copy of
that descriptor made first, and descriptor 1 is pointed at a scratch file.
"""

import importlib
import importlib.util
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path


def load(folder: Path):
    name = "liblinear_multicore"
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return importlib.import_module(name + ".liblinear")


def main() -> None:
    replies = os.fdopen(os.dup(1), "w")
    log = tempfile.TemporaryFile()
    os.dup2(log.fileno(), 1)
    import ctypes

    import numpy as np
    import scipy.sparse

    ll = load(Path(sys.argv[1]))
    state = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            cmd = request["cmd"]
            if cmd == "data":
                arrays = np.load(request["path"])
                X = scipy.sparse.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]),
                                            shape=tuple(arrays["shape"]))
                state["prob"] = ll.problem(arrays["y"], X)
                state["n_features"] = X.shape[1]
                reply = {"version": int(ctypes.c_int.in_dll(ll.liblinear, "liblinear_version").value)}
            elif cmd == "train":
                prob = state["prob"]
                param = ll.parameter(request["options"] + ("" if request.get("details") else " -q"))
                prob.set_bias(param.bias)
                ll.liblinear.set_print_string_function(param.print_func)
                sys.stdout.flush()
                log.seek(0)
                log.truncate()
                start = time.perf_counter()
                model = ll.toPyModel(ll.liblinear.train(prob, param))
                reply = {"seconds": time.perf_counter() - start}
                if request.get("details"):
                    log.seek(0)
                    reply.update(log=log.read().decode(errors="replace"), bias=float(model.get_decfun_bias()),
                                 w=[model.get_decfun_coef(j + 1) for j in range(state["n_features"])],
                                 first_label=float(model.get_labels()[0]))
            else:
                raise ValueError(f"unknown command {cmd!r}")
        except Exception:
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
