# Writes OUT (gic_commit.h) with the source tree's `git describe --always
# --dirty`, at every build, touching the file only when the text changes:
# the commit in every result is the build's, not the configure's.
execute_process(COMMAND git describe --always --dirty
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit "unknown")
endif()
set(text "#define GIC_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
