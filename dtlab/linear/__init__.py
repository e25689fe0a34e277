"""L2-regularised logistic regression and L2-loss SVM trained by TRON, on CPU threads, a GPU, or both.

The technique of Halloran and Rocke, "GPU-accelerated primal learning for
extremely fast large-scale classification" (NeurIPS 2020): LIBLINEAR's
truncated Newton solver restructured so that a GPU speeds it up -- the data
and every per-iteration vector stay on the device and the host sees only
scalars; for the L2-SVM the active set and ``X_I`` are formed on the device;
data too large for the device are split between the GPU and CPU threads.

- :class:`TronLogisticRegression`, :class:`TronLinearSVC`: scikit-learn estimators.
- :func:`tron`: the solver (plain Python over an array module).
- :data:`LOSSES`: the loss function objects (``fun``, ``grad``, ``Hv``, Hessian diagonal).
"""

from ._fitting import fit_linear
from .estimators import TronLinearSVC, TronLogisticRegression
from .losses import LOSSES, L2Objective
from .tron import TronResult, tron

__all__ = ["LOSSES", "L2Objective", "TronLinearSVC", "TronLogisticRegression", "TronResult", "fit_linear", "tron"]
