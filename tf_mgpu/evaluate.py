"""Reports the loss and metrics of an exported model on its task's test split.

  python -m tf_mgpu.evaluate --model=/tmp/tf_mgpu                 # a training run's --model_dir
  python -m tf_mgpu.evaluate --model=/tmp/tf_mgpu/saved_model --num_cpu_devices=2

--model takes a run's --model_dir (its model.keras is read), a .keras file
or a SavedModel folder, as `python -m tf_mgpu.main` exports them. The run's
flags.txt, in that folder or beside the file, gives --task, --data_dir,
--manual_dir and --test_split where the command line does not: the model is
scored on the data and split its run tested it on. The test split is spread
over the replicas of --strategy, every example counted once, and one line is
printed, saying which split it scored (and the flags.txt that named it):

  tf_mgpu evaluate: test_loss 0.1234  test_acc 0.9650  examples 2,000 of test[:2000]
      (from /tmp/tf_mgpu/flags.txt)  model=PATH  replicas=2     # one line

A task whose load_data() takes no config loads its own test split: "of
load_data()'s test split". The loss is the mean cross-entropy of the predicted
probabilities. Errors are one line and the exit codes of tf_mgpu.main (see
tf_mgpu/errors.py).
"""

# The only module that defines these flags; tf_mgpu.outputs.flagfile sets those the run's
# flags.txt gives, and tf_mgpu.outputs.export does the work.

from absl import app, flags

from tf_mgpu import cli, tasks
from tf_mgpu.config import STRATEGIES, Config
from tf_mgpu.outputs import flagfile

_RUNS = "default: the run's, from flags.txt in the --model_dir (or beside --model), else"
_TASK = flags.DEFINE_string(
    "task",
    tasks.DEFAULT,
    "The task the model was trained on, as main's --task: its load_data() gives the test "
    f"split, and its compiled loss and metrics are measured; {_RUNS} {tasks.DEFAULT}.",
)
_MODEL = flags.DEFINE_string(
    "model", None, "A run's --model_dir, its model.keras, or its saved_model/ folder."
)
_STRATEGY = flags.DEFINE_enum(
    "strategy",
    "mirrored",
    STRATEGIES,
    "mirrored: one replica per local GPU (or per logical CPU device); "
    "multi_worker_mirrored: the workers of TF_CONFIG, each running this command; "
    "one_device: the first GPU or the CPU; default: no distribution.",
)
_BATCH_SIZE = flags.DEFINE_integer(
    "batch_size",
    256,
    "Test examples per replica per step; the last step is padded with examples that count "
    "for nothing.",
    lower_bound=1,
)
_NUM_CPU_DEVICES = flags.DEFINE_integer(
    "num_cpu_devices",
    1,
    "Split the CPU into this many logical devices, so --strategy=mirrored runs that many "
    "replicas on a machine without GPUs.",
    lower_bound=1,
)
_DATA_DIR = flags.DEFINE_string(
    "data_dir", None, f"Where TFDS keeps prepared datasets; {_RUNS} TFDS's own."
)
_MANUAL_DIR = flags.DEFINE_string(
    "manual_dir",
    None,
    "Folder holding the four original MNIST .gz files: TFDS prepares the data from them "
    f"into --data_dir, once, with no network; {_RUNS} none.",
)
_TEST_SPLIT = flags.DEFINE_string(
    "test_split",
    "test",
    f"TFDS split to evaluate on, e.g. 'test[:1000]'; every example counts; {_RUNS} test.",
)


def evaluate() -> str:
    """Evaluates --model as the flags say; returns the line to print, or '' off the chief."""
    taken = flagfile.take(_MODEL.value)  # the run's task and data, where not given
    tasks.check(_TASK.value)
    # TensorFlow loads here, after flags parse: --help and flag errors do not wait for it.
    from tf_mgpu.cluster import startup_checks, tf_config
    from tf_mgpu.engine.distribute import devices, strategies
    from tf_mgpu.engine.input import stream
    from tf_mgpu.outputs import report
    from tf_mgpu.tasks import adapter

    node = tf_config.node_from_env()
    # Inputs are checked before joining a cluster, where peers would wait for us.
    startup_checks.strategy(_STRATEGY.value, node, _NUM_CPU_DEVICES.value)
    work = adapter.load(_TASK.value)
    model = _locate(work)
    devices.grow_gpu_memory(True)
    devices.split_cpu(_NUM_CPU_DEVICES.value)
    strategy = strategies.create(_STRATEGY.value, node)
    # A task's loader reads both splits; one training example is all MNIST needs here.
    config = Config(
        task=_TASK.value,
        data_dir=_DATA_DIR.value,
        manual_dir=_MANUAL_DIR.value,
        train_split="train[:1]",
        test_split=_TEST_SPLIT.value,
    )
    test = stream.materialized(work.load_data(config)).test  # a tf.data split, read whole
    result = _measure(work, model, strategy, test)
    if not node.is_chief:
        return ""
    return (
        f"tf_mgpu evaluate: {report.values(result, 'test', loss_first=True)}"
        f"  examples {result['test_examples']:,} of {_scored(work, taken)}"
        f"  model={model}  replicas={strategy.num_replicas_in_sync}"
    )


def _scored(work, taken: flagfile.Taken) -> str:
    """Which test split was scored, and where its name came from."""
    if not work.reads_config:
        return "load_data()'s test split"
    return _TEST_SPLIT.value + (f" (from {taken.path})" if "test_split" in taken.names else "")


def _locate(work) -> str:
    if work.export is not None:  # the MNIST tasks' uint8 export
        from tf_mgpu.tasks.mnist import serving

        return serving.locate(_MODEL.value)
    from tf_mgpu.outputs import export

    return export.locate(_MODEL.value)


def _measure(work, model: str, strategy, test) -> dict:
    """Loss and metrics of the exported `model` over `test`, as training measured them."""
    if work.export is not None:
        from tf_mgpu.tasks.mnist import serving

        with strategy.scope():
            classifier = serving.load(model)
        return serving.evaluate(classifier, strategy, test, _BATCH_SIZE.value)
    from tf_mgpu.engine.step import evaluation
    from tf_mgpu.outputs import export

    # The task's own losses, metrics and Lambda functions, found on a model it builds (what
    # the export found them on), so that Keras reads a model.keras that names them.
    own = export.own_objects(work.build_model())
    with strategy.scope():
        net = export.load(model, own)
    # The compiled loss and metrics (or the model's own test_step), as training measured them.
    return evaluation.evaluate(
        strategy, net, test, _BATCH_SIZE.value, preprocess=work.preprocess, where=f"--model={model}"
    )


def main(argv: list[str]) -> None:
    cli.refuse_arguments(argv)
    cli.quiet_tensorflow()
    cli.run(_print_evaluation)


def _print_evaluation() -> None:
    line = evaluate()
    if line:
        print(line)


if __name__ == "__main__":
    flags.mark_flag_as_required("model")
    app.run(main, flags_parser=cli.parse_flags)
