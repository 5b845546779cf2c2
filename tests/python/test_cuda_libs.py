"""Finding cuBLAS at run time (gemmlab/_cuda_libs.py) and the gemmlab command's entry (gemmlab/_cli.py).

Each search is run on a fake tree of folders (empty files named like the libraries), with the
process's environment, sys.path, loaded libraries, ldconfig cache and CUDA folders replaced, so the
order of the places and the messages are checked whatever this machine has.
"""

import os
import subprocess
import sys

import pytest

from gemmlab import _cli, _cuda_libs
from gemmlab._cuda_libs import CudaLibrariesNotFound, find

NAMES = ("libcublasLt.so.13", "libcublas.so.13")


def make_libs(d, names=NAMES):
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        (d / n).write_bytes(b"")
    return d


def search(**kw):
    """find() with nothing from this machine unless given."""
    args = dict(environ={}, search_path=[], maps="", ldconfig={}, cuda_lib_dirs=[])
    args.update(kw)
    return find(NAMES, **args)


def test_nothing_to_find_for_a_cpu_only_build():
    assert find((), environ={}, search_path=[], maps="", ldconfig={}, cuda_lib_dirs=[]) is None


def test_pip_wheel_of_cuda_13_is_found_before_the_system(tmp_path):
    site = tmp_path / "site-packages"
    make_libs(site / "nvidia" / "cu13" / "lib")
    system = make_libs(tmp_path / "cuda" / "lib64")
    f = search(search_path=[str(tmp_path / "elsewhere"), str(site)],
               ldconfig={n: str(system / n) for n in NAMES}, cuda_lib_dirs=[str(system)])
    assert f.paths == tuple(str(site / "nvidia" / "cu13" / "lib" / n) for n in NAMES)
    assert "pip wheel" in f.source and not f.loader_finds
    assert f.dirs == [str(site / "nvidia" / "cu13" / "lib")]


def test_cuda_12_pip_layout(tmp_path):
    make_libs(tmp_path / "nvidia" / "cublas" / "lib")
    assert search(search_path=[str(tmp_path)]).dirs == [str(tmp_path / "nvidia" / "cublas" / "lib")]


def test_a_folder_with_one_library_of_two_is_passed_over(tmp_path):
    make_libs(tmp_path / "site" / "nvidia" / "cu13" / "lib", names=NAMES[1:])
    full = make_libs(tmp_path / "toolkit")
    assert search(search_path=[str(tmp_path / "site")], cuda_lib_dirs=[str(full)]).dirs == [str(full)]


def test_the_named_folder_wins_and_is_the_only_one_tried(tmp_path):
    named = make_libs(tmp_path / "mine")
    make_libs(tmp_path / "site" / "nvidia" / "cu13" / "lib")
    f = search(environ={"GEMMLAB_CUDA_LIB_DIR": str(named)}, search_path=[str(tmp_path / "site")])
    assert f.dirs == [str(named)] and "GEMMLAB_CUDA_LIB_DIR" in f.source
    half = make_libs(tmp_path / "half", names=NAMES[:1])
    with pytest.raises(CudaLibrariesNotFound, match=r"GEMMLAB_CUDA_LIB_DIR=.*half names a folder without libcublas\.so\.13"):
        search(environ={"GEMMLAB_CUDA_LIB_DIR": str(half)}, search_path=[str(tmp_path / "site")])


def test_a_copy_already_loaded_is_shared(tmp_path):
    # As PyTorch maps its pip cuBLAS; the system's files are mapped under their full version.
    maps = (f"7f00-7f10 r-xp 00000000 08:01 123   {tmp_path}/torch/lib/libcublasLt.so.13.1.0.3\n"
            "7f10-7f20 r--p 00000000 00:00 0 \n"
            f"7f20-7f30 r-xp 00000000 08:01 124   {tmp_path}/torch/lib/libcublas.so.13.1.0.3\n")
    make_libs(tmp_path / "site" / "nvidia" / "cu13" / "lib")
    f = search(maps=maps, search_path=[str(tmp_path / "site")])
    assert f.paths == (f"{tmp_path}/torch/lib/libcublasLt.so.13.1.0.3", f"{tmp_path}/torch/lib/libcublas.so.13.1.0.3")
    assert f.source == "already loaded in this process"
    # libcublas.so.130 is another library, not a version of libcublas.so.13.
    with pytest.raises(CudaLibrariesNotFound):
        search(maps=maps.replace("libcublas.so.13.1.0.3", "libcublas.so.130"))


def test_the_loader_finds_them_by_itself(tmp_path):
    d = make_libs(tmp_path / "ld")
    f = search(environ={"LD_LIBRARY_PATH": f"/nonexistent::{d}"})
    assert f.loader_finds and f.dirs == [str(d)]
    f = search(ldconfig={n: f"/usr/lib/x86_64-linux-gnu/{n}" for n in NAMES})
    assert f.loader_finds and f.source == "the system (ldconfig)"
    with pytest.raises(CudaLibrariesNotFound):  # one of two in the cache is not enough
        search(ldconfig={NAMES[0]: f"/usr/lib/{NAMES[0]}"})


def test_cuda_toolkit_folders(tmp_path):
    home = tmp_path / "cuda-13.0"
    make_libs(home / "targets" / "x86_64-linux" / "lib")
    f = search(environ={"CUDA_HOME": str(home)}, cuda_lib_dirs=None)
    assert f.dirs == [str(home / "targets" / "x86_64-linux" / "lib")] and not f.loader_finds


def test_nothing_found_names_what_to_install(tmp_path):
    with pytest.raises(CudaLibrariesNotFound) as e:
        search(search_path=[str(tmp_path)], cuda_lib_dirs=[str(tmp_path / "cuda" / "lib64")])
    msg = str(e.value)
    assert "libcublasLt.so.13 and libcublas.so.13 not found" in msg
    assert 'pip install "nvidia-cublas>=13,<14"' in msg and "GEMMLAB_CUDA_LIB_DIR" in msg
    assert "LD_LIBRARY_PATH" in msg and str(tmp_path / "cuda" / "lib64") in msg
    with pytest.raises(CudaLibrariesNotFound, match=r"pip install nvidia-cublas-cu12"):
        find(("libcublasLt.so.12", "libcublas.so.12"), environ={}, search_path=[], maps="", ldconfig={},
             cuda_lib_dirs=[])


def test_ldconfig_cache_is_parsed(monkeypatch):
    out = ("3 libs found in cache `/etc/ld.so.cache'\n"
           "\tlibcublas.so.13 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libcublas.so.13\n"
           "\tlibcublas.so.13 (libc6) => /usr/lib32/libcublas.so.13\n"
           "\tlibgmp.so.10 (libc6,x86-64) => /lib/x86_64-linux-gnu/libgmp.so.10\n")
    monkeypatch.setattr(_cuda_libs.shutil, "which", lambda name: "/sbin/ldconfig")
    monkeypatch.setattr(_cuda_libs.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=out, stderr=""))
    assert _cuda_libs._ldconfig_cache() == {"libcublas.so.13": "/usr/local/cuda-13.0/lib/libcublas.so.13",
                                            "libgmp.so.10": "/lib/x86_64-linux-gnu/libgmp.so.10"}


def test_command_environment_puts_the_folder_first_once(tmp_path):
    f = _cuda_libs.Found((f"{tmp_path}/a/{NAMES[0]}", f"{tmp_path}/a/{NAMES[1]}"), "test", False)
    env = _cli.command_environment(f, {"LD_LIBRARY_PATH": f"/x:{tmp_path}/a:/y", "HOME": "/h"})
    assert env == {"LD_LIBRARY_PATH": f"{tmp_path}/a:/x:/y", "HOME": "/h"}
    assert _cli.command_environment(f, {})["LD_LIBRARY_PATH"] == f"{tmp_path}/a"
    by_loader = _cuda_libs.Found(f.paths, "the system (ldconfig)", True)
    assert _cli.command_environment(by_loader, {"A": "1"}) == {"A": "1"}
    assert _cli.command_environment(None, {"A": "1"}) == {"A": "1"}


def test_command_without_executable_says_what_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(_cli, "EXE", tmp_path / "_bin" / "gemmlab")
    with pytest.raises(SystemExit) as e:
        _cli.main()
    assert e.value.code == 2
    assert "has no gemmlab command" in capsys.readouterr().err


def test_command_without_cublas_still_runs_the_executable(monkeypatch, tmp_path):
    # The commands that launch nothing need no cuBLAS: the entry runs the executable anyway, its
    # environment unchanged, and a command that launches a kernel names what is missing itself.
    exe = tmp_path / "gemmlab"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    monkeypatch.setattr(_cli, "EXE", exe)
    monkeypatch.setenv("GEMMLAB_CUDA_LIB_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("LD_LIBRARY_PATH", "/x")
    monkeypatch.setattr(_cuda_libs, "CUBLAS_LIBRARIES", NAMES)
    monkeypatch.setattr(sys, "argv", ["gemmlab", "list"])
    calls = []

    def execve(path, argv, env):
        calls.append((path, argv, env))
        raise SystemExit(0)

    monkeypatch.setattr(os, "execve", execve)
    with pytest.raises(SystemExit):
        _cli.main()
    assert len(calls) == 1
    path, argv, env = calls[0]
    assert path == exe and argv == ["gemmlab", "list"] and env["LD_LIBRARY_PATH"] == "/x"


@pytest.mark.skipif(os.environ.get("GEMMLAB_EXPECT_GPU_ENGINE") != "1",
                    reason="GEMMLAB_EXPECT_GPU_ENGINE=1 is set by scripts/test.sh where a CUDA toolkit is installed")
def test_installed_package_knows_and_finds_its_cublas():
    from gemmlab import _build_config

    assert _build_config.CUBLAS_LIBRARIES[0].startswith("libcublasLt.so.")
    assert _build_config.CUBLAS_LIBRARIES[1].startswith("libcublas.so.")
    found = find()
    assert found is not None and all(os.path.isfile(p) for p in found.paths)


def test_python_m_gemmlab_is_the_command():
    # The same entry as the console script: without a command it says so, else `--help` is the CLI's.
    r = subprocess.run([sys.executable, "-m", "gemmlab", "--help"], capture_output=True, text=True, timeout=120)
    if not _cli.EXE.is_file():
        assert r.returncode == 2 and "has no gemmlab command" in r.stderr
        return
    try:
        find()
    except CudaLibrariesNotFound:
        assert r.returncode == 2 and "the gemmlab command needs cuBLAS" in r.stderr
        return
    assert r.returncode == 0 and "gemmlab: accuracy and speed of GPU GEMM kernels" in r.stdout, r.stderr
