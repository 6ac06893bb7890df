# Golden tests for the fuse-hardswish plugin, run against an installed qopt:
#   lit.py -sv test --param qopt=<prefix>/bin/qopt --param plugin=<build>/fuse-hardswish.so \
#          --param build_dir=<build> [--param filecheck_dir=/usr/lib/llvm-14/bin]
import os
import lit.formats

config.name = "fuse-hardswish"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".onnxtxt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(lit_config.params["build_dir"], "test")

tools = lit_config.params.get("filecheck_dir", "/usr/lib/llvm-14/bin")
config.environment["PATH"] = os.pathsep.join([tools, os.environ["PATH"]])
config.environment.pop("QOPT_PLUGIN_PATH", None)
qopt = lit_config.params["qopt"]
plugin = lit_config.params["plugin"]
config.substitutions.append(("%qopt", f"{qopt} --load-pass-plugin={plugin}"))
