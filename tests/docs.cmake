# The docs checked against the code (no GPU needed):
#  docs.cli       docs/cli.md is what the built gemmlab prints for `--help` of every command
#                 (scripts/gen_docs.py --check; the message names the command that refreshes it);
#  docs.layout    results/ holds data and READMEs only, scripts/ only the user tools and lab/ (tests/check_layout.py).
add_test(NAME docs.cli COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/gen_docs.py --check
         --gemmlab $<TARGET_FILE:gemmlab>)
add_test(NAME docs.layout COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_layout.py)
set_tests_properties(docs.cli docs.layout PROPERTIES LABELS docs TIMEOUT 600)
