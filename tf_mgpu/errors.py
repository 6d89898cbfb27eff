"""The one exception type that means "the user must change something"."""


class UserError(Exception):
    """A problem the user can fix (flag, TF_CONFIG, data); its message names the fix.

    `tf_mgpu.main` prints it as one line and exits non-zero, without a traceback.
    """
