# The gemmlab wheel (scripts/build_wheel.sh) as a user installs it: into a fresh venv of
# GEMMLAB_WHEEL_PYTHON, outside the repository (tests/wheel_check.sh: the command, the Python CPU API,
# the libraries it needs at run time, the licenses). scripts/test.sh builds the wheel and sets both.
set(GEMMLAB_WHEEL "" CACHE FILEPATH "the gemmlab wheel to check in a fresh venv (scripts/test.sh sets it)")
set(GEMMLAB_WHEEL_PYTHON "python3" CACHE STRING "the Python the wheel is for")
if(GEMMLAB_WHEEL)
  add_test(NAME wheel.installed
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/wheel_check.sh ${GEMMLAB_WHEEL} ${CMAKE_CURRENT_BINARY_DIR}/wheel-venv
            ${GEMMLAB_WHEEL_PYTHON})
  set_tests_properties(wheel.installed PROPERTIES LABELS wheel TIMEOUT 900 RESOURCE_LOCK gemmlab_wheel)
endif()
