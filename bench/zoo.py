"""The torchvision zoo (the torchvision the venv holds: 0.29 with torch 2.14): every classification,
segmentation, video and optical-flow model exported with pt2onnx, with torch.onnx.export's TorchScript
path (dynamo=False) and with its torch.export path (dynamo=True, onnxscript) in one run, each export
run in ONNX Runtime (the onnxruntime Python package) on an input other than the export example and
compared with PyTorch.

Tiers: `default` is the models of the four families but the 10 largest (87 with torchvision 0.29:
torchvision 0.14's 84 and swin3d_t/s/b); `large` is those 10
(vit_h_14, regnet_y_128gf, vit_l_16/32, convnext_large, regnet_y_32gf, vgg16/19(_bn)), exported with
their weights as external data in one side file; `detection` is the 12 detection and keypoint
models, traced on a list of one 320x320 image as torchvision's ONNX tests do, untrained but with
random heads and calibrated BatchNorm so that boxes score differently, every box kept (threshold 0),
and their detections compared with PyTorch's own under float noise (samples/detection_check.py: each
detection must be one PyTorch gives, or a candidate its NMS dropped for a near-tied neighbour). Each
(tool, model) runs in a fresh child process;
the parent prints one line per run and a table with the totals (--markdown writes it for
bench/README.md). A benchmark, not a test: it exits 0 whatever fails.

Tools (--tools, default all three): `pt2onnx`; `torchscript` = torch.onnx.export(..., dynamo=False)
at the same opset as pt2onnx; `dynamo` = torch.onnx.export(..., dynamo=True) at opset 18 (or --opset
when higher), the lowest its op library (onnxscript's torchlib) writes. Every tool exports the same
static shapes. dynamo=True rejects ScriptModules: a scripted model is reported as
"n/a: rejects ScriptModules" for it, not run.

    .venv/bin/python bench/zoo.py                          # the default tier, all three tools (hours on 2 cores)
    .venv/bin/python bench/zoo.py --tier large             # the 10 largest (needs ~20 GiB, about 1 h per tool)
    .venv/bin/python bench/zoo.py --tier detection         # the 12 detection models
    .venv/bin/python bench/zoo.py --models swin_t raft_small --skip-torch-onnx     # pt2onnx only
    .venv/bin/python bench/zoo.py --models resnet18 --tools pt2onnx dynamo
    .venv/bin/python bench/zoo.py --output-json z.json --resume z.json   # finish an interrupted run
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # for samples/ (pt2onnx itself is the one installed in the running Python)


def onnxruntime_oracle():
    """pt2onnx's ONNX Runtime runner, loaded from the source tree: a pure-Python module, so that the
    torch.onnx tools can be measured in a venv where pt2onnx is not built (e.g. a newer torch)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "pt2onnx_onnxruntime_oracle", os.path.join(ROOT, "python", "pt2onnx", "onnxruntime_oracle.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LARGEST = ["regnet_y_128gf", "vit_h_14", "vit_l_32", "vit_l_16", "convnext_large", "regnet_y_32gf",
           "vgg19_bn", "vgg19", "vgg16_bn", "vgg16"]
FAMILIES = ["classification", "segmentation", "video", "optical_flow", "detection"]
# max |a - b| / max |a| per output (a the PyTorch output), the worst over all outputs. Relative to
# the output's scale: untrained models give outputs as small as 1e-20, where |a - b| / (1 + |a|)
# would pass anything.
TOLERANCE = 1e-3
# The ai.onnx opset pt2onnx and torch.onnx (dynamo=False) export to (--opset; children read it from
# the environment); torch.onnx (dynamo=True) exports to at least DYNAMO_MIN_OPSET.
OPSET = int(os.environ.get("PT2ONNX_ZOO_OPSET", "17"))
DYNAMO_MIN_OPSET = 18
# --tools keys -> the names the tables print.
TOOLS = {"pt2onnx": "pt2onnx", "torchscript": "torch.onnx (dynamo=False)", "dynamo": "torch.onnx (dynamo=True)"}
# Results of runs before dynamo=True was measured name the TorchScript path "torch.onnx".
OLD_TOOL_KEYS = {"torch.onnx": "torchscript"}


def dynamo_opset(opset):
    return max(opset, DYNAMO_MIN_OPSET)


def zoo():
    """{model name: family} for the four families, as the installed torchvision lists them."""
    import torchvision.models as M
    modules = {"segmentation": M.segmentation, "video": M.video, "optical_flow": M.optical_flow}
    named = {n: f for f, mod in modules.items() for n in M.list_models(module=mod)}
    elsewhere = set(named) | set(M.list_models(module=M.detection)) | set(M.list_models(module=M.quantization))
    models = {n: "classification" for n in M.list_models(module=M) if n not in elsewhere}
    models.update(named)
    return dict(sorted(models.items()))


def detection_zoo():
    import torchvision.models as M
    return {n: "detection" for n in M.list_models(module=M.detection)}


def build_model(name, family, torch):
    import torchvision.models as M
    if family != "detection":
        # Untrained, but never downloading: segmentation models default to ImageNet backbone weights.
        extra = {"weights_backbone": None} if family == "segmentation" else {}
        model = M.get_model(name, weights=None, **extra).eval()
        with torch.no_grad():  # zero-initialized layers (ViT's head) would make every output 0
            for p in model.parameters():
                if p.dim() >= 2 and not p.any():
                    p.normal_(0, 0.02)
        return model
    # Untrained, a detector scores every box alike and the top-k of equal scores is any k: keep every
    # box (threshold 0), random heads, and BatchNorm statistics from a few images give distinct scores.
    # How much the heads spread the scores decides whether PyTorch's own detections are stable: too
    # little and they are all alike, too much and they saturate at 1. The first spread (head weights'
    # std) with which PyTorch gives the same detections with 1 thread and with 2, scores below 0.999,
    # is kept (ZOO_HEAD_STD forces one).
    forced = os.environ.get("ZOO_HEAD_STD")
    spreads = [float(forced)] if forced else [0.05, 0.01, 0.02, 0.1, 0.005, 0.2]
    for std in spreads:
        model = detector(name, torch, M, std)
        if forced or detections_are_stable(model, example_inputs(name, "detection", torch, seed=2)[0], torch):
            break
    model.head_std = std
    return model


def detector(name, torch, M, std):
    threshold = "box_score_thresh" if "rcnn" in name else "score_thresh"
    torch.manual_seed(0)
    model = M.get_model(name, weights=None, weights_backbone=None, **{threshold: 0.0})
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "head" in pname or "predictor" in pname:
                p.normal_(0, std)
        model.backbone.train()
        for _ in range(3):
            model.backbone(torch.rand(2, 3, 320, 320) * 2 - 0.5)
    return model.eval()


def detections_are_stable(model, images, torch):
    import numpy as np
    threads = torch.get_num_threads()
    runs = []
    try:
        for t in (1, 2):
            torch.set_num_threads(t)
            with torch.no_grad():
                d = model(images)[0]
            rows = np.concatenate([d["labels"][:, None].double().numpy(), d["scores"][:, None].double().numpy(),
                                   d["boxes"].double().numpy()], 1)
            runs.append(rows[np.lexsort(rows.T[::-1])])
    finally:
        torch.set_num_threads(threads)
    a, b = runs
    return (a.shape == b.shape and len(a) > 0 and float(a[:, 1].max()) < 0.999
            and float(np.abs(a - b).max()) < 1e-3)


def aligned_outputs(expected, got):
    """`got` reordered to follow `expected`, each taking the first unused output of the same rank and
    kind (integer or float): torch.onnx does not keep the order of a returned dict's values."""
    import numpy as np
    free = list(range(len(got)))
    ordered = []
    for e in expected:
        kind = np.issubdtype(e.dtype, np.integer)
        match = next((j for j in free if got[j].ndim == e.ndim and np.issubdtype(got[j].dtype, np.integer) == kind
                      and got[j].shape[1:] == e.shape[1:]), None)
        if match is None:
            return got
        free.remove(match)
        ordered.append(got[match])
    return ordered


def example_inputs(name, family, torch, seed):
    """Arguments for one forward; the seed picks other values for the checking run."""
    g = torch.Generator().manual_seed(seed)
    if family == "detection":  # a list of images, as torchvision's detection models take them
        # Coloured rectangles on a gradient, some noise: regions that differ, so boxes score apart.
        image = torch.linspace(0, 1, 320).view(1, 1, 320).expand(3, 320, 320).clone()
        for _ in range(6):
            y, x = torch.randint(0, 240, (2,), generator=g).tolist()
            h, w = torch.randint(30, 80, (2,), generator=g).tolist()
            image[:, y:y + h, x:x + w] = torch.rand(3, 1, 1, generator=g)
        return ([(image + 0.05 * torch.rand(3, 320, 320, generator=g)).clamp(0, 1)],)
    if family == "optical_flow":  # two frames; H and W multiples of 8
        return (torch.rand(1, 3, 128, 128, generator=g) * 2 - 1, torch.rand(1, 3, 128, 128, generator=g) * 2 - 1)
    if family == "video":
        side = 224 if name in ("mvit_v1_b", "mvit_v2_s", "s3d") else 112
        return (torch.randn(1, 3, 16, side, side, generator=g),)
    side = 299 if name == "inception_v3" else 224
    return (torch.randn(1, 3, side, side, generator=g),)


def scaled_error(expected, got):
    import numpy as np
    if expected.shape != got.shape:
        return float("inf")
    if expected.size == 0:
        return 0.0
    scale = float(np.abs(expected).max())
    diff = float(np.abs(expected.astype(np.float64) - got.astype(np.float64)).max())
    return diff / scale if scale > 0 else diff


def flat_outputs(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in flat_outputs(v)]
    return [t for v in out for t in flat_outputs(v)]


# ---------------------------------------------------------------- child: one (tool, model)


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return None


def reset_peak_rss():
    """Resets VmHWM to the current RSS; False when the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child(tool, name, family, workdir, result_path):
    sys.path.insert(0, ROOT)
    import torch
    result = {"tool": tool, "model": name, "family": family, "status": "error"}

    def save():
        with open(result_path, "w") as f:
            json.dump(result, f)

    try:
        torch.manual_seed(0)
        model = build_model(name, family, torch)
        if family == "detection":
            result["head_std"] = model.head_std
        example = example_inputs(name, family, torch, seed=1)
        check = example_inputs(name, family, torch, seed=2)
        with torch.no_grad():
            result_of_check = model(*check)
            expected = [t.numpy() for t in flat_outputs(result_of_check)]
        path = os.path.join(workdir, f"{name}.onnx")
        large = name in LARGEST
        if not reset_peak_rss():
            result["peak_rss_note"] = "VmHWM could not be reset: the peak includes building the model"
        if tool == "dynamo" and isinstance(model, torch.jit.ScriptModule):
            result.update(status="n/a", error="n/a: rejects ScriptModules")
            return save()
        # Modules imported before the clock starts: export time is the export call alone.
        if tool == "pt2onnx":
            import pt2onnx
        elif tool == "dynamo":
            import onnxscript  # noqa: F401
            import torch.onnx._internal.exporter._core  # noqa: F401
        start = time.perf_counter()
        try:
            if tool == "pt2onnx":
                extra = {"external_data_threshold": 0} if large else {}
                pt2onnx.export(model, example, path, opset_version=OPSET, **extra)
            elif tool == "torchscript":
                torch.onnx.export(model, example, path, opset_version=OPSET, dynamo=False)
            else:  # torch.export + onnxscript; weights always go to a side file (external_data=True)
                torch.onnx.export(model, example, path, opset_version=dynamo_opset(OPSET), dynamo=True)
        except Exception as e:  # noqa: BLE001 - the error is the result
            result.update(status="export failed", error=" ".join(str(e).split())[:300])
            return save()
        finally:
            result["export_s"] = time.perf_counter() - start
            result["peak_rss_mib"] = peak_rss_mib()
        result["files_mib"] = sum(os.path.getsize(os.path.join(workdir, f)) for f in os.listdir(workdir)) / 2**20
        import onnx
        proto = onnx.load(path, load_external_data=False)
        names = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
        feeds = {n: a.numpy() for n, a in zip(names, flat_outputs(check))}
        try:
            ort = onnxruntime_oracle()
            got = list(ort.run(path, feeds).values())  # 1 intra-op thread
        except Exception as e:  # noqa: BLE001
            result.update(status="ORT failed", error=" ".join(str(e).split())[:300])
            return save()
        if len(got) != len(expected):
            result.update(status="wrong outputs", error=f"{len(got)} outputs, PyTorch has {len(expected)}")
            return save()
        if family == "detection":
            # PyTorch's own detections change under float noise: compared with that envelope.
            from samples import detection_check
            keys = list(result_of_check[0].keys())
            got = aligned_outputs(expected, got)
            references = [run[0] for run in detection_check.reference_runs(model, check[0])]
            compared = detection_check.compare(references, dict(zip(keys, got)))
            result.update({k: compared[k] for k in ("detections", "stable", "matched", "swapped", "unexplained",
                                                     "missing", "budget", "budget_unexplained", "budget_missing")})
            result["max_error"] = compared["worst"]
            result["status"] = compared["status"]
            if compared["status"] != "pass":
                result["error"] = detection_check.describe(compared)
            return save()
        errors = [scaled_error(e, g) for e, g in zip(expected, got)]
        result["max_error"] = max(errors)
        if all(float(e.std()) == 0 for e in expected if e.size > 1):
            result.update(status="constant output", error="PyTorch's outputs are constant: the comparison says nothing")
            return save()
        result["status"] = "pass" if result["max_error"] <= TOLERANCE else "wrong numbers"
    except Exception as e:  # noqa: BLE001
        result["error"] = " ".join(f"{type(e).__name__}: {e}".split())[:300]
    save()


# ---------------------------------------------------------------- parent


def run_one(tool, name, family, timeout):
    with tempfile.TemporaryDirectory(prefix=f"zoo-{tool}-{name}-") as workdir:
        result_path = os.path.join(workdir, "result.json")
        model_dir = os.path.join(workdir, "model")
        os.makedirs(model_dir)
        cmd = [sys.executable, os.path.abspath(__file__), "--_child", tool, name, family, model_dir, result_path]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"tool": tool, "model": name, "family": family, "status": "timeout",
                    "error": f"killed after {timeout:.0f} s"}
        if os.path.exists(result_path):
            with open(result_path) as f:
                result = json.load(f)
        else:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            result = {"tool": tool, "model": name, "family": family, "status": "crashed",
                      "error": f"exit {proc.returncode}: {tail[:300]}"}
        result["wall_s"] = time.perf_counter() - start
        return result


def cell(r):
    if r is None:
        return "—", "", "", ""
    if r["status"] == "n/a":
        return r.get("error", "n/a"), "", "", ""
    status = "pass" if r["status"] == "pass" else f"**{r['status']}**"
    err = f"{r['max_error']:.1e}" if r.get("max_error") is not None else ""
    t = f"{r['export_s']:.1f}" if r.get("export_s") is not None else ""
    rss = f"{r['peak_rss_mib']:.0f}" if r.get("peak_rss_mib") is not None else ""
    return status, err, t, rss


def table(models, results, tools):
    head = "| model | family |"
    rule = "|---|---|"
    for tool in tools:
        head += f" {TOOLS[tool]} | error | export s | peak MiB |"
        rule += "---|---|---|---|"
    opset = int(os.environ.get("PT2ONNX_ZOO_OPSET", OPSET))
    title = f"ai.onnx opset {opset}"
    if "dynamo" in tools and dynamo_opset(opset) != opset:
        title += (f" (torch.onnx (dynamo=True): opset {dynamo_opset(opset)}, the lowest it exports; "
                  "dynamo=True rejects ScriptModules)")
    lines = [title, "", head, rule]
    for name, family in models.items():
        row = f"| {name} | {family} |"
        for tool in tools:
            row += " {} | {} | {} | {} |".format(*cell(results.get((tool, name))))
        lines.append(row)
    lines.append("")
    for tool in tools:
        rs = [results[(tool, n)] for n in models if (tool, n) in results and results[(tool, n)]["status"] != "n/a"]
        passed = sum(r["status"] == "pass" for r in rs)
        times = [r["export_s"] for r in rs if r["status"] == "pass"]
        skipped = sum(1 for n in models if results.get((tool, n), {}).get("status") == "n/a")
        lines.append(f"- **{TOOLS[tool]}: {passed} of {len(rs)} pass**; export time of the passing ones "
                     f"{sum(times):.0f} s in total" + (f"; {skipped} not applicable" if skipped else ""))
    if "pt2onnx" in tools:
        for other in (t for t in tools if t != "pt2onnx"):
            both = [n for n in models if all(results.get((t, n), {}).get("status") == "pass" for t in ("pt2onnx", other))]
            if both:
                ratio = (sum(results[(other, n)]["export_s"] for n in both)
                         / sum(results[("pt2onnx", n)]["export_s"] for n in both))
                lines.append(f"- on the {len(both)} models both export: {TOOLS[other]} takes {ratio:.1f}x pt2onnx's "
                             "export time")
    failures = [r for r in results.values() if r["status"] not in ("pass", "n/a")]
    if failures:
        lines.append("")
        lines.append("Errors:")
        for r in failures:
            lines.append(f"- {TOOLS.get(r['tool'], r['tool'])} / {r['model']}: {r['status']}: {r.get('error', '')}")
    return "\n".join(lines)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--tier", choices=["default", "large", "detection", "all"], default="default",
                    help="default: the four families but the 10 largest (87 models); large: the 10 largest (external data); "
                         "detection: the 12 detection and keypoint models")
    ap.add_argument("--models", nargs="+", metavar="NAME", help="only these models (any tier)")
    ap.add_argument("--tools", nargs="+", choices=list(TOOLS), default=list(TOOLS), metavar="TOOL",
                    help="pt2onnx, torchscript (torch.onnx.export dynamo=False), dynamo (torch.onnx.export "
                         "dynamo=True, opset >= 18); default: all three")
    ap.add_argument("--skip-torch-onnx", action="store_true", help="run pt2onnx only (= --tools pt2onnx)")
    ap.add_argument("--timeout", type=float, default=1800, metavar="SECONDS", help="per (tool, model) run")
    ap.add_argument("--output-json", metavar="PATH", help="write every result as JSON (after each run)")
    ap.add_argument("--resume", metavar="PATH", help="take the results of an earlier --output-json and run only "
                    "the (tool, model) pairs it lacks or that crashed or errored")
    ap.add_argument("--markdown", metavar="PATH", help="write the table as Markdown")
    ap.add_argument("--opset", type=int, default=OPSET,
                    help="ai.onnx opset for pt2onnx and torch.onnx (dynamo=False) (default %(default)s); "
                         f"torch.onnx (dynamo=True) uses max(--opset, {DYNAMO_MIN_OPSET})")
    args = ap.parse_args(argv)
    os.environ["PT2ONNX_ZOO_OPSET"] = str(args.opset)
    models = zoo()
    models.update(detection_zoo())
    if args.models:
        unknown = [m for m in args.models if m not in models]
        if unknown:
            ap.error(f"not in the zoo: {', '.join(unknown)}")
        models = {m: models[m] for m in args.models}
    elif args.tier == "default":
        models = {m: f for m, f in models.items() if m not in LARGEST and f != "detection"}
    elif args.tier == "detection":
        models = {m: f for m, f in models.items() if f == "detection"}
    elif args.tier == "large":
        models = {m: models[m] for m in LARGEST}
    tools = ["pt2onnx"] if args.skip_torch_onnx else [t for t in TOOLS if t in args.tools]
    results = {}
    if args.resume:
        with open(args.resume) as f:
            earlier = [r for r in json.load(f) if r["status"] not in ("crashed", "error")]
        for r in earlier:
            r["tool"] = OLD_TOOL_KEYS.get(r["tool"], r["tool"])
        results = {(r["tool"], r["model"]): r for r in earlier if r["model"] in models and r["tool"] in tools}
    total = len(models) * len(tools)
    for name, family in models.items():
        for tool in tools:
            if (tool, name) in results:
                continue
            done = len(results) + 1
            print(f"[{done}/{total}] {TOOLS[tool]} {name} ...", end="", flush=True)
            r = run_one(tool, name, family, args.timeout)
            results[(tool, name)] = r
            extra = f" err {r['max_error']:.1e}" if r.get("max_error") is not None else f" {r.get('error', '')[:120]}"
            print(f" {r['status']} ({r.get('export_s', 0):.1f} s export, {r.get('peak_rss_mib') or 0:.0f} MiB){extra}",
                  flush=True)
            if args.output_json:
                with open(args.output_json, "w") as f:
                    json.dump(list(results.values()), f, indent=1)
    text = table(models, results, tools)
    print()
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_child":
        child(*sys.argv[2:7])
    else:
        main(sys.argv[1:])
