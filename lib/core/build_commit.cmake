# cmake -DSOURCE=DIR -DOUT=FILE -P build_commit.cmake: writes FILE, a header defining KVF_GIT_COMMIT as DIR's
# short commit ("-dirty" when tracked files have uncommitted changes; "unknown" outside a git checkout). FILE is
# replaced only when the text changes, so an unchanged commit recompiles nothing.
execute_process(COMMAND git -C "${SOURCE}" rev-parse --short=7 HEAD OUTPUT_VARIABLE commit
                RESULT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT status EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SOURCE}" status --porcelain --untracked-files=no OUTPUT_VARIABLE changes
                  RESULT_VARIABLE status ERROR_QUIET)
  if(status EQUAL 0 AND NOT changes STREQUAL "")
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "#define KVF_GIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
