"""lleaves in its own venv (``.peers/lleaves``, see :mod:`workbench.peer_env`): a script, not a module.

It imports nothing of dtlab (that venv has only lleaves, llvmlite and numpy)
and answers one JSON line per request on stdin:

* ``{"cmd": "compile", "model": path}``: compile a LightGBM model file (raw
  scores); replies ``{"seconds": compile time}``.
* ``{"cmd": "data", "path": npy}``: load the rows to predict.
* ``{"cmd": "predict", "n_jobs": t, "save": npy or null}``: one ``predict`` of
  all the rows as a user calls it; replies ``{"seconds": wall time}``, the
  predictions saved where asked.
"""

import json
import sys
import time
import traceback


def main() -> None:
    import lleaves
    import numpy as np

    state = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            cmd = request["cmd"]
            if cmd == "compile":
                model = lleaves.Model(model_file=request["model"])
                start = time.perf_counter()
                model.compile(raw_score=True)
                state["model"] = model
                reply = {"seconds": time.perf_counter() - start}
            elif cmd == "data":
                state["X"] = np.load(request["path"])
                reply = {"rows": int(state["X"].shape[0])}
            elif cmd == "predict":
                start = time.perf_counter()
                out = state["model"].predict(state["X"], n_jobs=int(request["n_jobs"]))
                reply = {"seconds": time.perf_counter() - start}
                if request.get("save"):
                    np.save(request["save"], out)
            else:
                raise ValueError(f"unknown command {cmd!r}")
        except Exception:
            reply = {"error": traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
