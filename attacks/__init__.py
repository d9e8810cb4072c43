"""Membership-inference attacks (node and edge) and their metrics.

Importing this package imports every module of ``attacks`` whose source calls ``register_attack(...)``
(:func:`methods.registry.discover`: the folder is the list), so an attack family registers itself just by living
here. ``attacks`` imports
``methods`` (the Method/Fitted interface) and never ``bench``.

Built-in attacks: ``threshold``, ``shadow``, ``lira``, ``privgnn-attack1``, ``privgnn-attack2`` (node);
``link-stealing``, ``linkteller`` (edge); ``attribute-inference``, ``attribute-lira`` (feature, weights only),
``released-prediction`` (feature, released predictions). Membership per setting: ``attacks.membership``. The game and
what the attacker sees: ``attacks.base``. Metrics: ``attacks.metrics``.
"""

from attacks.base import (Attack, AttackReport, EdgeView, NodeView, Target, available_attacks, get_attack,
                          register_attack, run_attack, unregister_attack)
from attacks.membership import QUERY_NODES_KEY, NotApplicable

from methods.registry import discover as _discover

_discover(__name__, __path__, "register_attack")

__all__ = ["Attack", "AttackReport", "EdgeView", "NodeView", "NotApplicable", "QUERY_NODES_KEY", "Target",
           "available_attacks", "get_attack", "register_attack", "run_attack", "unregister_attack"]
