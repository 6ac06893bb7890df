// PluginLoader: the built-in modules, a well-behaved test module, and every way a module can be
// broken (each an error naming the file, none a crash).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "ErrorTestUtil.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/PassPlugin.h"
#include "qopt/pass/PluginLoader.h"

namespace qopt {
namespace {

namespace fs = std::filesystem;

const fs::path kPlugins = QOPT_TEST_PLUGIN_DIR;

// The input error loading `file` gives ("" when it loads).
std::string loadError(const fs::path& file, PassRegistry& registry) {
  PluginLoader loader;
  return testing::errorOf([&] { loader.loadFile(file, registry); }, ErrorKind::Input);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PluginLoader, BuiltinFolderIsNextToTheExecutable) {
  fs::path dir = builtinPassDirectory();
  EXPECT_EQ(dir.filename(), "passes");
  EXPECT_EQ(dir.parent_path().filename(), "qopt");
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  PassRegistry registry;
  PluginLoader loader;
  loader.loadDirectory(dir, registry);
  for (const char* name :
       {"dce", "eliminate-identity", "canonicalize", "topo-sort", "dedupe-initializers"}) {
    const PassInfo* info = registry.find(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(fs::path(info->origin).parent_path(), fs::canonical(dir)) << name;
  }
}

TEST(PluginLoader, LoadsAModuleOnceAndRecordsItsPasses) {
  PassRegistry registry;
  PluginLoader loader;
  LoadedPlugin plugin = loader.loadFile(kPlugins / "test-passes.so", registry);
  EXPECT_EQ(plugin.name, "test-passes");
  EXPECT_EQ(plugin.version, "1.0");
  EXPECT_EQ(plugin.passes, (std::vector<std::string>{"test-countdown", "test-fail", "test-misorder",
                                                     "test-options", "test-rename"}));
  // The same file again (even through another spelling of its path) is not loaded twice.
  loader.loadFile(kPlugins / "." / "test-passes.so", registry);
  EXPECT_EQ(loader.loaded().size(), 1u);
  EXPECT_EQ(registry.names().size(), 5u);
}

TEST(PluginLoader, WrongApiVersionNamesBothVersions) {
  PassRegistry registry;
  std::string message = loadError(kPlugins / "wrong-api-version.so", registry);
  EXPECT_TRUE(contains(message, (kPlugins / "wrong-api-version.so").string())) << message;
  EXPECT_TRUE(
      contains(message, "plugin API version " + std::to_string(QOPT_PLUGIN_API_VERSION + 41)))
      << message;
  EXPECT_TRUE(
      contains(message, "uses plugin API version " + std::to_string(QOPT_PLUGIN_API_VERSION)))
      << message;
}

TEST(PluginLoader, MissingEntryPoint) {
  PassRegistry registry;
  std::string message = loadError(kPlugins / "no-entry-point.so", registry);
  EXPECT_TRUE(contains(message,
                       "no-entry-point.so: not a qopt pass plugin: it exports no "
                       "qoptGetPassPluginInfo function"))
      << message;
}

TEST(PluginLoader, ThrowingRegistrationRegistersNothing) {
  PassRegistry registry;
  std::string message = loadError(kPlugins / "throwing-registration.so", registry);
  EXPECT_TRUE(contains(message,
                       "throwing-registration.so: pass registration threw an exception: "
                       "registration exploded on purpose"))
      << message;
  EXPECT_TRUE(registry.empty());
}

TEST(PluginLoader, DuplicatePassNamesBothModules) {
  PassRegistry registry;
  PluginLoader loader;
  loader.loadDirectory(builtinPassDirectory(), registry);
  try {
    loader.loadFile(kPlugins / "duplicate-pass.so", registry);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_TRUE(contains(message, "pass 'dce': registered twice: by ")) << message;
    EXPECT_TRUE(contains(message, "passes/dce.so and by ")) << message;
    EXPECT_TRUE(contains(message, "duplicate-pass.so")) << message;
  }
  EXPECT_EQ(registry.find("dce")->summary.find("Claims"), std::string::npos);
}

TEST(PluginLoader, DlopenFailuresCarryDlerrorText) {
  PassRegistry registry;
  std::string unresolved = loadError(kPlugins / "unresolved-symbol.so", registry);
  EXPECT_TRUE(contains(unresolved, "cannot load pass plugin: ")) << unresolved;
  EXPECT_TRUE(contains(unresolved, "qoptTestSymbolThatDoesNotExist")) << unresolved;

  fs::path garbage = fs::temp_directory_path() / "qopt_loader_test_garbage.so";
  {
    std::ofstream out(garbage);
    out << "this is not an ELF file\n";
  }
  std::string message = loadError(garbage, registry);
  EXPECT_TRUE(contains(message, "cannot load pass plugin: ")) << message;
  fs::remove(garbage);

  std::string missing = loadError(kPlugins / "does-not-exist.so", registry);
  EXPECT_TRUE(contains(missing, "does-not-exist.so: pass plugin file not found")) << missing;
}

TEST(PluginLoader, SearchPathIgnoresEmptyEntriesAndTakesFilesAndFolders) {
  PassRegistry registry;
  PluginLoader loader;
  std::string list =
      "::" + (kPlugins / "test-passes.so").string() + ":" + builtinPassDirectory().string() + ":";
  loader.loadSearchPath(list, registry);
  EXPECT_NE(registry.find("test-options"), nullptr);
  EXPECT_NE(registry.find("dce"), nullptr);
  EXPECT_GE(loader.loaded().size(), 6u);  // the built-in modules and the test module
  EXPECT_THROW(loader.loadDirectory(kPlugins / "no-such-folder", registry), Error);
}

}  // namespace
}  // namespace qopt
