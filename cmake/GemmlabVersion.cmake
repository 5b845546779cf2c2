# gemmlab's version, from its one place: the `version` of pyproject.toml's [project] table. Sets
# GEMMLAB_VERSION (e.g. 0.1.0), which project(), the generated git_version.cpp (gemmlab_version(): the
# metadata's gemmlab_version and `gemmlab --version`) and the Python package (gemmlab.__version__,
# read from the same function) all take. GEMMLAB_ROOT: the repository's root.
file(STRINGS "${GEMMLAB_ROOT}/pyproject.toml" _gemmlab_version_line REGEX "^version = \"[0-9]+\\.[0-9]+\\.[0-9]+\"$")
if(NOT _gemmlab_version_line MATCHES "\"([0-9]+\\.[0-9]+\\.[0-9]+)\"")
  message(FATAL_ERROR "gemmlab: pyproject.toml has no line 'version = \"X.Y.Z\"' (the project's one version string)")
endif()
set(GEMMLAB_VERSION "${CMAKE_MATCH_1}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${GEMMLAB_ROOT}/pyproject.toml")
