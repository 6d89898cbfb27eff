"""The chief's progress: a live bar on a terminal (a real pseudo-terminal), epoch lines in logs."""

import io
import os
import pty
import re
import select
import subprocess
import time

from tests import support
from tf_mgpu.outputs import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_shows_steps_loss_speed_and_time_left(monkeypatch):
    # A wide terminal whatever runs the test (a pytest-xdist worker has none: 80 columns).
    monkeypatch.setenv("COLUMNS", "160")
    screen = Terminal()
    bar = progress.Progress(enabled=True, stream=screen)
    bar.start_epoch(1, 10, steps=100, done=20)  # resumed 20 steps into the epoch
    bar.update(60, loss=0.4321, examples_per_second=12345.6)
    drawn = screen.getvalue()
    assert "epoch  1/10" in drawn, drawn
    assert "60/100" in drawn, drawn
    assert "loss 0.4321" in drawn, drawn
    assert "12,346 ex/s" in drawn, drawn
    assert "<" in drawn, f"no time left shown: {drawn!r}"  # tqdm's [elapsed<left]
    bar.end_epoch()


def test_no_bar_in_a_log_or_on_other_workers():
    for enabled, stream in ((True, io.StringIO()), (False, Terminal())):
        bar = progress.Progress(enabled=enabled, stream=stream)
        bar.start_epoch(1, 2, steps=10)
        bar.update(5, loss=1.0, examples_per_second=1.0)
        bar.end_epoch()
        assert stream.getvalue() == "", (enabled, stream.getvalue())


def smoke_args(tmp_path, data_dir: str) -> list[str]:
    return [
        "--strategy=one_device",
        "--batch_size=32",
        "--epochs=2",
        "--learning_rate=0.1",
        "--train_split=train[:4096]",
        "--test_split=test[:500]",
        "--steps_per_loop=16",
        f"--data_dir={data_dir}",
        f"--model_dir={tmp_path / 'run'}",
    ]


def run_on_a_terminal(args: list[str], timeout: float) -> tuple[int, str]:
    """Runs main with its stdout on a pseudo-terminal; returns (exit code, what it drew)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        support.main_command(*args),
        cwd=support.ROOT,
        env=support.environment(),
        stdout=follower,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(follower)
    drawn = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: every writer closed the terminal
                    break
                if not chunk:
                    break
                drawn += chunk
        return process.wait(timeout=max(1.0, deadline - time.monotonic())), drawn.decode()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()
        os.close(leader)


def test_a_terminal_gets_a_live_bar_and_the_epoch_lines(tmp_path, mnist_data_dir):
    code, drawn = run_on_a_terminal(smoke_args(tmp_path, mnist_data_dir), 180)
    assert code == 0, drawn[-2000:]
    assert re.search("\r(?!\n)", drawn), "the bar was never redrawn in place"
    assert "epoch 1/2:" in drawn, drawn[-2000:]
    assert "ex/s" in drawn, drawn[-2000:]
    assert "128/128" in drawn, drawn[-2000:]  # 4096 examples / 32: every step shown
    lines = [line for line in drawn.replace("\r", "\n").splitlines() if line.startswith("epoch ")]
    assert any("test_acc" in line for line in lines), drawn[-2000:]


def test_a_log_gets_one_clean_line_per_epoch(tmp_path, mnist_data_dir):
    done = support.run_main(smoke_args(tmp_path, mnist_data_dir), tmp_path / "logs", 180)
    assert done.returncode == 0, done.tail()
    assert "\r" not in done.stdout, "a bar was drawn into a log"
    assert len(done.lines("epoch ")) == 2, done.tail()
    assert all("test_acc" in line for line in done.lines("epoch ")), done.tail()
