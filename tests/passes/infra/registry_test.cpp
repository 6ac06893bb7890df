// PassRegistry: explicit registration, duplicates naming both origins, unknown names.
#include <gtest/gtest.h>

#include "ErrorTestUtil.h"
#include "TestPasses.h"
#include "qopt/ir/Error.h"

namespace qopt {
namespace {

class NamedPass : public Pass {
 public:
  explicit NamedPass(std::string name) : Pass(std::move(name), "A pass") {}
  PassResult run(Model&, PassContext&) override { return {}; }
};

PassFactory named(std::string name) {
  return [name] { return std::make_unique<NamedPass>(name); };
}

TEST(PassRegistry, ListsPassesSortedWithSummaryAndOrigin) {
  PassRegistry registry("/lib/a.so");
  registry.add(named("zeta"));
  registry.add<testing::NoopPass>();
  ASSERT_EQ(registry.names(), (std::vector<std::string>{"noop", "zeta"}));
  const PassInfo* noop = registry.find("noop");
  ASSERT_NE(noop, nullptr);
  EXPECT_EQ(noop->summary, "Does nothing");
  EXPECT_EQ(noop->origin, "/lib/a.so");
  EXPECT_EQ(registry.create("noop")->name(), "noop");
}

TEST(PassRegistry, DuplicateNameNamesBothOrigins) {
  PassRegistry registry("/lib/first.so");
  registry.add<testing::NoopPass>();
  registry.setOrigin("/lib/second.so");
  EXPECT_EQ(testing::errorOf([&] { registry.add<testing::NoopPass>(); }),
            "pass 'noop': registered twice: by /lib/first.so and by /lib/second.so");
}

TEST(PassRegistry, MergeIsAllOrNothing) {
  PassRegistry main("/lib/builtin.so");
  main.add<testing::NoopPass>();
  PassRegistry module("/lib/plugin.so");
  module.add(named("fresh"));
  module.add<testing::NoopPass>();
  EXPECT_THROW(main.merge(std::move(module)), Error);
  EXPECT_EQ(main.names(), std::vector<std::string>{"noop"});

  PassRegistry good("/lib/good.so");
  good.add(named("fresh"));
  main.merge(std::move(good));
  EXPECT_EQ(main.names(), (std::vector<std::string>{"fresh", "noop"}));
  EXPECT_EQ(main.find("fresh")->origin, "/lib/good.so");
}

TEST(PassRegistry, RejectsNamesThePipelineGrammarCannotSpell) {
  PassRegistry registry("/lib/x.so");
  EXPECT_THROW(registry.add(named("fixpoint")), Error);
  EXPECT_THROW(registry.add(named("")), Error);
  EXPECT_THROW(registry.add(named("has space")), Error);
  EXPECT_THROW(registry.add(named("a{b}")), Error);
  EXPECT_NO_THROW(registry.add(named("acme.fuse-conv_v2")));
}

TEST(PassRegistry, UnknownPassSuggestsNearMiss) {
  PassRegistry registry = testing::testRegistry();
  std::string message = testing::errorOf([&] { registry.create("nop"); }, ErrorKind::Usage);
  EXPECT_NE(message.find("unknown pass 'nop'; did you mean 'noop'?"), std::string::npos) << message;
  PassRegistry empty;
  message = testing::errorOf([&] { empty.create("dce"); });
  EXPECT_NE(message.find("no passes are registered"), std::string::npos) << message;
}

}  // namespace
}  // namespace qopt
