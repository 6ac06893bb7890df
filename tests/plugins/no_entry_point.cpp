// A shared library that is not a qopt pass module: it exports no qoptGetPassPluginInfo.
extern "C" __attribute__((visibility("default"))) int qoptSomethingElse() {
  return 42;
}
