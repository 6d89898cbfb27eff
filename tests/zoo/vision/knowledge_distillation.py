# keras-io: examples/vision/knowledge_distillation.py
"""Knowledge distillation on MNIST: synthetic 28x28x1 float images in [0, 1] with int
labels over 10 classes in place of the MNIST download; the teacher's widths cut from
256/512 to 64/128 and the teacher compiled but not trained first (the example's
teacher.fit is a separate run); the student-from-scratch comparison left out; Distiller
registered with a get_config/from_config for its student and teacher and a
get_compile_config/compile_from_config for its own compile arguments, so that the saved
model reloads compiled (Keras 3 does not recompile models whose compile is overridden);
Distiller marked built in __init__ (it has no call, so Keras 3 never builds it, and
count_params refuses an unbuilt model)."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers


@keras.saving.register_keras_serializable(package="zoo_knowledge_distillation")
class Distiller(keras.Model):
    def __init__(self, student, teacher, **kwargs):
        super().__init__(**kwargs)
        self.teacher = teacher
        self.student = student
        # Keras 3: the distiller has no call of its own, so nothing builds it; its
        # variables are the (built) teacher's and student's.
        self.built = True

    def compile(
        self,
        optimizer,
        metrics,
        student_loss_fn,
        distillation_loss_fn,
        alpha=0.1,
        temperature=3,
    ):
        """Configure the distiller.

        Args:
            optimizer: Keras optimizer for the student weights
            metrics: Keras metrics for evaluation
            student_loss_fn: Loss function of difference between student
                predictions and ground-truth
            distillation_loss_fn: Loss function of difference between soft
                student predictions and soft teacher predictions
            alpha: weight to student_loss_fn and 1-alpha to distillation_loss_fn
            temperature: Temperature for softening probability distributions.
                Larger temperature gives softer distributions.
        """
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def train_step(self, data):
        # Unpack data
        x, y = data

        # Forward pass of teacher
        teacher_predictions = self.teacher(x, training=False)

        with tf.GradientTape() as tape:
            # Forward pass of student
            student_predictions = self.student(x, training=True)

            # Compute losses
            student_loss = self.student_loss_fn(y, student_predictions)

            # Compute scaled distillation loss from https://arxiv.org/abs/1503.02531
            # The magnitudes of the gradients produced by the soft targets scale
            # as 1/T^2, multiply them by T^2 when using both hard and soft targets.
            distillation_loss = (
                self.distillation_loss_fn(
                    tf.nn.softmax(teacher_predictions / self.temperature, axis=1),
                    tf.nn.softmax(student_predictions / self.temperature, axis=1),
                )
                * self.temperature**2
            )

            loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss

        # Compute gradients
        trainable_vars = self.student.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)

        # Update weights
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))  # noqa: B905

        # Update the metrics configured in `compile()`.
        self.compiled_metrics.update_state(y, student_predictions)

        # Return a dict of performance
        results = {m.name: m.result() for m in self.metrics}
        results.update({"student_loss": student_loss, "distillation_loss": distillation_loss})
        return results

    def test_step(self, data):
        # Unpack the data
        x, y = data

        # Compute predictions
        y_prediction = self.student(x, training=False)

        # Calculate the loss
        student_loss = self.student_loss_fn(y, y_prediction)

        # Update the metrics.
        self.compiled_metrics.update_state(y, y_prediction)

        # Return a dict of performance
        results = {m.name: m.result() for m in self.metrics}
        results.update({"student_loss": student_loss})
        return results

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "student": keras.saving.serialize_keras_object(self.student),
                "teacher": keras.saving.serialize_keras_object(self.teacher),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config["student"] = keras.saving.deserialize_keras_object(config["student"])
        config["teacher"] = keras.saving.deserialize_keras_object(config["teacher"])
        return cls(**config)

    def get_compile_config(self):
        return {
            "optimizer": keras.saving.serialize_keras_object(self.optimizer),
            "metrics": [
                keras.saving.serialize_keras_object(m)
                for m in self._compile_config.config["metrics"]
            ],
            "student_loss_fn": keras.saving.serialize_keras_object(self.student_loss_fn),
            "distillation_loss_fn": keras.saving.serialize_keras_object(self.distillation_loss_fn),
            "alpha": self.alpha,
            "temperature": self.temperature,
        }

    def compile_from_config(self, config):
        self.compile(
            optimizer=keras.saving.deserialize_keras_object(config["optimizer"]),
            metrics=[keras.saving.deserialize_keras_object(m) for m in config["metrics"]],
            student_loss_fn=keras.saving.deserialize_keras_object(config["student_loss_fn"]),
            distillation_loss_fn=keras.saving.deserialize_keras_object(
                config["distillation_loss_fn"]
            ),
            alpha=config["alpha"],
            temperature=config["temperature"],
        )


def build_model():
    # Create the teacher
    teacher = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            layers.Conv2D(64, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(alpha=0.2),
            layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
            layers.Conv2D(128, (3, 3), strides=(2, 2), padding="same"),
            layers.Flatten(),
            layers.Dense(10),
        ],
        name="teacher",
    )

    # Create the student
    student = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(alpha=0.2),
            layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
            layers.Conv2D(32, (3, 3), strides=(2, 2), padding="same"),
            layers.Flatten(),
            layers.Dense(10),
        ],
        name="student",
    )

    # Train teacher as usual
    teacher.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )

    # Initialize and compile distiller
    distiller = Distiller(student=student, teacher=teacher)
    distiller.compile(
        optimizer=keras.optimizers.Adam(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        distillation_loss_fn=keras.losses.KLDivergence(),
        alpha=0.1,
        temperature=10,
    )
    return distiller


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        x = rng.integers(0, 256, size=(n, 28, 28)).astype("float32") / 255.0
        x = np.reshape(x, (-1, 28, 28, 1))
        y = rng.integers(0, 10, size=n)
        return x, y

    return split(128), split(64)
