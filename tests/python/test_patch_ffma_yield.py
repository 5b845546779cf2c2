"""scripts/lab/patch_ffma_yield.py (issue 22's experiment): the FFMA control bits it flips, on a synthetic
SASS listing and binary, and its refusals."""

import importlib.util
import subprocess
import sys

import pytest

REUSE_B, YIELD = 1 << 59, 1 << 45


def load(root):
    spec = importlib.util.spec_from_file_location("patch_ffma_yield", root / "scripts/lab/patch_ffma_yield.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def listing(functions):
    """cuobjdump -sass layout: per instruction a text line with the low word, then a line with the high word."""
    out = []
    for name, instructions in functions:
        out.append(f"\t\tFunction : {name}")
        for i, (text, lo, hi) in enumerate(instructions):
            out.append(f"        /*{16 * i:04x}*/                   {text} ;  /* 0x{lo:016x} */")
            out.append(f"                                                   /* 0x{hi:016x} */")
    return "\n".join(out) + "\n"


# The target: a run of 4 FFMAs (two with .reuse), an arrive, a run of 2 FFMAs (one predicated, with .reuse).
TARGET = [
    ("FFMA R2, R10, R20.reuse, R2", 0x000000140A027223, REUSE_B | YIELD | (1 << 41)),
    ("FFMA R3, R11, R20, R3", 0x000000140B037223, 1 << 41),
    ("FFMA R4, R12, R20.reuse, R4", 0x000000140C047223, REUSE_B | YIELD | (1 << 41)),
    ("FFMA R5, R13, R20, R5", 0x000000140D057223, 1 << 41),
    ("SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R8+URZ], RZ", 0x000000FF08FF79A7, 1 << 41),
    ("@!P0 FFMA R6, R14, R21.reuse, R6", 0x000000150E068223, REUSE_B | YIELD | (1 << 41)),
    ("FFMA R7, R15, R21, R7", 0x000000150F077223, 1 << 41),
]
OTHER = [("FFMA R2, R3, R4, R2", 0x0000000403027223, REUSE_B | YIELD)]


@pytest.fixture
def files(tmp_path, root):
    m = load(root)
    sass = tmp_path / "sass.txt"
    sass.write_text(listing([("_Z5otherv", OTHER), ("_Z6targetILi0ENS_7FastestEEv", TARGET)]))
    binary = tmp_path / "gemmlab"
    binary.write_bytes(b"\x7fELF" + bytes(60) + m.encode([list(x) for x in TARGET]) + bytes(32))
    return m, sass, binary


def high_words(m, path, at=64):
    data = path.read_bytes()
    return [int.from_bytes(data[at + 16 * k + 8: at + 16 * k + 16], "little") for k in range(len(TARGET))]


def run(root, *args):
    return subprocess.run([sys.executable, str(root / "scripts/lab/patch_ffma_yield.py"), *map(str, args)],
                          capture_output=True, text=True)


def test_deepgemm_rule_flips_reuse_and_yield_on_the_reused_ffmas_of_each_runs_first_nine_sixteenths(root, files, tmp_path):
    m, sass, binary = files
    out = tmp_path / "patched"
    r = run(root, sass, "FastestE", binary, out, "deepgemm")
    assert r.returncode == 0, r.stderr
    his = high_words(m, out)
    original = [hi for _, _, hi in TARGET]
    # Run 1 (4 FFMAs): its first 4 * 9 // 16 = 2 are considered; only the first carries .reuse.
    assert his[0] == original[0] ^ (REUSE_B | YIELD)
    assert his[1:4] == original[1:4]
    # Not an FFMA; run 2 (2 FFMAs): 2 * 9 // 16 = 1 considered, the predicated one with .reuse.
    assert his[4] == original[4]
    assert his[5] == original[5] ^ (REUSE_B | YIELD)
    assert his[6] == original[6]
    # The low words (opcodes and operands) and the bytes around the kernel are untouched.
    a, b = binary.read_bytes(), out.read_bytes()
    assert len(a) == len(b) and a[:64] == b[:64] and a[-32:] == b[-32:]
    assert all(a[64 + 16 * k: 72 + 16 * k] == b[64 + 16 * k: 72 + 16 * k] for k in range(len(TARGET)))
    assert "2 runs, 2 changed" in r.stdout


def test_all_rule_clears_reuse_and_yield_on_every_ffma_only(root, files, tmp_path):
    m, sass, binary = files
    out = tmp_path / "patched"
    assert run(root, sass, "FastestE", binary, out, "all").returncode == 0
    for (text, _, hi), new in zip(TARGET, high_words(m, out)):
        assert new == (hi & ~(REUSE_B | YIELD) if "FFMA" in text else hi), text


def test_refuses_an_ambiguous_function_a_binary_without_the_kernel_or_with_it_twice(root, files, tmp_path):
    m, sass, binary = files
    r = run(root, sass, "_Z", binary, tmp_path / "x", "all")
    assert r.returncode != 0 and "2 functions contain '_Z'" in r.stderr
    other = tmp_path / "other"
    other.write_bytes(bytes(256))
    r = run(root, sass, "FastestE", other, tmp_path / "x", "all")
    assert r.returncode != 0 and "not there exactly once" in r.stderr
    twice = tmp_path / "twice"
    twice.write_bytes(binary.read_bytes() * 2)
    r = run(root, sass, "FastestE", twice, tmp_path / "x", "all")
    assert r.returncode != 0 and "not there exactly once" in r.stderr
    assert not (tmp_path / "x").exists()


def test_refuses_a_missing_listing_or_binary_and_an_unwritable_out_naming_the_file(root, files, tmp_path):
    m, sass, binary = files
    r = run(root, tmp_path / "none.txt", "FastestE", binary, tmp_path / "x", "all")
    assert r.returncode != 0 and "none.txt: cannot read it" in r.stderr and "Traceback" not in r.stderr
    r = run(root, sass, "FastestE", tmp_path / "nobinary", tmp_path / "x", "all")
    assert r.returncode != 0 and "nobinary: cannot read it" in r.stderr and "Traceback" not in r.stderr
    r = run(root, sass, "FastestE", binary, tmp_path / "no_dir" / "x", "all")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob(".patch_ffma_yield.*"))
    # A patched copy keeps the binary's permissions.
    binary.chmod(0o755)
    assert run(root, sass, "FastestE", binary, tmp_path / "y", "all").returncode == 0
    assert (tmp_path / "y").stat().st_mode & 0o777 == 0o755
