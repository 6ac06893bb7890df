"""lit set-up for a pass plugin's golden tests, installed with qopt's SDK (share/qopt/lit).

A plugin's test/lit.cfg.py puts this folder on sys.path and calls configure_plugin_tests; lit is
then run with the parameters it reads:
  qopt=<prefix>/bin/qopt  plugin=<build>/<name>.so  build_dir=<build>
  [filecheck_dir=<folder with FileCheck and split-file>, default /usr/lib/llvm-14/bin]
Tests use %qopt: qopt with the plugin loaded, and no other plugin from QOPT_PLUGIN_PATH.
"""
import os

import lit.formats


def configure_plugin_tests(config, lit_config, name, test_dir):
    params = lit_config.params
    for required in ("qopt", "plugin", "build_dir"):
        if required not in params:
            lit_config.fatal(f"{name}: run lit with --param {required}=... (see {__file__})")
    config.name = name
    config.test_format = lit.formats.ShTest(execute_external=True)
    config.suffixes = [".onnxtxt"]
    config.test_source_root = test_dir
    config.test_exec_root = os.path.join(params["build_dir"], "test")
    tools = params.get("filecheck_dir", "/usr/lib/llvm-14/bin")
    config.environment["PATH"] = os.pathsep.join([tools, os.environ["PATH"]])
    config.environment.pop("QOPT_PLUGIN_PATH", None)
    config.substitutions.append(("%qopt", f"{params['qopt']} --load-pass-plugin={params['plugin']}"))
