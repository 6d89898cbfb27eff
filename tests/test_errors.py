"""tf_mgpu.errors: every exit code is described once at length and once in brief."""

from tf_mgpu import errors
from tf_mgpu.cluster import launcher


def test_every_exit_code_has_a_meaning_and_a_brief_one_the_launcher_says():
    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert set(errors.MEANINGS) == codes
    assert set(errors.BRIEF) == codes
    assert launcher.describe(errors.EXIT_PEER_LOST) == "exit 6 (lost a peer)"
    assert launcher.describe(137) == "exit 137 (killed by SIGKILL)"
