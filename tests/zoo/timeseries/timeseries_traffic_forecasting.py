# keras-io: examples/timeseries/timeseries_traffic_forecasting.py
"""Traffic forecasting with graph convolution and LSTM: synthetic normalized speed windows
(12 past steps, 3-step multi-horizon targets) over 8 roads (cut from 26) and a synthetic
road-distance matrix turned into the graph by the example's `compute_adjacency_matrix`,
in place of the PeMSD7 download; out_feat cut from 10 to 4 and lstm_units from 64 to 8;
`GraphConv.weight` made with `add_weight` in place of a bare `tf.Variable` (Keras 3 does
not track it), and the layers take `**kwargs` and have `get_config()` (the graph as a
dict) for saving. A validation split of 32 examples, as the
example's fit takes validation data."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

num_routes = 8
in_feat = 1
input_sequence_length = 12
forecast_horizon = 3
out_feat = 4
lstm_units = 8
sigma2 = 0.1
epsilon = 0.5


def compute_adjacency_matrix(route_distances: np.ndarray, sigma2: float, epsilon: float):
    """Computes the adjacency matrix from distances matrix."""
    num_routes = route_distances.shape[0]
    route_distances = route_distances / 10000.0
    w2, w_mask = (
        route_distances * route_distances,
        np.ones([num_routes, num_routes]) - np.identity(num_routes),
    )
    return (np.exp(-w2 / sigma2) >= epsilon) * w_mask


class GraphInfo:
    def __init__(self, edges: tuple[list, list], num_nodes: int):
        self.edges = edges
        self.num_nodes = num_nodes


def _graph_info(graph_info):
    if isinstance(graph_info, dict):
        return GraphInfo(edges=tuple(graph_info["edges"]), num_nodes=graph_info["num_nodes"])
    return graph_info


def _graph_config(graph_info):
    return {"edges": [list(e) for e in graph_info.edges], "num_nodes": graph_info.num_nodes}


@keras.saving.register_keras_serializable(package="zoo_timeseries_traffic_forecasting")
class GraphConv(layers.Layer):
    def __init__(
        self,
        in_feat,
        out_feat,
        graph_info: GraphInfo,
        aggregation_type="mean",
        combination_type="concat",
        activation: str | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.in_feat = in_feat
        self.out_feat = out_feat
        self.graph_info = _graph_info(graph_info)
        self.aggregation_type = aggregation_type
        self.combination_type = combination_type
        self.activation_name = activation
        self.weight = self.add_weight(
            shape=(in_feat, out_feat),
            initializer=keras.initializers.glorot_uniform(),
            dtype="float32",
            trainable=True,
        )
        self.activation = layers.Activation(activation)

    def aggregate(self, neighbour_representations: tf.Tensor):
        aggregation_func = {
            "sum": tf.math.unsorted_segment_sum,
            "mean": tf.math.unsorted_segment_mean,
            "max": tf.math.unsorted_segment_max,
        }.get(self.aggregation_type)

        if aggregation_func:
            return aggregation_func(
                neighbour_representations,
                self.graph_info.edges[0],
                num_segments=self.graph_info.num_nodes,
            )

        raise ValueError(f"Invalid aggregation type: {self.aggregation_type}")

    def compute_nodes_representation(self, features: tf.Tensor):
        return tf.matmul(features, self.weight)

    def compute_aggregated_messages(self, features: tf.Tensor):
        neighbour_representations = tf.gather(features, self.graph_info.edges[1])
        aggregated_messages = self.aggregate(neighbour_representations)
        return tf.matmul(aggregated_messages, self.weight)

    def update(self, nodes_representation: tf.Tensor, aggregated_messages: tf.Tensor):
        if self.combination_type == "concat":
            h = tf.concat([nodes_representation, aggregated_messages], axis=-1)
        elif self.combination_type == "add":
            h = nodes_representation + aggregated_messages
        else:
            raise ValueError(f"Invalid combination type: {self.combination_type}.")

        return self.activation(h)

    def call(self, features: tf.Tensor):
        nodes_representation = self.compute_nodes_representation(features)
        aggregated_messages = self.compute_aggregated_messages(features)
        return self.update(nodes_representation, aggregated_messages)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "in_feat": self.in_feat,
                "out_feat": self.out_feat,
                "graph_info": _graph_config(self.graph_info),
                "aggregation_type": self.aggregation_type,
                "combination_type": self.combination_type,
                "activation": self.activation_name,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="zoo_timeseries_traffic_forecasting")
class LSTMGC(layers.Layer):
    """Layer comprising a convolution layer followed by LSTM and dense layers."""

    def __init__(
        self,
        in_feat,
        out_feat,
        lstm_units: int,
        input_seq_len: int,
        output_seq_len: int,
        graph_info: GraphInfo,
        graph_conv_params: dict | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.in_feat = in_feat
        self.out_feat = out_feat
        self.lstm_units = lstm_units
        self.graph_info = _graph_info(graph_info)
        self.graph_conv_params = graph_conv_params

        # graph conv layer
        if graph_conv_params is None:
            graph_conv_params = {
                "aggregation_type": "mean",
                "combination_type": "concat",
                "activation": None,
            }
        self.graph_conv = GraphConv(in_feat, out_feat, self.graph_info, **graph_conv_params)

        self.lstm = layers.LSTM(lstm_units, activation="relu")
        self.dense = layers.Dense(output_seq_len)

        self.input_seq_len, self.output_seq_len = input_seq_len, output_seq_len

    def call(self, inputs):
        # convert shape to  (num_nodes, batch_size, input_seq_len, in_feat)
        inputs = tf.transpose(inputs, [2, 0, 1, 3])

        gcn_out = self.graph_conv(
            inputs
        )  # gcn_out has shape: (num_nodes, batch_size, input_seq_len, out_feat)
        shape = tf.shape(gcn_out)
        num_nodes, batch_size, input_seq_len, out_feat = (
            shape[0],
            shape[1],
            shape[2],
            shape[3],
        )

        # LSTM takes only 3D tensors as input
        gcn_out = tf.reshape(gcn_out, (batch_size * num_nodes, input_seq_len, out_feat))
        lstm_out = self.lstm(gcn_out)  # lstm_out has shape: (batch_size * num_nodes, lstm_units)

        dense_output = self.dense(
            lstm_out
        )  # dense_output has shape: (batch_size * num_nodes, output_seq_len)
        output = tf.reshape(dense_output, (num_nodes, batch_size, self.output_seq_len))
        return tf.transpose(
            output, [1, 2, 0]
        )  # returns Tensor of shape (batch_size, output_seq_len, num_nodes)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "in_feat": self.in_feat,
                "out_feat": self.out_feat,
                "lstm_units": self.lstm_units,
                "input_seq_len": self.input_seq_len,
                "output_seq_len": self.output_seq_len,
                "graph_info": _graph_config(self.graph_info),
                "graph_conv_params": self.graph_conv_params,
            }
        )
        return config


def _route_distances():
    rng = np.random.default_rng(1)
    positions = rng.uniform(0.0, 6000.0, size=(num_routes, 2))
    return np.sqrt(((positions[:, None, :] - positions[None, :, :]) ** 2).sum(-1))


def build_model():
    adjacency_matrix = compute_adjacency_matrix(_route_distances(), sigma2, epsilon)
    node_indices, neighbor_indices = np.where(adjacency_matrix == 1)
    graph = GraphInfo(
        edges=(node_indices.tolist(), neighbor_indices.tolist()),
        num_nodes=adjacency_matrix.shape[0],
    )
    graph_conv_params = {
        "aggregation_type": "mean",
        "combination_type": "concat",
        "activation": None,
    }

    st_gcn = LSTMGC(
        in_feat,
        out_feat,
        lstm_units,
        input_sequence_length,
        forecast_horizon,
        graph,
        graph_conv_params,
    )
    inputs = layers.Input((input_sequence_length, graph.num_nodes, in_feat))
    outputs = st_gcn(inputs)

    model = keras.models.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.RMSprop(learning_rate=0.0002),
        loss=keras.losses.MeanSquaredError(),
    )
    return model


def callbacks():
    return [keras.callbacks.EarlyStopping(patience=10)]


def load_data():
    rng = np.random.default_rng(0)

    def split(n):
        # A normalized speed array of shape (num_time_steps, num_routes), windowed as
        # create_tf_dataset does with multi_horizon=True.
        t = np.arange(n + input_sequence_length + forecast_horizon)[:, None]
        speeds = np.sin(2 * np.pi * t / 24.0 + rng.uniform(0, 6.3, size=(1, num_routes)))
        speeds = speeds + 0.1 * rng.normal(size=speeds.shape)
        speeds = ((speeds - speeds.mean(axis=0)) / speeds.std(axis=0)).astype("float32")
        x = np.stack([speeds[i : i + input_sequence_length] for i in range(n)])[..., None]
        y = np.stack(
            [
                speeds[i + input_sequence_length : i + input_sequence_length + forecast_horizon]
                for i in range(n)
            ]
        )
        return x, y

    return split(128), split(32), split(64)
