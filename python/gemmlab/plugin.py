"""The C header a gemmlab plugin is built against (kernels/plugin/gemmlab_plugin.h), installed with the
package as gemmlab/include/gemmlab_plugin.h: ``gemmlab.plugin_header()``, or ``gemmlab plugin-header``."""

from __future__ import annotations

from pathlib import Path


def plugin_header() -> Path:
    """The path of ``gemmlab_plugin.h`` in this installation; its folder is what a plugin's build gives
    to ``-I``. ``FileNotFoundError`` (saying to reinstall) where the installation lacks it."""
    p = Path(__file__).resolve().parent / "include" / "gemmlab_plugin.h"
    if not p.is_file():
        raise FileNotFoundError(f"{p} is missing: this installation of gemmlab has no plugin header; reinstall "
                                "gemmlab, or take kernels/plugin/gemmlab_plugin.h from its source tree")
    return p
