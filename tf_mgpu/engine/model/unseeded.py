"""keras.random's draws without a seed (`keras.random.normal(shape)` in a layer's call, as
keras.io's VAE samples its latent code) on several replicas.

Keras draws them from one SeedGenerator per thread, made on the thread's first draw. Each
replica of a MirroredStrategy runs in a thread of its own, so each would make its own inside
the step, where its state cannot be a mirrored variable ("Unable to lift tensor ...
seed_generator_state"; Keras's fit on several replicas fails the same way). So a run makes it
once in the strategy's scope, by the model's first forward pass or before its own
train_step's first draw (`lazy_state`), and every replica function runs with it
(`carried`). It is then one of the run's random states (`TrainState.random_states`): each
replica draws its own stream, and the checkpoint holds it, as a Dropout layer's.
"""

from tf_mgpu import internals


def begin() -> None:
    """A run's start, in its strategy's scope, before the model's first forward pass: no
    earlier run's generator (made under another strategy), nor the one a functional
    model's construction made on its symbolic tensors."""
    internals.set_global_seed_generator(None)


def made():
    """The generator the model has drawn from so far in this thread, or None."""
    generator = internals.global_seed_generator()
    return generator if hasattr(generator, "state") else None


def carried(replica_fn):
    """`replica_fn`, run on a replica's thread with this thread's generator (if any)."""
    generator = internals.global_seed_generator()
    if generator is None:
        return replica_fn

    def on_replica(*args, **kwargs):
        internals.set_global_seed_generator(generator)
        return replica_fn(*args, **kwargs)

    return on_replica


def end() -> None:
    """A run's end: Keras makes a fresh generator for what this thread draws next."""
    internals.set_global_seed_generator(None)
