"""A trainer model with no call() of its own whose train_step updates compile's metrics, as
keras.io's consistency training (SelfTrainer) and distillation examples write it: Keras
builds those metrics on their first update, inside the step."""

import keras
import numpy as np
import tensorflow as tf


class Trainer(keras.Model):
    def __init__(self, student, **kwargs):
        super().__init__(**kwargs)
        self.student = student

    def compile(self, optimizer, metrics, loss_fn):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.loss_fn = loss_fn

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self.student(x, training=True)
            loss = self.loss_fn(y, y_pred)
        grads = tape.gradient(loss, self.student.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.student.trainable_variables, strict=True))
        self.compiled_metrics.update_state(y, y_pred)
        return {**{m.name: m.result() for m in self.metrics}, "student_loss": loss}

    def test_step(self, data):
        x, y = data
        self.compiled_metrics.update_state(y, self.student(x, training=False))
        return {m.name: m.result() for m in self.metrics}


def build_model():
    student = keras.Sequential([keras.Input((8,)), keras.layers.Dense(3)])
    model = Trainer(student)
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        metrics=["sparse_categorical_accuracy"],
        loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def load_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(192, 8)).astype("float32")
    y = np.argmax(x[:, :3], axis=1).astype("int32")
    return (x[:128], y[:128]), (x[128:], y[128:])
