"""Writes ONNX's node conformance tests, as the installed `onnx` package defines them, in the layout of
ONNX's backend test data (DIR/node/<test>/model.onnx and test_data_set_N/{input,output}_K.pb).

Neither onnx's source release nor its wheel ships this data (Debian's libonnx-testdata has it for
onnx 1.12 only): the node tests are Python that builds each model and computes its expected outputs
with onnx's reference implementation, so the data of the ONNX release we build is made from the
matching `onnx` package (requirements/common.txt pins the same version as cmake/OnnxLibrary.cmake).

    python scripts/onnx_conformance_data.py build/main/onnx-testdata   # ~2 min, ~1900 tests

The build runs it (target pt2onnx_conformance_data) with --onnx-version of the library it builds.

The directory gets a STAMP file naming the onnx version; an up-to-date directory is left as it is.
"""
import argparse
import os
import pathlib
import shutil
import sys
import time


def proto_of(value, value_info, helper, TensorProto):
    """The serialized proto of one input or output, by the type the model declares for it."""
    kind = value_info.type.WhichOneof("value")
    if kind == "sequence_type":
        return helper.from_list(value, value_info.name)
    if kind == "optional_type":
        return helper.from_optional(value, value_info.name)
    if kind == "map_type":
        return helper.from_dict(value, value_info.name)
    if isinstance(value, TensorProto):
        return value
    return helper.from_array(value, value_info.name)


def write_case(case, out_dir, numpy_helper, TensorProto):
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "model.onnx").write_bytes(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = tmp / f"test_data_set_{i}"
        data_dir.mkdir()
        for j, value in enumerate(inputs):
            proto = proto_of(value, graph.input[j], numpy_helper, TensorProto)
            (data_dir / f"input_{j}.pb").write_bytes(proto.SerializeToString())
        for j, value in enumerate(outputs):
            proto = proto_of(value, graph.output[j], numpy_helper, TensorProto)
            (data_dir / f"output_{j}.pb").write_bytes(proto.SerializeToString())
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=pathlib.Path, help="where node/ is written")
    parser.add_argument("--onnx-version", help="fail unless the onnx package is this version (the library's)")
    args = parser.parse_args()
    try:
        import onnx
        from onnx import TensorProto, numpy_helper
        from onnx.backend.test.case import node as node_cases
    except ImportError as e:
        sys.exit(f"onnx_conformance_data.py: the onnx package is needed to make ONNX's conformance data: {e}")
    if args.onnx_version and onnx.__version__ != args.onnx_version:
        sys.exit(f"onnx_conformance_data.py: the onnx package is {onnx.__version__}, the ONNX library built is "
                 f"{args.onnx_version}: its conformance data would test another release (pip install onnx=={args.onnx_version})")
    stamp = args.directory / "STAMP"
    if stamp.exists() and stamp.read_text().strip() == f"onnx {onnx.__version__}":
        print(f"[conformance data] {args.directory}: up to date (onnx {onnx.__version__})")
        return
    start = time.time()
    print(f"[conformance data] making ONNX {onnx.__version__}'s node tests in {args.directory} (~2 min)", flush=True)
    cases = node_cases.collect_testcases(None)
    node_dir = args.directory / "node"
    shutil.rmtree(node_dir, ignore_errors=True)
    node_dir.mkdir(parents=True)
    for case in cases:
        write_case(case, node_dir / case.name, numpy_helper, TensorProto)
    stamp.write_text(f"onnx {onnx.__version__}\n")
    print(f"[conformance data] {len(cases)} node tests in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
