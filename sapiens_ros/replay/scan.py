# Copyright 2026 sapiens_ros contributors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Read what a damaged or never-closed rosbag2 bag still holds, in write order.

rosbags needs an mcap file's summary and footer, which a killed recorder (or a killed replay)
never writes, and a truncated copy has lost. :class:`ScanBag` walks the storage files record by
record instead and stops at the first record that is cut short or fails its check (chunk CRC
where the writer set one; rosbags writes 0, so damage inside such a chunk is only seen when
the bytes no longer parse). sqlite3 files are read row by row in insertion order, which also
drops what a killed writer never committed. The interface is the subset of rosbags'
``AnyReader`` that :class:`~sapiens_ros.replay.source.InputBag` uses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
import mmap
from pathlib import Path
import sqlite3
import struct

from .rosbag2 import BagError, storage_files, typestore_of

MAGIC = b'\x89MCAP0\r\n'
_OP_SCHEMA, _OP_CHANNEL, _OP_MESSAGE, _OP_CHUNK = 0x03, 0x04, 0x05, 0x06
_OP_FOOTER, _OP_DATA_END = 0x02, 0x0F
_MAX_RECORD = 1 << 36  # a length field above 64 GiB is garbage, not a record


@dataclass
class Damage:
    """Where reading a storage file stopped and why."""

    file: str
    offset: int  # byte offset of the first unreadable record (row id for sqlite3)
    size: int  # file size in bytes
    reason: str
    messages: int = 0  # messages readable before it

    def text(self) -> str:
        """One line naming the file, the position and the reason."""
        return (f'{self.file} is unreadable from byte {self.offset} of {self.size} '
                f'({self.reason}) after {self.messages} messages')


class _Torn(Exception):
    """A record is cut short or fails its check."""


def _string(buf: memoryview, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from('<I', buf, pos)
    return bytes(buf[pos + 4:pos + 4 + n]).decode(), pos + 4 + n


def _bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    (n,) = struct.unpack_from('<I', buf, pos)
    return bytes(buf[pos + 4:pos + 4 + n]), pos + 4 + n


def _records(buf: memoryview) -> Iterator[tuple[int, int, memoryview]]:
    """Yield ``(offset, opcode, content)`` of the records in ``buf``; :class:`_Torn` at damage."""
    pos = 0
    while pos < len(buf):
        if pos + 9 > len(buf):
            raise _Torn('record header cut short')
        op, n = buf[pos], struct.unpack_from('<Q', buf, pos + 1)[0]
        if n > _MAX_RECORD or pos + 9 + n > len(buf):
            raise _Torn(f'record 0x{op:02x} of {n} bytes cut short')
        yield pos, op, buf[pos + 9:pos + 9 + n]
        pos += 9 + n


def _chunk_records(content: memoryview) -> memoryview:
    """Decompress a chunk record's content and check its CRC (when the writer set one)."""
    from zlib import crc32

    from rosbags.rosbag2.storage_mcap import decompress

    try:
        _, _, size, crc = struct.unpack_from('<QQQI', content, 0)
        compression, pos = _string(content, 28)
        (length,) = struct.unpack_from('<Q', content, pos)
        data = bytes(content[pos + 8:pos + 8 + length])
        if len(data) != length:
            raise _Torn('chunk data cut short')
        raw = decompress(data, compression, size, 0)
    except _Torn:
        raise
    except Exception as exc:  # noqa: BLE001 - struct/zstd/lz4 errors all mean a bad chunk
        raise _Torn(f'bad chunk: {type(exc).__name__}: {exc}') from None
    if crc and crc32(raw) != crc:
        raise _Torn('chunk CRC mismatch')
    return memoryview(raw)


def _map(path: Path) -> memoryview:
    """Read-only view of a whole file (mapped, not read: bags are large)."""
    with open(path, 'rb') as f:
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


@dataclass
class _Schema:
    id: int  # noqa: A003 - the mcap field
    name: str
    encoding: str
    data: str


class McapScan:
    """Records of one mcap file in write order, up to the first damaged record."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.size = self.path.stat().st_size
        self.damage: Damage | None = None

    def walk(self) -> Iterator[tuple[int, object]]:
        """Yield ``(opcode, parsed)`` for schemas, channels and messages; set ``damage``."""
        data = _map(self.path) if self.size else memoryview(b'')
        count, offset = 0, 0
        try:
            if bytes(data[:8]) != MAGIC:
                raise _Torn('no mcap magic')
            for offset, op, content in _records(data[8:]):
                offset += 8
                if op in (_OP_FOOTER, _OP_DATA_END):
                    return
                inner = [(0, op, content)] if op != _OP_CHUNK else \
                    list(_records(_chunk_records(content)))
                for _, iop, rec in inner:
                    parsed = self._parse(iop, rec)
                    if parsed is not None:
                        count += iop == _OP_MESSAGE
                        yield iop, parsed
            offset = self.size
            if self.size > 8:
                raise _Torn('file ends without a footer')
        except _Torn as exc:
            self.damage = Damage(self.path.name, offset, self.size, str(exc), count)
        except (struct.error, UnicodeDecodeError, IndexError) as exc:
            self.damage = Damage(self.path.name, offset, self.size, f'bad record: {exc}', count)

    @staticmethod
    def _parse(op: int, rec: memoryview) -> object | None:
        if op == _OP_MESSAGE:
            channel, _, log_time = struct.unpack_from('<HIQ', rec, 0)
            return channel, log_time, bytes(rec[22:])
        if op == _OP_SCHEMA:
            (sid,) = struct.unpack_from('<H', rec, 0)
            name, pos = _string(rec, 2)
            encoding, pos = _string(rec, pos)
            data, _ = _bytes(rec, pos)
            return _Schema(sid, name, encoding, data.decode())
        if op == _OP_CHANNEL:
            cid, sid = struct.unpack_from('<HH', rec, 0)
            topic, pos = _string(rec, 4)
            encoding, pos = _string(rec, pos)
            meta, _ = _bytes(rec, pos)
            return cid, sid, topic, encoding, meta
        return None


def _qos_of_channel(meta: bytes) -> list:
    from rosbags.rosbag2.storage_mcap import get_qos

    try:
        return get_qos(meta)
    except Exception:  # noqa: BLE001 - a bad QoS string only loses the offered QoS
        return []


class ScanBag:
    """The readable part of a rosbag2 directory whose storage files rosbags cannot open."""

    def __init__(self, path: Path, distro: str = 'jazzy') -> None:
        self.path = Path(path)
        files = storage_files(self.path)
        if not files:
            raise BagError(f'{self.path} holds no .mcap or .db3 storage file')
        self.files = files
        self.distro = distro
        self.connections: list = []
        self.damage: Damage | None = None
        self._by_key: dict = {}
        counts: Counter = Counter()
        lo, hi = 2**63 - 1, -1
        for key, time_ns, _ in self._walk(wanted=None):
            counts[key] += 1
            lo, hi = min(lo, time_ns), max(hi, time_ns)
        self.connections = [c._replace(msgcount=counts[c.id]) for c in self.connections]
        self.start_time = lo if counts else 0
        self.end_time = hi + 1 if counts else 0
        self.typestore = self._typestore()

    # -------------------------------------------------------------- connections and types
    def _connection(self, key, topic: str, msgtype: str, msgdef, qos: list, digest: str = ''):
        from rosbags.interfaces import Connection, ConnectionExtRosbag2

        if key not in self._by_key:
            conn = Connection(len(self._by_key) + 1, topic, msgtype, msgdef, digest, 0,
                              ConnectionExtRosbag2('cdr', qos), self)
            self._by_key[key] = conn
            self.connections.append(conn)
        return self._by_key[key]

    def _typestore(self):
        from rosbags.interfaces import MessageDefinitionFormat
        from rosbags.typesys import get_types_from_msg

        store = typestore_of(self.distro)
        for conn in self.connections:
            if conn.msgdef.format != MessageDefinitionFormat.MSG or not conn.msgdef.data:
                continue
            try:
                store.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
            except Exception:  # noqa: BLE001, S110 - the distro's own definition is used
                pass
        return store

    # -------------------------------------------------------------- reading
    def _walk(self, wanted: set | None) -> Iterator[tuple[int, int, bytes]]:
        """Yield ``(connection id, time, raw)`` for every readable message."""
        for file in self.files:
            damage = yield from (self._walk_mcap(file, wanted) if file.suffix == '.mcap'
                                 else self._walk_sqlite(file, wanted))
            if damage is not None:
                self.damage = damage
                return

    def _walk_mcap(self, file: Path, wanted: set | None):
        from rosbags.rosbag2.storage_mcap import get_msgdef

        scan = McapScan(file)
        schemas: dict[int, _Schema] = {}
        for op, parsed in scan.walk():
            if op == _OP_SCHEMA:
                schemas[parsed.id] = parsed
            elif op == _OP_CHANNEL:
                cid, sid, topic, _, meta = parsed
                schema = schemas.get(sid)
                self._connection((file, cid), topic, schema.name if schema else '',
                                 get_msgdef(schema), _qos_of_channel(meta))
            else:
                cid, time_ns, raw = parsed
                conn = self._by_key.get((file, cid))
                if conn is not None and (wanted is None or conn.id in wanted):
                    yield conn.id, time_ns, raw
        return scan.damage

    def _walk_sqlite(self, file: Path, wanted: set | None):
        from rosbags.interfaces import MessageDefinition, MessageDefinitionFormat
        from rosbags.rosbag2.metadata import parse_qos

        size, last, count = file.stat().st_size, 0, 0
        try:
            db = sqlite3.connect(f'file:{file}?mode=ro', uri=True)
        except sqlite3.Error as exc:
            return Damage(file.name, 0, size, f'sqlite3: {exc}')
        try:
            defs = {}
            tables = {r[0] for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            if 'message_definitions' in tables:
                defs = dict(db.execute('SELECT topic_type, encoded_message_definition '
                                       'FROM message_definitions'))
            for tid, name, msgtype, qos in db.execute(
                    'SELECT id, name, type, offered_qos_profiles FROM topics'):
                try:
                    profiles = parse_qos(qos) if qos else []
                except Exception:  # noqa: BLE001 - a bad QoS string only loses the QoS
                    profiles = []
                fmt = MessageDefinitionFormat.MSG if defs.get(msgtype) else \
                    MessageDefinitionFormat.NONE
                self._connection((file, tid), name, msgtype,
                                 MessageDefinition(fmt, defs.get(msgtype, '')), profiles)
            for rowid, tid, time_ns, raw in db.execute(
                    'SELECT id, topic_id, timestamp, data FROM messages ORDER BY id'):
                last = rowid
                conn = self._by_key.get((file, tid))
                count += 1
                if conn is not None and (wanted is None or conn.id in wanted):
                    yield conn.id, time_ns, bytes(raw)
        except sqlite3.Error as exc:
            return Damage(file.name, last, size, f'sqlite3 after row {last}: {exc}', count)
        finally:
            db.close()
        return None

    def messages(self, connections=(), start: int | None = None,
                 stop: int | None = None) -> Iterator[tuple]:
        """Yield ``(connection, time_ns, raw)`` in write order; ``damage`` is set at the end."""
        wanted = {c.id for c in connections} if connections else None
        by_id = {c.id: c for c in self.connections}
        for key, time_ns, raw in self._walk(wanted):
            if (start is None or time_ns >= start) and (stop is None or time_ns < stop):
                yield by_id[key], time_ns, raw

    def deserialize(self, raw: bytes, msgtype: str):
        """Deserialize one CDR message."""
        return self.typestore.deserialize_cdr(raw, msgtype)

    def close(self) -> None:
        """Nothing stays open between reads."""
