"""Membership-inference attacks (node and edge) and their metrics.

Importing this package imports every module of ``attacks`` (except the shared infrastructure in
``_INFRASTRUCTURE``), so an attack family registers itself just by living here. ``attacks`` imports
``methods`` (the Method/Fitted interface) and never ``bench``.

Built-in attacks: ``threshold``, ``shadow``, ``lira``, ``privgnn-attack1``, ``privgnn-attack2`` (node);
``link-stealing``, ``linkteller`` (edge); ``attribute-inference``, ``attribute-lira`` (feature, weights only),
``released-prediction`` (feature, released predictions). Membership per setting: ``attacks.membership``. The game and
what the attacker sees: ``attacks.base``. Metrics: ``attacks.metrics``.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from attacks.base import (Attack, AttackReport, EdgeView, NodeView, Target, available_attacks, get_attack,
                          register_attack, run_attack, unregister_attack)
from attacks.membership import QUERY_NODES_KEY, NotApplicable

_INFRASTRUCTURE = {"base", "membership", "metrics"}

for _mod in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _mod.name.startswith("_") and _mod.name not in _INFRASTRUCTURE:
        _importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = ["Attack", "AttackReport", "EdgeView", "NodeView", "NotApplicable", "QUERY_NODES_KEY", "Target",
           "available_attacks", "get_attack", "register_attack", "run_attack", "unregister_attack"]
