# The docs checked against the code (no GPU needed):
#  docs.cli       docs/cli.md is what the built gemmlab prints for `--help` of every command
#                 (scripts/gen_docs.py --check; the message names the command that refreshes it);
#  docs.examples  every shell example of README.md and docs/*.md marked `<!-- ci -->` runs against the
#                 built gemmlab and exits as it says, the README's install block builds and installs the
#                 wheel into a fresh venv, and no README block is left unrun (tests/run_doc_examples.py);
#  docs.gpus      docs/gpus.md's table is the models the binary holds (scripts/gen_gpu_table.py --check);
#  docs.layout    results/ holds data and READMEs only, scripts/ only the user tools and lab/ (tests/check_layout.py).
add_test(NAME docs.cli COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/gen_docs.py --check
         --gemmlab $<TARGET_FILE:gemmlab>)
# GEMMLAB_WHEEL_ARCHS (scripts/test.sh): the architectures the wheel was built for, so that the README's
# install block (scripts/build_wheel.sh, then pip install) reuses that build; without it that block skips.
set(GEMMLAB_WHEEL_ARCHS "" CACHE STRING "CUDA architectures of the wheel scripts/test.sh built (for docs.examples)")
set(_wheel_archs)
if(GEMMLAB_WHEEL_ARCHS)
  set(_wheel_archs --wheel-archs ${GEMMLAB_WHEEL_ARCHS})
endif()
add_test(NAME docs.examples COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/run_doc_examples.py
         --gemmlab $<TARGET_FILE:gemmlab> --work ${CMAKE_CURRENT_BINARY_DIR}/doc_examples ${_wheel_archs})
# docs.gpus: docs/gpus.md's table of the generations is the models the built gemmlab holds.
add_test(NAME docs.gpus COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/gen_gpu_table.py --check
         --gemmlab $<TARGET_FILE:gemmlab>)
set_tests_properties(docs.gpus PROPERTIES LABELS docs)
add_test(NAME docs.layout COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_layout.py)
set_tests_properties(docs.cli docs.examples docs.layout PROPERTIES LABELS docs TIMEOUT 600)
# The README's install block rebuilds the wheel in dist/, which wheel.installed reads: one at a time.
set_tests_properties(docs.examples PROPERTIES TIMEOUT 1800 RESOURCE_LOCK gemmlab_wheel)
# The CSV columns and statuses of docs/csv.md are held against the C++ writer by the CPU tests Docs.*
# (tests/cpu/test_docs.cpp) and against the Python package by tests/python/test_docs.py, which also checks
# docs/python.md's signatures and parameters and runs its `<!-- ci: python -->` examples.
