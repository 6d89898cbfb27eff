"""Trains a Keras model (a task file, or the built-in MNIST MLP) on any tf.distribute strategy.

  python -m tf_mgpu.main --strategy=mirrored                  # every local GPU, or the CPU
  python -m tf_mgpu.main --task=my_task.py --strategy=mirrored  # your build_model/load_data
  python -m tf_mgpu.main --flagfile=flags/cpu_smoke.cfg --manual_dir=DIR   # offline, seconds
  TF_CONFIG=... python -m tf_mgpu.main --strategy=multi_worker_mirrored   # on every worker

The default task is the seed tutorial's MNIST MLP; offline, --manual_dir
names a folder with the four original MNIST .gz files.
Outputs (summary.json, metrics.jsonl, flags.txt, model.weights.h5) and
checkpoints go to --model_dir; running the same command again resumes there.
Exit codes: see tf_mgpu/errors.py and docs/failures.md.
"""

# This is the only module that reads flags: it turns them into one
# `tf_mgpu.config.Config` and hands that to `tf_mgpu.training.run`.

import functools
import os
import sys

from absl import app, flags

from tf_mgpu import api, cli, compile_cache, tasks, timing
from tf_mgpu.cluster import kubernetes_env, slurm_env, supervisor, tf_config
from tf_mgpu.config import Config
from tf_mgpu.engine.faults import stopping

_SETTINGS = cli.define_settings(Config, builtin=", ".join(tasks.BUILTIN))
for _name in _SETTINGS:
    flags.declare_key_flag(_name)  # listed by --help as this command's own
_CLUSTER_RESOLVER = flags.DEFINE_enum(
    "cluster_resolver",
    "tf_config",
    ("tf_config", "slurm", "kubernetes"),
    "Where the cluster comes from: tf_config reads TF_CONFIG (as a Kubeflow TFJob and "
    "`python -m tf_mgpu.launch` set it; none means one machine); slurm builds it from the "
    "Slurm job this task runs in (`srun python -m tf_mgpu.main --cluster_resolver=slurm`); "
    "kubernetes from this pod's index in an Indexed Job (JOB_COMPLETION_INDEX) and the "
    "TF_MGPU_WORKERS and TF_MGPU_SERVICE its manifest sets (docs/multi-worker.md).",
)
_SLURM_PORT_BASE = flags.DEFINE_integer(
    "slurm_port_base",
    8888,
    "With --cluster_resolver=slurm: task i of a node listens on this port + i; pick a "
    "range that is free on every node.",
    lower_bound=1024,
    upper_bound=65000,
)


def config_from_flags() -> Config:
    """Every setting's flag sets the Config field of the same name."""
    return Config(**{holder.name: holder.value for holder in _SETTINGS.values()})


_PATH_FLAGS = ("data_dir", "manual_dir", "model_dir")


def _replayable(holder, value):
    """A path flag made absolute, so flags.txt replays from any directory; a task file too."""
    if holder.name in _PATH_FLAGS or (holder.name == "task" and tasks.is_file(value)):
        return os.path.abspath(value)
    return value


# Not part of the training recipe, but part of how the job ran.
_JOB_FLAGS = (_CLUSTER_RESOLVER, _SLURM_PORT_BASE)


def flagfile_text() -> str:
    """A flagfile that replays this run from any directory: `--flagfile=MODEL_DIR/flags.txt`."""
    lines = []
    for holder in (*_SETTINGS.values(), *_JOB_FLAGS):
        value = holder.value
        # --clean is an action on this run, not its recipe: replaying flags.txt to
        # resume must not delete the checkpoints it resumes from.
        if value is not None and holder is not _SETTINGS["clean"]:
            value = _replayable(holder, value)
            lines.append(f"--{holder.name}={value}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    cli.refuse_arguments(argv)
    config = config_from_flags()
    cli.quiet_tensorflow()
    cli.run(functools.partial(_run, config))


def _run(config: Config) -> None:
    clock = timing.Phases(since_process_start=True)
    if _CLUSTER_RESOLVER.value == "slurm" and not supervisor.is_child():
        # TF_CONFIG (and, on GPU nodes, CUDA_VISIBLE_DEVICES) for this process and the
        # trainer child it starts; neither reads a Slurm variable afterwards.
        os.environ.update(slurm_env.environment(port_base=_SLURM_PORT_BASE.value))
    if _CLUSTER_RESOLVER.value == "kubernetes" and not supervisor.is_child():
        os.environ["TF_CONFIG"] = kubernetes_env.tf_config()  # pure Python: no TensorFlow yet
    node = tf_config.node_from_env()
    api.check_before_tensorflow(config, node)  # a typo costs under a second
    if node.num_workers > 1 and not supervisor.is_child():
        code = supervisor.supervise(
            sys.argv,
            task=str(node),
            addresses=node.addresses,
            startup_timeout=config.startup_timeout,
            peer_timeout=config.peer_timeout,
        )
        cli.exit_now(code)
    supervisor.bind_to_parent()
    compile_cache.enable(config.compile_cache, config.data_dir)
    stop = stopping.Stop()
    stop.install()
    # TensorFlow loads here, after flags parse: --help and flag errors do not wait for it.
    from tf_mgpu import training

    clock.mark("import")
    splits_given = bool(_SETTINGS["train_split"].present or _SETTINGS["test_split"].present)
    training.run(
        config, flagfile=flagfile_text(), stop=stop, clock=clock, splits_given=splits_given
    )


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags)
