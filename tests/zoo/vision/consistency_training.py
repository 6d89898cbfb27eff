# keras-io: examples/vision/consistency_training.py
"""The student stage of consistency training (SelfTrainer, its own train_step and test_step):
synthetic uint8-valued float32 32x32x3 images with labels 0-9 of shape (n, 1) in place of
CIFAR-10 cropped to 72x72; training pairs ((clean images, labels), (noisy images, labels))
as its zipped datasets give them, the noisy copy a fixed perturbation of the clean one in
place of RandAugment (tf-models-official is not installed); the teacher is an untrained
get_training_model() in place of one trained with tfa.optimizers.SWA (TensorFlow Addons is
not installed); ResNet50V2 (weights=None, as the example has it) built by Keras's own
ResNet builder with 2 blocks a stage and widths 8/16/32/64 (the full one took over 3 minutes
for an epoch here); SelfTrainer given
get_config/from_config and get_compile_config/compile_from_config, and marked built (it has
no call()), so it can be saved; its ReduceLROnPlateau and EarlyStopping kept in
callbacks(). A validation split of 32 examples, as the example's fit takes validation data."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers
from keras.src.applications import resnet

CROP_TO = 32


def small_resnet50_v2(include_top=False, weights=None, input_shape=None):
    """keras.applications.ResNet50V2's own builder, with 2 blocks a stage (its least) instead
    of 3/4/6/3 and stage widths 8/16/32/64 instead of 64/128/256/512."""

    def stack_fn(x):
        x = resnet.stack_residual_blocks_v2(x, 8, 2, name="conv2")
        x = resnet.stack_residual_blocks_v2(x, 16, 2, name="conv3")
        x = resnet.stack_residual_blocks_v2(x, 32, 2, name="conv4")
        return resnet.stack_residual_blocks_v2(x, 64, 2, stride1=1, name="conv5")

    return resnet.ResNet(
        stack_fn,
        True,
        True,
        name="resnet50v2",
        include_top=include_top,
        weights=weights,
        input_shape=input_shape,
    )


def get_training_model(num_classes=10):
    resnet50_v2 = small_resnet50_v2(
        weights=None,
        include_top=False,
        input_shape=(CROP_TO, CROP_TO, 3),
    )
    model = tf.keras.Sequential(
        [
            layers.Input((CROP_TO, CROP_TO, 3)),
            layers.Rescaling(scale=1.0 / 127.5, offset=-1),
            resnet50_v2,
            layers.GlobalAveragePooling2D(),
            layers.Dense(num_classes),
        ]
    )
    return model


# Majority of the code is taken from:
# https://keras.io/examples/vision/knowledge_distillation/
@keras.saving.register_keras_serializable(package="zoo_consistency_training")
class SelfTrainer(tf.keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.student = student
        self.teacher = teacher

    def compile(
        self,
        optimizer,
        metrics,
        student_loss_fn,
        distillation_loss_fn,
        temperature=3,
    ):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.temperature = temperature

    def train_step(self, data):
        # Since our dataset is a zip of two independent datasets,
        # after initially parsing them, we segregate the
        # respective images and labels next.
        clean_ds, noisy_ds = data
        clean_images, _ = clean_ds
        noisy_images, y = noisy_ds

        # Forward pass of teacher
        teacher_predictions = self.teacher(clean_images, training=False)

        with tf.GradientTape() as tape:
            # Forward pass of student
            student_predictions = self.student(noisy_images, training=True)

            # Compute losses
            student_loss = self.student_loss_fn(y, student_predictions)
            distillation_loss = self.distillation_loss_fn(
                tf.nn.softmax(teacher_predictions / self.temperature, axis=1),
                tf.nn.softmax(student_predictions / self.temperature, axis=1),
            )
            total_loss = (student_loss + distillation_loss) / 2

        # Compute gradients
        trainable_vars = self.student.trainable_variables
        gradients = tape.gradient(total_loss, trainable_vars)

        # Update weights
        self.optimizer.apply_gradients(zip(gradients, trainable_vars, strict=False))

        # Update the metrics configured in `compile()`
        self.compiled_metrics.update_state(y, tf.nn.softmax(student_predictions, axis=1))

        # Return a dict of performance
        results = {m.name: m.result() for m in self.metrics}
        results.update({"total_loss": total_loss})
        return results

    def test_step(self, data):
        # During inference, we only pass a dataset consisting images and labels.
        x, y = data

        # Compute predictions
        y_prediction = self.student(x, training=False)

        # Update the metrics
        self.compiled_metrics.update_state(y, tf.nn.softmax(y_prediction, axis=1))

        # Return a dict of performance
        results = {m.name: m.result() for m in self.metrics}
        return results

    def get_config(self):
        return {
            "student": keras.saving.serialize_keras_object(self.student),
            "teacher": keras.saving.serialize_keras_object(self.teacher),
        }

    @classmethod
    def from_config(cls, config):
        return cls(
            student=keras.saving.deserialize_keras_object(config["student"]),
            teacher=keras.saving.deserialize_keras_object(config["teacher"]),
        )

    def get_compile_config(self):
        return {
            "optimizer": keras.saving.serialize_keras_object(self.optimizer),
            "metrics": ["accuracy"],
            "student_loss_fn": keras.saving.serialize_keras_object(self.student_loss_fn),
            "distillation_loss_fn": keras.saving.serialize_keras_object(self.distillation_loss_fn),
            "temperature": self.temperature,
        }

    def compile_from_config(self, config):
        self.compile(
            optimizer=keras.saving.deserialize_keras_object(config["optimizer"]),
            metrics=config["metrics"],
            student_loss_fn=keras.saving.deserialize_keras_object(config["student_loss_fn"]),
            distillation_loss_fn=keras.saving.deserialize_keras_object(
                config["distillation_loss_fn"]
            ),
            temperature=config["temperature"],
        )


def build_model():
    teacher_model = get_training_model()
    self_trainer = SelfTrainer(student=get_training_model(), teacher=teacher_model)
    self_trainer.compile(
        # Notice we are *not* using SWA here.
        optimizer="adam",
        metrics=["accuracy"],
        student_loss_fn=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        distillation_loss_fn=tf.keras.losses.KLDivergence(),
        temperature=10,
    )
    # SelfTrainer has no call(); its parts are built, so mark it built for save.
    self_trainer.built = True
    return self_trainer


def callbacks():
    # We are using a larger decay factor to stabilize the training.
    reduce_lr = tf.keras.callbacks.ReduceLROnPlateau(patience=3, factor=0.5, monitor="val_accuracy")
    early_stopping = tf.keras.callbacks.EarlyStopping(
        patience=10, restore_best_weights=True, monitor="val_accuracy"
    )
    return [reduce_lr, early_stopping]


def load_data():
    rng = np.random.default_rng(0)

    def images(n):
        return rng.integers(0, 256, size=(n, CROP_TO, CROP_TO, 3)).astype("float32")

    clean = images(128)
    noisy = np.clip(clean + rng.normal(0.0, 25.0, size=clean.shape), 0, 255).astype("float32")
    labels = rng.integers(0, 10, size=(128, 1)).astype("uint8")
    test_x, test_y = images(64), rng.integers(0, 10, size=(64, 1)).astype("uint8")
    # Validated by its test_step, on (images, labels) as the example's validation_ds gives them.
    val_x, val_y = images(32), rng.integers(0, 10, size=(32, 1)).astype("uint8")
    return ((clean, labels), (noisy, labels)), (val_x, val_y), (test_x, test_y)
