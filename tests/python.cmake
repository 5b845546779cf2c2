# The Python package's tests (tests/python/, pytest) on the package installed in .venv (scripts/test.sh
# installs it from this tree first). pytest's exit 5 ("no tests collected") fails here like any
# non-zero exit, so a run that collected nothing never passes.
add_test(NAME python.pytest
  COMMAND ${GEMMLAB_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/tests/python
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
# GEMMLAB_BIN: the CLI, for the GPU test that holds gemmlab.judge's rows against `gemmlab run`'s.
set_tests_properties(python.pytest PROPERTIES LABELS python TIMEOUT 600
                     ENVIRONMENT "GEMMLAB_BIN=$<TARGET_FILE:gemmlab>")
