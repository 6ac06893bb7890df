# lit configuration for qopt's golden tests (ONNX text in, FileCheck on the printed IR).
import os
import lit.formats

config.name = "qopt"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test", ".onnxtxt"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.qopt_build_dir, "tests", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.qopt_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])]
)
# Plugins are only found where qopt is told: keep the user's environment out of the tests.
config.environment.pop("QOPT_PLUGIN_PATH", None)
for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "HOME"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

config.substitutions.append(("%qopt-run", os.path.join(config.qopt_bin_dir, "qopt-run")))
config.substitutions.append(("%qopt", os.path.join(config.qopt_bin_dir, "qopt")))
config.substitutions.append(("%plugins", config.qopt_test_plugin_dir))
# %same-on-ort A B...: B... compute what A computes, on ONNX Runtime (tests/ort/same_on_ort.py).
config.substitutions.append(
    ("%same-on-ort", "{} {}".format(config.python_executable,
                                     os.path.join(os.path.dirname(config.test_source_root), "ort",
                                                  "same_on_ort.py"))))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%testdata", config.onnx_testdata_dir))
