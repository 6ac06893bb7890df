#include "qopt/pass/PluginLoader.h"

#include <dlfcn.h>

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {

namespace fs = std::filesystem;

namespace {

Error pluginError(const std::string& file, const std::string& cause) {
  return Error(ErrorKind::Input, file, "", cause);
}

// Calls the module's registration callback into a registry of its own, so that a module that
// fails half-way registers nothing.
PassRegistry registerModule(const std::string& file, const QoptPassPluginInfo& info) {
  PassRegistry staging(file);
  try {
    info.registerPasses(staging);
  } catch (const Error& e) {
    throw pluginError(file, fmt::format("pass registration failed: {}", e.what()));
  } catch (const std::exception& e) {
    throw pluginError(file, fmt::format("pass registration threw an exception: {}", e.what()));
  } catch (...) {
    throw pluginError(file, "pass registration threw an exception of unknown type");
  }
  return staging;
}

}  // namespace

LoadedPlugin PluginLoader::loadFile(const fs::path& file, PassRegistry& registry) {
  // A bare name would be looked up in the current folder: a plugin runs with the user's rights,
  // so loading one from wherever qopt happens to run must be asked for with a path.
  if (file.string().find('/') == std::string::npos) {
    throw pluginError(file.string(),
                      fmt::format("a pass plugin is named by its path; write './{}' to load it "
                                  "from the current folder",
                                  file.string()));
  }
  std::error_code ec;
  fs::path canonical = fs::canonical(fs::absolute(file, ec), ec);
  if (ec || !fs::is_regular_file(canonical)) {
    throw pluginError(file.string(), "pass plugin file not found");
  }
  std::string path = canonical.string();
  for (const LoadedPlugin& plugin : loaded_) {
    if (plugin.path == path) return plugin;
  }

  // RTLD_LOCAL: modules do not see each other's symbols. Never unloaded: passes, their factories
  // and their vtables live in the module for the rest of the process.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw pluginError(path,
                      fmt::format("cannot load pass plugin: {}", why ? why : "dlopen failed"));
  }
  dlerror();
  void* symbol = dlsym(handle, QOPT_PLUGIN_ENTRY_POINT_NAME);
  if (!symbol) {
    throw pluginError(path, fmt::format("not a qopt pass plugin: it exports no {} function",
                                        QOPT_PLUGIN_ENTRY_POINT_NAME));
  }
  auto entry = reinterpret_cast<QoptGetPassPluginInfoFn>(symbol);
  QoptPassPluginInfo info{};
  try {
    info = entry();
  } catch (...) {
    throw pluginError(path, fmt::format("{} threw an exception", QOPT_PLUGIN_ENTRY_POINT_NAME));
  }
  if (info.apiVersion != QOPT_PLUGIN_API_VERSION) {
    throw pluginError(path,
                      fmt::format("pass plugin built for plugin API version {}, but this qopt "
                                  "uses plugin API version {}; rebuild the plugin",
                                  info.apiVersion, QOPT_PLUGIN_API_VERSION));
  }
  if (!info.registerPasses) throw pluginError(path, "pass plugin has no registration callback");

  PassRegistry staging = registerModule(path, info);
  LoadedPlugin plugin;
  plugin.path = path;
  plugin.name = info.pluginName ? info.pluginName : "";
  plugin.version = info.pluginVersion ? info.pluginVersion : "";
  plugin.passes = staging.names();
  registry.merge(std::move(staging));
  loaded_.push_back(plugin);
  return plugin;
}

void PluginLoader::loadDirectory(const fs::path& dir, PassRegistry& registry) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw pluginError(dir.string(), "pass plugin folder not found");
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".so" && entry.is_regular_file(ec))
      files.push_back(entry.path());
  }
  if (ec) throw pluginError(dir.string(), fmt::format("cannot list folder: {}", ec.message()));
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) loadFile(file, registry);
}

void PluginLoader::loadSearchPath(std::string_view list, PassRegistry& registry) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(':', pos);
    if (end == std::string_view::npos) end = list.size();
    std::string entry(list.substr(pos, end - pos));
    pos = end + 1;
    if (entry.empty()) continue;
    if (entry.find('/') == std::string::npos) {
      throw pluginError(entry, fmt::format("a plugin search path entry is a path; write './{}' "
                                           "for one in the current folder",
                                           entry));
    }
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      loadDirectory(entry, registry);
    } else {
      loadFile(entry, registry);
    }
  }
}

fs::path builtinPassDirectory() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  // The folder of the libqopt running this code: the command, the Python module and any program
  // that embeds qopt find the passes beside it, in the build tree as in an install.
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&builtinPassDirectory), &info) != 0 &&
      info.dli_fname != nullptr) {
    const fs::path library = fs::absolute(info.dli_fname, ec);
    std::error_code same;
    if (!ec && (exe.empty() || !fs::equivalent(library, exe, same))) {
      return (library.parent_path() / QOPT_PASS_DIR_NAME).lexically_normal();
    }
  }
  // Linked into the executable itself: the install layout relative to its folder.
  if (exe.empty()) return {};
  return (exe.parent_path() / QOPT_PASS_DIR_FROM_BINDIR).lexically_normal();
}

}  // namespace qopt
