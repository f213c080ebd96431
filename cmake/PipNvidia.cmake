# NVIDIA's PyPI wheels (nvidia-nvml-dev, nvidia-cuda-cuobjdump) install under
# site-packages/nvidia/<cuda>/; install-deps.sh uses them where the toolkit lacks a piece.
find_package(Python3 COMPONENTS Interpreter QUIET)

# hpcml_pip_nvidia_dirs(<var> <path>): the folders holding site-packages/nvidia/*/<path>, for
# find_path / find_program HINTS.
function(hpcml_pip_nvidia_dirs var path)
  set(dirs)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import glob, importlib.util, os, sys; s = importlib.util.find_spec('nvidia'); print(';'.join(sorted({os.path.dirname(p) for l in (s.submodule_search_locations if s else []) for p in glob.glob(os.path.join(l, '*', sys.argv[1]))})))" "${path}"
      OUTPUT_VARIABLE dirs OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  set(${var} "${dirs}" PARENT_SCOPE)
endfunction()
