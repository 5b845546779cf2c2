# Writes DST with the current git commit of SRC (and whether the tree was dirty), and gemmlab's
# VERSION (cmake/GemmlabVersion.cmake: pyproject.toml's).
execute_process(COMMAND git -C "${SRC}" rev-parse HEAD OUTPUT_VARIABLE c OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0)
  set(c "unknown")
endif()
execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no OUTPUT_VARIABLE d
                RESULT_VARIABLE rc2 ERROR_QUIET)
if(rc2 EQUAL 0 AND NOT d STREQUAL "")
  set(c "${c}-dirty")
endif()
if(NOT VERSION)
  message(FATAL_ERROR "GitVersion.cmake: pass -DVERSION=X.Y.Z (cmake/GemmlabVersion.cmake)")
endif()
set(content "namespace gemmlab {\nconst char* git_commit() { return \"${c}\"; }\nconst char* gemmlab_version() { return \"${VERSION}\"; }\n}\n")
if(EXISTS "${DST}")
  file(READ "${DST}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL content)
  file(WRITE "${DST}" "${content}")
endif()
