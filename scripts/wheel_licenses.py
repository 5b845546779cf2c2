#!/usr/bin/env python3
"""Adds the licenses of what a repaired gemmlab wheel carries to its .dist-info/licenses/ (run by
scripts/build_wheel.sh after `auditwheel repair`).

usage: wheel_licenses.py WHEEL --compiled-in DEB_PACKAGE... [--file NAME=PATH ...]

* The shared libraries auditwheel copied into the wheel (gemmlab.libs/: MPFR, GMP, ...): each is
  traced back to the Debian package that installed it (dpkg -S), whose copyright file and the
  common licenses it names (LGPL-3, GPL-3, ...) go in licenses/<package>/.
* --compiled-in: Debian packages of libraries compiled into gemmlab (header-only: CLI11, toml++,
  nlohmann-json, Eigen): their copyright files, likewise.
* --file NAME=PATH: other notices (nanobind's license, the CUDA runtime's EULA), as licenses/NAME.
licenses/THIRD_PARTY.md lists them all with the package versions. The wheel is rewritten in place
with its RECORD updated; a bundled library that cannot be traced stops the script (exit 1), so no
wheel leaves without the license of a library it carries.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import subprocess
import sys
import zipfile
from pathlib import Path

COMMON = Path("/usr/share/common-licenses")


def fail(msg: str) -> None:
    sys.stderr.write(f"wheel_licenses: {msg}\n")
    sys.exit(1)


def dpkg(*args: str) -> str:
    try:
        return subprocess.run(["dpkg-query", *args], check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        fail("dpkg-query not found: the licenses of bundled libraries are traced through Debian's packages "
             "(build the wheel on Debian or Ubuntu, as scripts/setup.sh sets up)")
    except subprocess.CalledProcessError as e:
        fail(f"dpkg-query {' '.join(args)} failed: {e.stderr.strip()}")
    raise AssertionError


def package_of(original_name: str) -> str:
    """The Debian package that installed the library file named ``original_name``."""
    out = dpkg("-S", f"*/{original_name}")
    pkgs = sorted({line.split(":")[0] for line in out.splitlines() if line.strip()})
    if len(pkgs) != 1:
        fail(f"{original_name} is installed by {pkgs or 'no Debian package'}; expected exactly one")
    return pkgs[0]


def package_files(pkg: str) -> dict[str, bytes]:
    """licenses/<pkg>/...: the package's copyright file and the common licenses it names."""
    version = dpkg("-W", "-f=${Version}", pkg).strip()
    copyright_path = Path("/usr/share/doc") / pkg / "copyright"
    if not copyright_path.is_file():
        fail(f"{copyright_path} is missing: cannot include the license of {pkg} {version}")
    text = copyright_path.read_text(errors="replace")
    files = {f"{pkg}/copyright": text.encode()}
    # The common licenses named by path, and by the copyright file's "License:" fields (DEP-5 short
    # names: "MPL-2" is common-licenses/MPL-2.0, "LGPL-3+" is LGPL-3).
    names = {n.rstrip(".") for n in re.findall(r"/usr/share/common-licenses/([A-Za-z0-9.+-]+)", text)}
    for field in re.findall(r"^License: *(.+)$", text, flags=re.M):
        names.update(n.strip().rstrip("+") for n in re.split(r"\bor\b|\band\b|,", field))
    if "LGPL-3" in names:  # the LGPL-3 is a set of permissions added to the GPL-3: both texts
        names.add("GPL-3")
    for name in sorted(names):
        for candidate in (name, name + ".0"):
            if candidate and (COMMON / candidate).is_file():
                files[f"{pkg}/{candidate}"] = (COMMON / candidate).read_bytes()
                break
    return files


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("--compiled-in", nargs="*", default=[], metavar="DEB_PACKAGE")
    ap.add_argument("--file", action="append", default=[], metavar="NAME=PATH")
    a = ap.parse_args()

    with zipfile.ZipFile(a.wheel) as z:
        entries = [(info, z.read(info)) for info in z.infolist()]
    names = [i.filename for i, _ in entries]
    dist_info = next((n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")), None)
    if dist_info is None:
        fail(f"{a.wheel} has no .dist-info folder: not a wheel")
    record = f"{dist_info}/RECORD"

    licenses: dict[str, bytes] = {}
    rows: list[str] = []
    # gemmlab.libs/libmpfr-1a2b3c4d.so.6.2.0: auditwheel's copy of libmpfr.so.6.2.0.
    bundled = sorted(n for n in names if re.match(r"[^/]+\.libs/[^/]+\.so", n))
    for n in bundled:
        base = n.split("/")[-1]
        original = re.sub(r"-[0-9a-f]{8}(?=\.so)", "", base)
        pkg = package_of(original)
        licenses.update(package_files(pkg))
        rows.append(f"| {n} | {original}, bundled as a shared library | {pkg} "
                    f"{dpkg('-W', '-f=${Version}', pkg).strip()} | {pkg}/ |")
    for pkg in a.compiled_in:
        licenses.update(package_files(pkg))
        rows.append(f"| compiled in | {pkg} (header-only) | {pkg} {dpkg('-W', '-f=${Version}', pkg).strip()} "
                    f"| {pkg}/ |")
    for spec in a.file:
        name, sep, path = spec.partition("=")
        if not sep or not Path(path).is_file():
            fail(f"--file {spec}: expected NAME=PATH of an existing file")
        licenses[name] = Path(path).read_bytes()
        rows.append(f"| compiled in | {name} | | {name} |")

    readme = ("# Third-party software in this wheel\n\n"
              "gemmlab's wheel carries the shared libraries below (copied by auditwheel from the Debian "
              "packages named, unmodified: each can be replaced by another build of the same library) and "
              "compiles in the header-only libraries and static runtimes listed. cuBLAS and the CUDA driver "
              "are not included: they are the machine's. The sources of the Debian packages: "
              "`apt-get source PACKAGE=VERSION`, or snapshot.debian.org.\n\n"
              "| in the wheel | what | package and version | license files |\n| --- | --- | --- | --- |\n"
              + "\n".join(rows) + "\n")
    licenses["THIRD_PARTY.md"] = readme.encode()

    # The wheel's own license files (gemmlab's LICENSE, put there by scikit-build-core) stay; those of this
    # script are written anew.
    own = [i.filename for i, _ in entries if i.filename.startswith(f"{dist_info}/licenses/") and not i.is_dir()
           and i.filename[len(f"{dist_info}/licenses/"):] not in licenses]
    if f"{dist_info}/licenses/LICENSE" not in own:
        fail(f"{a.wheel.name} has no {dist_info}/licenses/LICENSE: gemmlab's own license (pyproject.toml's "
             "[tool.scikit-build] wheel.license-files) is missing")
    out_entries = [(i, d) for i, d in entries if i.filename != record
                   and not (i.filename.startswith(f"{dist_info}/licenses/") and i.filename not in own)]
    for name, data in sorted(licenses.items()):
        out_entries.append((zipfile.ZipInfo(f"{dist_info}/licenses/{name}", date_time=(2020, 1, 1, 0, 0, 0)), data))
    # RECORD lists files (never the zip's folder entries), itself last without a hash.
    record_rows = [record_line(i.filename, d) for i, d in out_entries if not i.is_dir()] + [f"{record},,"]
    tmp = a.wheel.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for info, data in out_entries:
            info.compress_type = zipfile.ZIP_DEFLATED
            if info.filename.startswith(f"{dist_info}/licenses/"):
                info.external_attr = 0o644 << 16
            z.writestr(info, data)
        z.writestr(zipfile.ZipInfo(record, date_time=(2020, 1, 1, 0, 0, 0)), "\n".join(record_rows) + "\n")
    tmp.replace(a.wheel)
    print(f"wheel_licenses: {len(licenses)} files in {dist_info}/licenses ({len(bundled)} bundled libraries, "
          f"{len(a.compiled_in)} compiled-in packages, {len(a.file)} other notices)")


if __name__ == "__main__":
    main()
