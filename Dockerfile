# tf_mgpu on TensorFlow's own GPU image of the pinned version (CUDA and cuDNN inside), for GPU
# nodes and the Kubernetes examples (docs/gpus.md):
#   docker build -t tf-mgpu:2.21-gpu .
#   docker run --gpus all --rm tf-mgpu:2.21-gpu                 # the devices tf_mgpu sees
# Untested here: the machines this was built on have no GPU and no Docker daemon.
FROM tensorflow/tensorflow:2.21.0-gpu
WORKDIR /opt/tf_mgpu
COPY pyproject.toml README.md constraints.txt ./
COPY tf_mgpu ./tf_mgpu
COPY flags ./flags
COPY examples ./examples
# TensorFlow comes with the image (it satisfies the pin); the rest from pyproject.toml, at
# the versions CI tested.
RUN pip install --no-cache-dir . -c constraints.txt
CMD ["python", "-m", "tf_mgpu.devices"]
