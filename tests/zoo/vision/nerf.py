# keras-io: examples/vision/nerf.py
"""NeRF on the tiny NeRF scene: synthetic 8x8x3 float images in [0, 1] with random camera
poses (4x4, the camera at distance 4 looking at the origin) and focal length 11.1 in
place of the tiny_nerf_data.npz download (100x100, focal 138.9); NUM_SAMPLES 8 in place
of 32; BATCH_SIZE 32 in place of 5, as render_rgb_depth reshapes the predictions to
BATCH_SIZE images (the check's fit batches by 32); the rays of each pose computed once,
in load_data, by the example's map_fn (not on every pass of the tf.data pipeline), and
returned as unbatched (image, (rays_flat, t_vals)) elements; NeRF registered with a
get_config/from_config for its nerf_model and a get_compile_config/compile_from_config
for its own compile arguments, so that the saved model reloads compiled; NeRF marked
built in __init__ (it has no call); the TrainMonitor callback (plots and files) and the
rendering of novel views left out."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

PACKAGE = "zoo_nerf"

# Initialize global variables.
BATCH_SIZE = 32
NUM_SAMPLES = 8
POS_ENCODE_DIMS = 16
H = W = 8
focal = 11.1


def encode_position(x):
    """Encodes the position into its corresponding Fourier feature.

    Args:
        x: The input coordinate.

    Returns:
        Fourier features tensors of the position.
    """
    positions = [x]
    for i in range(POS_ENCODE_DIMS):
        for fn in [tf.sin, tf.cos]:
            positions.append(fn(2.0**i * x))
    return tf.concat(positions, axis=-1)


def get_rays(height, width, focal, pose):
    """Computes origin point and direction vector of rays.

    Args:
        height: Height of the image.
        width: Width of the image.
        focal: The focal length between the images and the camera.
        pose: The pose matrix of the camera.

    Returns:
        Tuple of origin point and direction vector for rays.
    """
    # Build a meshgrid for the rays.
    i, j = tf.meshgrid(
        tf.range(width, dtype=tf.float32),
        tf.range(height, dtype=tf.float32),
        indexing="xy",
    )

    # Normalize the x axis coordinates.
    transformed_i = (i - width * 0.5) / focal

    # Normalize the y axis coordinates.
    transformed_j = (j - height * 0.5) / focal

    # Create the direction unit vectors.
    directions = tf.stack([transformed_i, -transformed_j, -tf.ones_like(i)], axis=-1)

    # Get the camera matrix.
    camera_matrix = pose[:3, :3]
    height_width_focal = pose[:3, -1]

    # Get origins and directions for the rays.
    transformed_dirs = directions[..., None, :]
    camera_dirs = transformed_dirs * camera_matrix
    ray_directions = tf.reduce_sum(camera_dirs, axis=-1)
    ray_origins = tf.broadcast_to(height_width_focal, tf.shape(ray_directions))

    # Return the origins and directions.
    return (ray_origins, ray_directions)


def render_flat_rays(ray_origins, ray_directions, near, far, num_samples, rand=False):
    """Renders the rays and flattens it.

    Args:
        ray_origins: The origin points for rays.
        ray_directions: The direction unit vectors for the rays.
        near: The near bound of the volumetric scene.
        far: The far bound of the volumetric scene.
        num_samples: Number of sample points in a ray.
        rand: Choice for randomising the sampling strategy.

    Returns:
       Tuple of flattened rays and sample points on each rays.
    """
    # Compute 3D query points.
    # Equation: r(t) = o+td -> Building the "t" here.
    t_vals = tf.linspace(near, far, num_samples)
    if rand:
        # Inject uniform noise into sample space to make the sampling
        # continuous.
        shape = list(ray_origins.shape[:-1]) + [num_samples]  # noqa: RUF005
        noise = tf.random.uniform(shape=shape) * (far - near) / num_samples
        t_vals = t_vals + noise

    # Equation: r(t) = o + td -> Building the "r" here.
    rays = ray_origins[..., None, :] + (ray_directions[..., None, :] * t_vals[..., None])
    rays_flat = tf.reshape(rays, [-1, 3])
    rays_flat = encode_position(rays_flat)
    return (rays_flat, t_vals)


def map_fn(pose):
    """Maps individual pose to flattened rays and sample points.

    Args:
        pose: The pose matrix of the camera.

    Returns:
        Tuple of flattened rays and sample points corresponding to the
        camera pose.
    """
    (ray_origins, ray_directions) = get_rays(height=H, width=W, focal=focal, pose=pose)
    (rays_flat, t_vals) = render_flat_rays(
        ray_origins=ray_origins,
        ray_directions=ray_directions,
        near=2.0,
        far=6.0,
        num_samples=NUM_SAMPLES,
        rand=True,
    )
    return (rays_flat, t_vals)


def get_nerf_model(num_layers, num_pos):
    """Generates the NeRF neural network.

    Args:
        num_layers: The number of MLP layers.
        num_pos: The number of dimensions of positional encoding.

    Returns:
        The `tf.keras` model.
    """
    inputs = keras.Input(shape=(num_pos, 2 * 3 * POS_ENCODE_DIMS + 3))
    x = inputs
    for i in range(num_layers):
        x = layers.Dense(units=64, activation="relu")(x)
        if i % 4 == 0 and i > 0:
            # Inject residual connection.
            x = layers.concatenate([x, inputs], axis=-1)
    outputs = layers.Dense(units=4)(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def render_rgb_depth(model, rays_flat, t_vals, rand=True, train=True):
    """Generates the RGB image and depth map from model prediction.

    Args:
        model: The MLP model that is trained to predict the rgb and
            volume density of the volumetric scene.
        rays_flat: The flattened rays that serve as the input to
            the NeRF model.
        t_vals: The sample points for the rays.
        rand: Choice to randomise the sampling strategy.
        train: Whether the model is in the training or testing phase.

    Returns:
        Tuple of rgb image and depth map.
    """
    # Get the predictions from the nerf model and reshape it.
    if train:  # noqa: SIM108
        predictions = model(rays_flat)
    else:
        predictions = model.predict(rays_flat)
    predictions = tf.reshape(predictions, shape=(BATCH_SIZE, H, W, NUM_SAMPLES, 4))

    # Slice the predictions into rgb and sigma.
    rgb = tf.sigmoid(predictions[..., :-1])
    sigma_a = tf.nn.relu(predictions[..., -1])

    # Get the distance of adjacent intervals.
    delta = t_vals[..., 1:] - t_vals[..., :-1]
    # delta shape = (num_samples)
    if rand:
        delta = tf.concat([delta, tf.broadcast_to([1e10], shape=(BATCH_SIZE, H, W, 1))], axis=-1)
        alpha = 1.0 - tf.exp(-sigma_a * delta)
    else:
        delta = tf.concat([delta, tf.broadcast_to([1e10], shape=(BATCH_SIZE, 1))], axis=-1)
        alpha = 1.0 - tf.exp(-sigma_a * delta[:, None, None, :])

    # Get transmittance.
    exp_term = 1.0 - alpha
    epsilon = 1e-10
    transmittance = tf.math.cumprod(exp_term + epsilon, axis=-1, exclusive=True)
    weights = alpha * transmittance
    rgb = tf.reduce_sum(weights[..., None] * rgb, axis=-2)

    if rand:
        depth_map = tf.reduce_sum(weights * t_vals, axis=-1)
    else:
        depth_map = tf.reduce_sum(weights * t_vals[:, None, None], axis=-1)
    return (rgb, depth_map)


@keras.saving.register_keras_serializable(package=PACKAGE)
class NeRF(keras.Model):
    def __init__(self, nerf_model, **kwargs):
        super().__init__(**kwargs)
        self.nerf_model = nerf_model
        # Keras 3: the model has no call of its own, so nothing builds it.
        self.built = True

    def compile(self, optimizer, loss_fn):
        super().compile()
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.psnr_metric = keras.metrics.Mean(name="psnr")

    def train_step(self, inputs):
        # Get the images and the rays.
        (images, rays) = inputs
        (rays_flat, t_vals) = rays

        with tf.GradientTape() as tape:
            # Get the predictions from the model.
            rgb, _ = render_rgb_depth(
                model=self.nerf_model, rays_flat=rays_flat, t_vals=t_vals, rand=True
            )
            loss = self.loss_fn(images, rgb)

        # Get the trainable variables.
        trainable_variables = self.nerf_model.trainable_variables

        # Get the gradeints of the trainiable variables with respect to the loss.
        gradients = tape.gradient(loss, trainable_variables)

        # Apply the grads and optimize the model.
        self.optimizer.apply_gradients(zip(gradients, trainable_variables))  # noqa: B905

        # Get the PSNR of the reconstructed images and the source images.
        psnr = tf.image.psnr(images, rgb, max_val=1.0)

        # Compute our own metrics
        self.loss_tracker.update_state(loss)
        self.psnr_metric.update_state(psnr)
        return {"loss": self.loss_tracker.result(), "psnr": self.psnr_metric.result()}

    def test_step(self, inputs):
        # Get the images and the rays.
        (images, rays) = inputs
        (rays_flat, t_vals) = rays

        # Get the predictions from the model.
        rgb, _ = render_rgb_depth(
            model=self.nerf_model, rays_flat=rays_flat, t_vals=t_vals, rand=True
        )
        loss = self.loss_fn(images, rgb)

        # Get the PSNR of the reconstructed images and the source images.
        psnr = tf.image.psnr(images, rgb, max_val=1.0)

        # Compute our own metrics
        self.loss_tracker.update_state(loss)
        self.psnr_metric.update_state(psnr)
        return {"loss": self.loss_tracker.result(), "psnr": self.psnr_metric.result()}

    @property
    def metrics(self):
        return [self.loss_tracker, self.psnr_metric]

    def get_config(self):
        config = super().get_config()
        config["nerf_model"] = keras.saving.serialize_keras_object(self.nerf_model)
        return config

    @classmethod
    def from_config(cls, config):
        config["nerf_model"] = keras.saving.deserialize_keras_object(config["nerf_model"])
        return cls(**config)

    def get_compile_config(self):
        return {
            "optimizer": keras.saving.serialize_keras_object(self.optimizer),
            "loss_fn": keras.saving.serialize_keras_object(self.loss_fn),
        }

    def compile_from_config(self, config):
        self.compile(
            optimizer=keras.saving.deserialize_keras_object(config["optimizer"]),
            loss_fn=keras.saving.deserialize_keras_object(config["loss_fn"]),
        )


def build_model():
    num_pos = H * W * NUM_SAMPLES
    nerf_model = get_nerf_model(num_layers=8, num_pos=num_pos)

    model = NeRF(nerf_model)
    model.compile(optimizer=keras.optimizers.Adam(), loss_fn=keras.losses.MeanSquaredError())
    return model


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        images = rng.uniform(0, 1, size=(n, H, W, 3)).astype("float32")
        poses = np.zeros((n, 4, 4), dtype="float32")
        for k in range(n):
            rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
            poses[k, :3, :3] = rotation
            poses[k, :3, 3] = rotation[:, 2] * 4.0  # looking along -z at the origin
            poses[k, 3, 3] = 1.0
        rays = list(tf.data.Dataset.from_tensor_slices(poses).map(map_fn))
        rays_flat = np.stack([r.numpy() for r, _ in rays])
        t_vals = np.stack([t.numpy() for _, t in rays])
        return tf.data.Dataset.from_tensor_slices((images, (rays_flat, t_vals)))

    return split(128), split(64)
