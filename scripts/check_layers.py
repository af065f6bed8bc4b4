#!/usr/bin/env python3
"""Checks the layering of lib/ (docs/architecture.md): every `#include <wm/LAYER/...>` in a
library must name its own layer or one below it, search sees only the measurement API of the
runtime, and the heavy dependencies stay where they belong (LLVM in lib/codegen, libtorch in the
world model and the reference executor, protobuf/ONNX in the ONNX loader). Exits 1 and lists
every violation. Run by CTest (unit: layering)."""
import os
import re
import sys

# layer -> layers it may include (besides itself). An arrow in docs/architecture.md.
ALLOWED = {
    "support": set(),
    "rt": set(),
    "target": {"support"},
    "ir": {"support"},
    "frontend": {"ir", "support"},
    "schedule": {"ir", "support"},
    "lower": {"schedule", "ir", "support"},
    "codegen": {"lower", "schedule", "ir", "target", "rt", "support"},
    "costmodel": {"lower", "schedule", "ir", "target", "support"},
    "runtime": {"codegen", "frontend", "lower", "schedule", "ir", "target", "rt", "support"},
    "search": {"costmodel", "runtime", "lower", "schedule", "ir", "target", "support"},
    "bench": {"search", "frontend", "support"},
    "distributed": {"search", "runtime", "schedule", "support"},
    "export": {"search", "runtime", "codegen", "frontend", "lower", "schedule", "ir", "target", "rt",
               "support"},
}
# Of a lower layer, only these headers may be included (the rest is the layer's own business).
ONLY = {("search", "runtime"): {"measure.h"}, ("bench", "search"): {"tuning_log.h"},
        ("export", "search"): {"tuning_log.h"},
        ("distributed", "search"): {"tuning_log.h", "tuner.h"}, ("distributed", "runtime"): {"measure.h"}, ("export", "runtime"): {"buffer.h"}}
# Third-party headers and the only files that may include them.
HEAVY = [
    (re.compile(r"#include\s*<llvm/"), lambda p: p.startswith("lib/codegen/"), "LLVM"),
    (re.compile(r"#include\s*<(torch|ATen|c10)/"),
     lambda p: p in ("lib/costmodel/worldmodel.cpp", "lib/runtime/torch_reference.cpp"), "libtorch"),
    (re.compile(r"#include\s*<(onnx|google/protobuf)/"), lambda p: p == "lib/frontend/onnx/loader.cpp", "ONNX/protobuf"),
    (re.compile(r"#include\s*<mpi\.h>"), lambda p: p == "lib/distributed/mpi.cpp", "MPI"),
    (re.compile(r"#include\s*<xgboost/"), lambda p: p == "lib/costmodel/ansor_model.cpp", "XGBoost"),
]
INCLUDE = re.compile(r'#include\s*<wm/([a-z_]+)/([^>]+)>')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    bad = []
    checked = 0
    for dirpath, _, files in os.walk(os.path.join(root, "lib")):
        for f in sorted(files):
            if not f.endswith((".h", ".cpp")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            layer = rel.split("/")[1]
            if layer not in ALLOWED:
                bad.append(f"{rel}: layer '{layer}' is not in the layer table of {__file__}")
                continue
            with open(path, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.search(line)
                    if m:
                        checked += 1
                        dep, header = m.group(1), m.group(2)
                        if dep != layer and dep not in ALLOWED[layer]:
                            bad.append(f"{rel}:{n}: {layer} may not include <wm/{dep}/{header}> (an upward or sideways include)")
                        only = ONLY.get((layer, dep))
                        if only is not None and header not in only:
                            bad.append(f"{rel}:{n}: {layer} may include only {sorted(only)} of {dep}, not {header}")
                    for pattern, allowed, what in HEAVY:
                        if pattern.search(line) and not allowed(rel):
                            bad.append(f"{rel}:{n}: {what} headers are not allowed here")
    for b in bad:
        print(b)
    print(f"layering: {checked} includes checked, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
