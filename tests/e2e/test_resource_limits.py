"""Resource limits (docs/hardening.md): an archive, model, .npy file or argument spec that claims more
than a limit is refused by the CLI with one line and exit status 2, before allocating, and nothing is
written; each limit is overridable through its environment variable."""
import io
import os
import subprocess
import zipfile

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2


def run(cli, argv, **env):
    return subprocess.run([cli, *argv], capture_output=True, text=True, env={**os.environ, **env}, timeout=300)


def assert_refused(result, *fragments):
    assert result.returncode == 2, result.stderr
    lines = [l for l in result.stderr.splitlines() if l.startswith("pt2onnx: error:")]
    assert len(lines) == 1, result.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "scale.pt"
    torch.jit.save(torch.jit.script(Scale()), str(path))
    return path


def test_input_shape_beyond_the_tensor_limit(cli, archive, tmp_path):
    out = tmp_path / "m.onnx"
    assert_refused(run(cli, ["convert", str(archive), "-i", "x:100000x100000x100", "-o", str(out)]),
                   "PT2ONNX_MAX_TENSOR_BYTES", "x:100000x100000x100")
    assert not out.exists()
    # Within a raised limit the same kind of spec converts (a smaller shape, to keep the test light).
    assert_refused(run(cli, ["convert", str(archive), "-i", "x:64x64", "-o", str(out)], PT2ONNX_MAX_TENSOR_BYTES="1000"),
                   "16384 bytes, more than PT2ONNX_MAX_TENSOR_BYTES (1000)")
    assert run(cli, ["convert", str(archive), "-i", "x:64x64", "-o", str(out)], PT2ONNX_MAX_TENSOR_BYTES="20000").returncode == 0
    assert out.exists()


def test_archive_limit_and_zip_bomb(cli, archive, tmp_path):
    out = tmp_path / "m.onnx"
    assert_refused(run(cli, ["convert", str(archive), "-i", "x:2", "-o", str(out)], PT2ONNX_MAX_ARCHIVE_BYTES="100"),
                   "PT2ONNX_MAX_ARCHIVE_BYTES (100)")
    assert not out.exists()
    # A deflated record of zeros: 200 MB from a few hundred kB.
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("bomb/data.pkl", "w", force_zip64=True) as f:
            chunk = bytes(1 << 20)
            for _ in range(200):
                f.write(chunk)
    assert bomb.stat().st_size < 1 << 20
    assert_refused(run(cli, ["convert", str(bomb), "-o", str(out)]), "zip bomb", "bomb/data.pkl")


def nested_loops(depth):
    """depth Loops, each body holding the next; the innermost adds 1 to its carried value."""
    body = None
    for level in range(depth):
        inner_nodes = ([helper.make_node("Add", ["v_in", "one"], ["v_out"])] if body is None else
                       [helper.make_node("Loop", ["two", "", "v_in"], ["v_out"], body=body)])
        inner_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
        body = helper.make_graph(
            inner_nodes, f"body{level}",
            [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
             helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["two", "", "x"], ["y"], body=body)], "main",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]), helper.make_tensor("two", TensorProto.INT64, [], [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_subgraph_depth_limit(cli, tmp_path):
    model = tmp_path / "nested.onnx"
    onnx.save(nested_loops(4), str(model))
    x = tmp_path / "x.npy"
    np.save(x, np.zeros(1, np.float32))
    ok = run(cli, ["run", str(model), "--input", f"x={x}", "--output-dir", str(tmp_path / "o1")])
    assert ok.returncode == 0, ok.stderr
    assert np.load(tmp_path / "o1" / "y.npy").tolist() == [16.0]  # 2^4 innermost additions
    assert_refused(run(cli, ["run", str(model), "--input", f"x={x}", "--output-dir", str(tmp_path / "o2")],
                       PT2ONNX_MAX_SUBGRAPH_DEPTH="3"), "nested 4 subgraphs deep", "PT2ONNX_MAX_SUBGRAPH_DEPTH (3)")


def test_npy_claims_and_devices(cli, tmp_path):
    model = tmp_path / "id.onnx"
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    liar = tmp_path / "liar.npy"
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(4, np.float32))
    liar.write_bytes(buffer.getvalue().replace(b"(4,)", b"(9,)"))  # the header claims 9 floats, the data holds 4
    assert_refused(run(cli, ["run", str(model), "--input", f"x={liar}", "--output-dir", str(tmp_path / "o")]),
                   "needs 36 bytes of data, the file has 16")
    assert_refused(run(cli, ["run", str(model), "--input", "x=/dev/zero", "--output-dir", str(tmp_path / "o")]),
                   "not a regular .npy file")


def test_bad_limit_value_is_an_error(cli, archive, tmp_path):
    assert_refused(run(cli, ["convert", str(archive), "-i", "x:2", "-o", str(tmp_path / "m.onnx")], PT2ONNX_MAX_TENSOR_BYTES="lots"),
                   "PT2ONNX_MAX_TENSOR_BYTES='lots' is not a positive integer")


def rewrite_record(src, dst, suffix, edit):
    """Copies archive `src` to `dst`, `edit`ing the record ending in `suffix`; each record keeps its
    compression (torch.jit.save stores data.pkl and deflates the debug info)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(zipfile.ZipInfo(info.filename), edit(data) if info.filename.endswith(suffix) else data,
                          compress_type=info.compress_type)


def test_pickles_claiming_more_than_they_hold(cli, archive, tmp_path):
    # A BINUNICODE claiming 4 GB inside data.pkl: refused before LibTorch's unpickler allocates it.
    liar = tmp_path / "liar.pt"
    rewrite_record(archive, liar, "/data.pkl", lambda d: d[:2] + b"X\xf0\xff\xff\xff" + d[2:])
    out = tmp_path / "m.onnx"
    assert_refused(run(cli, ["convert", str(liar), "-i", "x:2", "-o", str(out)]), "data.pkl' is a damaged pickle",
                   "claims 4294967280 bytes")
    assert not out.exists()
    # The first BINPUT (memo entry 0) rewritten as a LONG_BINPUT to entry 1879048192 of none: LibTorch's
    # unpickler would grow its memo table to it first (30 GB).
    def first_put_to(index):
        return lambda d: d.replace(b"q\x00", b"r" + index.to_bytes(4, "little"), 1)
    memo = tmp_path / "memo.pt"
    rewrite_record(archive, memo, "/data.pkl", first_put_to(0x70000000))
    assert_refused(run(cli, ["convert", str(memo), "-i", "x:2", "-o", str(out)]), "data.pkl' is a damaged pickle",
                   "memo index 1879048192")
    sane = tmp_path / "sane.pt"  # the same rewrite to entry 0 converts
    rewrite_record(archive, sane, "/data.pkl", first_put_to(0))
    result = run(cli, ["convert", str(sane), "-i", "x:2", "-o", str(out)])
    assert result.returncode == 0, result.stderr
    out.unlink()
    # Lists nested 200000 deep in constants.pkl: LibTorch frees them recursively (a segfault before).
    nested = tmp_path / "nested.pt"
    rewrite_record(archive, nested, "/constants.pkl", lambda d: b"\x80\x02(" + b"]" * 200000 + b"a" * 199999 + b"t.")
    assert_refused(run(cli, ["convert", str(nested), "-i", "x:2", "-o", str(out)]), "constants.pkl' is a damaged pickle",
                   "nested more than 5000 deep")
    shallow = tmp_path / "shallow.pt"  # 5000 deep (4999 lists in the constants tuple) is a pickle LibTorch reads
    rewrite_record(archive, shallow, "/constants.pkl", lambda d: b"\x80\x02(" + b"]" * 4999 + b"a" * 4998 + b"t.")
    result = run(cli, ["convert", str(shallow), "-i", "x:2", "-o", str(out)])
    assert result.returncode == 0, result.stderr
    out.unlink()
    # The same in the debug info (source locations): the archive converts without it, with a warning.
    damaged = tmp_path / "debug.pt"
    rewrite_record(archive, damaged, ".debug_pkl", lambda d: d[:2] + b"X\xf0\xff\xff\xff" + d[2:])
    result = run(cli, ["convert", str(damaged), "-i", "x:2", "-o", str(out)])
    assert result.returncode == 0, result.stderr
    assert "debug info is damaged" in result.stderr and "loaded without it" in result.stderr, result.stderr
    assert "claims 4294967280 bytes" in result.stderr, result.stderr
    assert out.exists()
    with zipfile.ZipFile(damaged) as z:  # the damaged record was deflated, as torch.jit.save wrote it
        assert [i.compress_type for i in z.infolist() if i.filename.endswith(".debug_pkl")] == [zipfile.ZIP_DEFLATED]


def with_zip64_end_records(path, classic_fields):
    """Rewrites `path`'s end of central directory as zip64 end record + locator + a classic record
    whose entry counts, size and offset are `classic_fields`: readers that see the locator (LibTorch's
    miniz, Python's zipfile) take the zip64 record's fields, whatever the classic ones say."""
    import struct
    raw = path.read_bytes()
    assert raw[-22:-18] == b"PK\x05\x06", "expected an archive without a comment"
    _, _, here, total, size, offset, _ = struct.unpack("<HHHHIIH", raw[-18:])
    body = raw[:-22]
    zip64_end = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, here, total, size, offset)
    locator = struct.pack("<IIQI", 0x07064B50, 0, len(body), 1)
    classic = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, *classic_fields, 0)
    path.write_bytes(body + zip64_end + locator + classic)


def test_zip_directory_is_read_as_libtorch_reads_it(cli, archive, tmp_path):
    # A fuzzer's finding: the classic end record says nonsense, the zip64 one is right. The check must
    # read the directory LibTorch reads, or a lying debug pickle slips past it (LibTorch then
    # allocates its claim at every source-location lookup: 26 s for a 5-node graph).
    out = tmp_path / "m.onnx"
    damaged = tmp_path / "debug.pt"
    rewrite_record(archive, damaged, ".debug_pkl", lambda d: d[:2] + b"X\xf0\xff\xff\x7f" + d[2:])
    with_zip64_end_records(damaged, (0x0701, 0xE100, 0x700, 0x6B8))
    with zipfile.ZipFile(damaged) as z:  # Python's reader takes the zip64 record too
        assert any(n.endswith(".debug_pkl") for n in z.namelist())
    result = run(cli, ["convert", str(damaged), "-i", "x:2", "-o", str(out)])
    assert result.returncode == 0, result.stderr
    assert "debug info is damaged" in result.stderr and "claims 2147483632 bytes" in result.stderr, result.stderr
    liar = tmp_path / "liar.pt"
    rewrite_record(archive, liar, "/data.pkl", lambda d: d[:2] + b"X\xf0\xff\xff\xff" + d[2:])
    with_zip64_end_records(liar, (0x0701, 0xE100, 0x700, 0x6B8))
    assert_refused(run(cli, ["convert", str(liar), "-i", "x:2", "-o", str(tmp_path / "n.onnx")]),
                   "data.pkl' is a damaged pickle")
    assert not (tmp_path / "n.onnx").exists()


@pytest.mark.parametrize("damage", ["directory entry", "directory offset", "zip64 locator"])
def test_damaged_zip_directory_is_refused(cli, archive, tmp_path, damage):
    """A directory whose records cannot all be read is refused: what LibTorch would read from it (its
    reader is lenient) cannot be checked first."""
    import struct
    raw = bytearray(archive.read_bytes())
    end = raw.rindex(b"PK\x05\x06")
    locator = raw.rfind(b"PK\x06\x07", 0, end)
    zip64_end = raw.rfind(b"PK\x06\x06", 0, end)
    directory = struct.unpack_from("<Q", raw, zip64_end + 48)[0] if locator >= 0 else struct.unpack_from("<I", raw, end + 16)[0]
    if damage == "directory entry":
        raw[raw.index(b"PK\x01\x02", directory) + 3] ^= 0xFF
    elif damage == "directory offset":
        if locator >= 0:
            struct.pack_into("<Q", raw, zip64_end + 48, len(raw))
        else:
            struct.pack_into("<I", raw, end + 16, len(raw))
    else:
        assert locator >= 0 and zip64_end >= 0, "torch.jit.save writes zip64 end records"
        raw[zip64_end] ^= 0xFF  # the record the locator points at is gone
        struct.pack_into("<Q", raw, locator + 8, len(raw))
    bad = tmp_path / "bad.pt"
    bad.write_bytes(bytes(raw))
    out = tmp_path / "m.onnx"
    assert_refused(run(cli, ["convert", str(bad), "-i", "x:2", "-o", str(out)]), "zip directory is damaged")
    assert not out.exists()
