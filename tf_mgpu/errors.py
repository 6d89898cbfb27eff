"""How a run ends when it cannot finish: one exception per outcome, each with its exit code.

`tf_mgpu.main` prints any of them as one line, `tf_mgpu: error: ...` (or
`tf_mgpu: stopped: ...`), and exits with its code, without a traceback. The
codes are the same on every path; `MEANINGS` says what each means, and
docs/reference.md (generated from it) and docs/failures.md list them.
"""

EXIT_OK = 0
EXIT_BUG = 1
EXIT_USAGE = 2
EXIT_USER_ERROR = 3
EXIT_DIVERGED = 4
EXIT_NOT_EQUIVALENT = 4  # tf_mgpu.check: N replicas do not train like one device
EXIT_PEERS_UNREACHABLE = 5
EXIT_PEER_LOST = 6
EXIT_STOPPED = 75

# What each code means: docs/reference.md's table of exit codes is generated from this.
MEANINGS = {
    EXIT_OK: "success (or nothing left to train)",
    EXIT_BUG: "a bug in tf_mgpu: an unexpected exception, with its traceback",
    EXIT_USAGE: "bad command line or setting: unknown flag, wrong type, value out of range",
    EXIT_USER_ERROR: "bad input: TF_CONFIG, data, --model_dir, checkpoints, disk, device memory",
    EXIT_DIVERGED: "training diverged: the loss is not finite, and the last good checkpoint "
    "is kept; from tf_mgpu.check: N replicas do not train like one device",
    EXIT_PEERS_UNREACHABLE: "a peer never started within --startup_timeout",
    EXIT_PEER_LOST: "a peer was lost during training; rerunning the same command resumes",
    EXIT_STOPPED: "stopped by SIGTERM or SIGINT after saving a checkpoint; rerunning resumes "
    '(EX_TEMPFAIL: "try again later")',
}
# The same, in the few words the launcher's lines give each worker's exit ('exit 6 (lost a
# peer)'): one table of codes, so a new code is described in both or the test of both fails.
BRIEF = {
    EXIT_OK: "success",
    EXIT_BUG: "a bug or a crash",
    EXIT_USAGE: "bad command line",
    EXIT_USER_ERROR: "bad input",
    EXIT_DIVERGED: "diverged",
    EXIT_PEERS_UNREACHABLE: "a peer never started",
    EXIT_PEER_LOST: "lost a peer",
    EXIT_STOPPED: "stopped after saving",
}


class Failure(Exception):  # noqa: N818 (an outcome, not always an error)
    """An expected way for a run to end early; the message is the whole story."""

    exit_code = EXIT_BUG
    prefix = "error"


class UserError(Failure):
    """A problem the user can fix (flag, TF_CONFIG, data, model dir); its message names the fix."""

    exit_code = EXIT_USER_ERROR


class SettingError(UserError):
    """A setting outside what its declaration allows (type, choices, bounds): a flag's, or a
    `tf_mgpu.train` argument's; the message names the setting and what it takes."""

    exit_code = EXIT_USAGE


class Diverged(Failure):
    """The training loss stopped being finite."""

    exit_code = EXIT_DIVERGED


class PeersUnreachable(Failure):
    """Some task of TF_CONFIG never started."""

    exit_code = EXIT_PEERS_UNREACHABLE


class PeerLost(Failure):
    """A task of the cluster died, froze or became unreachable during training."""

    exit_code = EXIT_PEER_LOST


class Stopped(Failure):
    """SIGTERM or SIGINT asked the run to stop; what was trained is saved."""

    exit_code = EXIT_STOPPED
    prefix = "stopped"


def line(failure: Failure) -> str:
    """The one line printed for `failure`."""
    return f"tf_mgpu: {failure.prefix}: {failure}"
