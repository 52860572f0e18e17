"""MDL-LOCAL-310: the README's install builds llama.cpp for the CPU's listed x86-64 features, never AMX."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "llama-cmake-args"
ON_X86_LINUX = platform.system() == "Linux" and platform.machine() == "x86_64"


def _args(tmp_path: Path, flags: str) -> list[str]:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    done = subprocess.run(["sh", str(SCRIPT)], env={"PATH": "/usr/bin:/bin", "LLAMABOT_CPUINFO": str(cpuinfo)},
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_mdl_local_310_a_cpu_that_lists_amx_gets_its_avx512_features_and_amx_off(tmp_path: Path) -> None:
    flags = ("fpu sse4_2 avx avx2 fma f16c bmi2 avx_vnni avx512f avx512bw avx512dq avx512vl avx512cd avx512vbmi "
             "avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16")
    args = _args(tmp_path, flags)
    if not ON_X86_LINUX:  # elsewhere llama.cpp's own defaults apply
        assert args == []
        return
    assert "-DGGML_NATIVE=OFF" in args
    for feature in ("AVX", "AVX2", "FMA", "F16C", "BMI2", "AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI",
                    "AVX512_BF16"):
        assert f"-DGGML_{feature}=ON" in args, feature
    for amx in ("AMX_TILE", "AMX_INT8", "AMX_BF16"):
        assert f"-DGGML_{amx}=OFF" in args and f"-DGGML_{amx}=ON" not in args


def test_mdl_local_310_only_the_features_the_first_cpu_lists_are_turned_on(tmp_path: Path) -> None:
    args = _args(tmp_path, "fpu sse4_2 avx avx2 fma f16c avx512f")  # avx512f alone: not the AVX512 set ggml needs
    if not ON_X86_LINUX:
        assert args == []
        return
    on = sorted(a for a in args if a.endswith("=ON"))
    assert on == ["-DGGML_AVX2=ON", "-DGGML_AVX=ON", "-DGGML_F16C=ON", "-DGGML_FMA=ON"]
    assert "-DGGML_NATIVE=OFF" in args
