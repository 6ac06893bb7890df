# Warnings for qopt's own targets (not for third-party code).
function(qopt_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()
