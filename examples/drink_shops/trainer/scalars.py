"""A dependency-free TensorBoard scalar writer (TFRecord event files).

The `tensorboard` package is not a runtime dependency of the trainer, so this module encodes
the two protobuf messages it needs (Event, Summary.Value with simple_value) by hand and frames
them as TFRecords with masked CRC-32C, which is what TensorBoard and Vertex AI TensorBoard read.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from pathlib import Path


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of `data`."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The masked CRC TFRecord framing uses."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 is encoded as its two's complement
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def encode_event(
    wall_time: float,
    step: int,
    *,
    tag: str | None = None,
    value: float = 0.0,
    file_version: str | None = None,
) -> bytes:
    """Serialise an `Event` holding either a file version or one scalar summary value."""
    out = _varint(1 << 3 | 1) + struct.pack("<d", wall_time) + _varint(2 << 3) + _varint(step)
    if file_version is not None:
        out += _length_delimited(3, file_version.encode())
    if tag is not None:
        summary_value = (
            _length_delimited(1, tag.encode()) + _varint(2 << 3 | 5) + struct.pack("<f", value)
        )
        out += _length_delimited(5, _length_delimited(1, summary_value))
    return out


def frame_record(data: bytes) -> bytes:
    """Wrap one serialised message as a TFRecord."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


class ScalarWriter:
    """Appends scalars to `events.out.tfevents.<time>.<host>.<pid>` in `logdir`.

    Args:
        logdir: the TensorBoard log folder (AIP_TENSORBOARD_LOG_DIR, resolved).
    """

    def __init__(self, logdir: Path) -> None:
        logdir.mkdir(parents=True, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}"
        self.path = logdir / name
        self._handle = self.path.open("ab")
        self._handle.write(frame_record(encode_event(time.time(), 0, file_version="brain.Event:2")))

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        """Record `value` for `tag` at `step`."""
        self._handle.write(
            frame_record(encode_event(time.time(), step, tag=tag, value=float(value)))
        )

    def flush(self) -> None:
        """Push buffered records to the file."""
        self._handle.flush()

    def close(self) -> None:
        """Flush and close the file."""
        self._handle.close()
