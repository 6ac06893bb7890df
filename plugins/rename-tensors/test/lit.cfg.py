# Golden tests for the rename-tensors plugin, run against an installed qopt:
#   lit.py -sv test --param qopt=<prefix>/bin/qopt --param plugin=<build>/rename-tensors.so \
#          --param build_dir=<build> [--param filecheck_dir=/usr/lib/llvm-14/bin]
# The set-up is qopt's own (share/qopt/lit/qopt_lit.py in its prefix).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(lit_config.params["qopt"]), "../share/qopt/lit"))
import qopt_lit  # noqa: E402

qopt_lit.configure_plugin_tests(config, lit_config, "rename-tensors", os.path.dirname(__file__))
