// Loads pass modules (see PassPlugin.h) into a PassRegistry. Every failure is a qopt::Error
// (Input) naming the file: dlopen's own message, a missing entry point, another plugin API
// version (both versions named), an exception thrown while registering, a duplicate pass name.
// Nothing is loaded from the current directory unless a path says so explicitly.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/pass/PassRegistry.h"

namespace qopt {

struct LoadedPlugin {
  std::string path;  // absolute, canonical
  std::string name;
  std::string version;
  std::vector<std::string> passes;
};

class PluginLoader {
 public:
  /// Loads one module file into `registry`. A file already loaded by this loader is skipped
  /// (returns its earlier record). `file` must contain a '/': a bare name is refused rather
  /// than looked up in the current folder.
  LoadedPlugin loadFile(const std::filesystem::path& file, PassRegistry& registry);
  /// Loads every "*.so" file of `dir` in name order. A missing folder is an error.
  void loadDirectory(const std::filesystem::path& dir, PassRegistry& registry);
  /// Loads a colon-separated list of folders and files (QOPT_PLUGIN_PATH). Empty entries are
  /// ignored (they do not mean the current directory); an entry without '/' is refused.
  void loadSearchPath(std::string_view list, PassRegistry& registry);

  const std::vector<LoadedPlugin>& loaded() const { return loaded_; }

 private:
  std::vector<LoadedPlugin> loaded_;
};

/// <folder of the loaded libqopt>/qopt/passes, where the build tree and an install put the
/// built-in pass modules: the same for the qopt command, the Python module and any program that
/// links libqopt (one that links it statically: <folder of the executable>/../lib/qopt/passes).
std::filesystem::path builtinPassDirectory();

}  // namespace qopt
