"""The mechanism kinds of the mechanism-level audit (:mod:`audits.mechanism`), one module per kind as
:mod:`audits.checks` holds one per check. Each module declares, for its kind: the ledger event the methods record,
its worst-case neighbouring pair and that pair's family of trade-off functions, whether the pair is proven to
dominate the event (with the theorem, or why not and the sound bound the claim is instead), its claim, its trial
runner (the methods' own code run on the pair, many trials a call) and its mutants (broken variants its audit
flags), and registers them (:func:`register`, with its place in the order). A new mechanism is one new file here,
or a plugin calling :func:`register`; ``tests/test_mechanism_registry.py`` holds every registered one to the
contract.

Shared pieces: :mod:`~audits.mechanisms.base` (the declaration, mutations), :mod:`~audits.mechanisms.families`
(trade-off families several kinds use), ``_nap`` and ``_dpsgd`` (the code paths several kinds drive), ``_search``
(a kind that audits the strongest of several candidate pairs, chosen on the selection half).

Kinds on neighbouring input graphs (``nap_node_input``, ``dpgnn_input``) audit the shipped relations and, as known
violations (``known_violation``), the papers' ones; each is declared a ``variant_of`` the kind ledger events map
to."""

from audits.mechanisms.base import DEFAULT_TRIALS, Mechanism, Mutation, Sampler, SoundBound
from audits.mechanisms.registry import (MECHANISMS, audited_kinds, built_ins, known_violations, mechanism_for, names,
                                       register, unregister)
from methods.registry import discover as _discover

# the built-in kinds: every module here that registers one (each declares its place in the order the audits run and
# ledger kinds are matched)
with built_ins():
    _discover(__name__, __path__, "register")

#: the ledger event kinds the built-in mechanism-level audits cover
AUDITED_KINDS = audited_kinds()

__all__ = ["AUDITED_KINDS", "DEFAULT_TRIALS", "MECHANISMS", "Mechanism", "Mutation", "Sampler", "SoundBound",
           "audited_kinds", "known_violations", "mechanism_for", "names", "register", "unregister"]
