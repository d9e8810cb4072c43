"""The contract every registered attack meets: the checks of ``bench.testing``, as a plugin author's own test runs
them (its level and options declared; its game played against a GCN on both contract tasks, or why not)."""

from bench.testing import parametrize_with_attacks


@parametrize_with_attacks()
def test_attack_contract(attack, check):
    check(attack)
