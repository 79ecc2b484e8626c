"""Which link order makes integer formatting in an extension's error messages
work on the GPU image (see fmt_probe.py for the crash).

Builds the same two-function extension several ways and calls each in a child
process (a crash must not end the probe), then prints which library each
std:: symbol of the default build binds to (LD_DEBUG=bindings).

    python tests_gpu/harness/abi_probe.py [build_dir]
"""

import os
import subprocess
import sys
import textwrap

import torch  # noqa: F401  (loads the C++ runtime that VARIANTS links by path)

SRC = textwrap.dedent("""
    #include <torch/extension.h>
    #include <sstream>
    void f(int64_t v) { TORCH_CHECK(false, "value ", v); }
    std::string g(int64_t v) { std::ostringstream s; s << "raw " << v; return s.str(); }
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f); m.def("g", &g); }
""")

VARIANTS = {
    "default": [],
    # what CMakeLists.txt does: the runtime torch runs on, by path, not as needed
    "runtime_by_path": [
        "-Wl,--no-as-needed",
        next(
            (ln.split()[-1] for ln in open("/proc/self/maps") if "/libstdc++.so" in ln), "-lstdc++"
        ),
    ],
    "static_stdcxx": ["-static-libstdc++"],
}

CHILD = """
import sys, torch, importlib.util
spec = importlib.util.spec_from_file_location(sys.argv[2], sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print("  g:", m.g(7), flush=True)
try:
    m.f(3)
except RuntimeError as e:
    print("  f:", str(e).splitlines()[0][:50], flush=True)
"""


def build(name, ldflags, build_dir):
    from torch.utils.cpp_extension import load

    src = os.path.join(build_dir, "probe.cpp")
    with open(src, "w") as fh:
        fh.write(SRC)
    d = os.path.join(build_dir, name)
    os.makedirs(d, exist_ok=True)
    load(name, [src], extra_ldflags=ldflags, build_directory=d, verbose=False)
    return os.path.join(d, name + ".so")


def run(so, name, env=None, full=False):
    r = subprocess.run(
        [sys.executable, "-c", CHILD, so, name],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    return r.returncode, r.stdout + (r.stderr if full else r.stderr[-600:])


def main():
    build_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp/abi_probe"
    os.makedirs(build_dir, exist_ok=True)
    libs = sorted(
        {ln.split()[-1] for ln in open("/proc/self/maps") if "stdc++" in ln or "libgcc_s" in ln}
    )
    print("torch", torch.__version__, "loaded:", libs)
    try:
        torch.zeros(2)[5]
    except IndexError as e:
        print("torch's own message with a number:", e)
    sos = {}
    for name, flags in VARIANTS.items():
        try:
            sos[name] = build("probe_" + name, flags, build_dir)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: build failed: {e}")
            continue
        rc, out = run(sos[name], "probe_" + name)
        print(f"{name}: rc={rc}\n{out}")
        deps = subprocess.run(["readelf", "-d", sos[name]], capture_output=True, text=True).stdout
        print(
            "  NEEDED:",
            [ln.split("[")[1].rstrip("]") for ln in deps.splitlines() if "NEEDED" in ln],
        )
    if "default" in sos:
        for lib in libs:
            if "stdc++" in lib:
                rc, out = run(sos["default"], "probe_default", {"LD_PRELOAD": lib})
                print(f"default with LD_PRELOAD={lib}: rc={rc}\n{out}")
        rc, out = run(sos["default"], "probe_default", {"LD_DEBUG": "bindings"}, full=True)
        keep = []
        for ln in out.splitlines():
            if "binding file" not in ln or "probe_default.so" not in ln.split(" to ")[0]:
                continue
            target, _, sym = ln.split(" to ", 1)[1].partition(": normal symbol ")
            if (
                not sym.startswith("`_ZNS")
                and not sym.startswith("`_ZNK")
                and not sym.startswith("`_ZSt")
                and not sym.startswith("`_ZTVS")
            ):
                continue
            if "probe_default.so" in target:
                continue
            if "stdc++" not in target or any(k in sym for k in ("ostream", "So", "ios", "locale")):
                keep.append(target.split()[0].rsplit("/", 1)[-1] + " " + sym)
        print("std:: symbols of probe_default.so bound outside it (torch libs, or stream/locale):")
        print("\n".join(sorted(set(keep))))


if __name__ == "__main__":
    main()
