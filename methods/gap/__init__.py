"""GAP and ProGAP (aggregation perturbation), edge and node level, and the EdgeRand baseline.

Registers ``gap-edge``, ``gap-node`` (Sajadmanesh et al., USENIX Security 2023), ``progap-edge``,
``progap-node`` (Sajadmanesh & Gatica-Perez 2023) and ``edgerand`` (LinkTeller's EdgeRand with asymmetric
randomized response). Modules:

``nap``       the NAP mechanism, its sensitivities, the node-level relations (declared degree bound, cut-off)
``common``    setup, calibration, the node-level graph of each relation and its unit labels (the ledgers:
              ``methods.privacy.presets``)
``nets``      base MLPs, progressive stages with concatenation JK, GAP's encoder
``stages``    full-batch and DP-Adam training loops; the model serving cached aggregates
``gap``, ``progap``, ``edgerand``   the methods
``plots``     the per-stage convergence figure
"""

from methods.gap import edgerand, gap, progap  # noqa: F401  (registers the methods)
from methods.gap.edgerand import EdgeRand, asymmetric_rr
from methods.gap.gap import GAPEdge, GAPNode
from methods.gap.progap import ProGAPEdge, ProGAPNode

__all__ = ["EdgeRand", "GAPEdge", "GAPNode", "ProGAPEdge", "ProGAPNode", "asymmetric_rr"]
