// Unit tests of NameTable against std::map: inserts, erases (backward shift, wrap-around at the
// end of the slot array), growth, and the long probe runs of a nearly full small table.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "qopt/ir/NameTable.h"

namespace qopt {
namespace {

// Compares every key ever used (present or erased) between the table and the reference.
void expectSameContents(const NameTable<uint32_t>& table,
                        const std::map<std::string, uint32_t>& ref,
                        const std::vector<std::string>& keys) {
  EXPECT_EQ(table.size(), ref.size());
  for (const std::string& key : keys) {
    auto it = ref.find(key);
    const uint32_t* found = table.find(key);
    if (it == ref.end()) {
      EXPECT_EQ(found, nullptr) << key;
    } else {
      ASSERT_NE(found, nullptr) << key;
      EXPECT_EQ(*found, it->second) << key;
    }
  }
}

TEST(NameTable, InsertFindEraseLikeAMap) {
  NameTable<uint32_t> table;
  std::map<std::string, uint32_t> ref;
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    // Short names stay inline in std::string, long ones do not: both kinds must work.
    keys.push_back(i % 3 == 0 ? "a_rather_long_value_name_beyond_sso_" + std::to_string(i)
                              : "v" + std::to_string(i));
  }
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const std::string& key = keys[rng() % keys.size()];
    if (rng() % 3 == 0) {
      EXPECT_EQ(table.erase(key), ref.erase(key) == 1) << key;
    } else {
      uint32_t value = static_cast<uint32_t>(rng());
      table[key] = value;
      ref[key] = value;
    }
  }
  expectSameContents(table, ref, keys);
}

TEST(NameTable, EraseKeepsEntriesThatProbedPastTheHole) {
  // A small table with many entries makes long probe runs that wrap around the slot array; the
  // erase of any entry in a run must leave every other one findable.
  std::vector<std::string> keys;
  for (int i = 0; i < 11; ++i) keys.push_back("n" + std::to_string(i));
  for (size_t victim = 0; victim < keys.size(); ++victim) {
    NameTable<uint32_t> table;
    std::map<std::string, uint32_t> ref;
    for (size_t i = 0; i < keys.size(); ++i) {
      table[keys[i]] = static_cast<uint32_t>(i + 1);
      ref[keys[i]] = static_cast<uint32_t>(i + 1);
    }
    EXPECT_TRUE(table.erase(keys[victim]));
    ref.erase(keys[victim]);
    EXPECT_FALSE(table.erase(keys[victim]));
    expectSameContents(table, ref, keys);
  }
}

TEST(NameTable, ReserveAndGrowthKeepEntries) {
  NameTable<uint32_t> table;
  table.reserve(100);
  std::map<std::string, uint32_t> ref;
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < 5000; ++i) {
    keys.push_back("Conv_" + std::to_string(i));
    table[keys.back()] = i;
    ref[keys.back()] = i;
  }
  expectSameContents(table, ref, keys);
  table.clear();
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.find("Conv_1"), nullptr);
  table["Conv_1"] = 3;
  EXPECT_EQ(*table.find("Conv_1"), 3u);
}

TEST(NameTable, TheEmptyNameIsAKeyLikeAnyOther) {
  NameTable<uint32_t> table;
  EXPECT_FALSE(table.contains(""));
  table[""] = 5;
  EXPECT_TRUE(table.contains(""));
  EXPECT_EQ(*table.find(""), 5u);
  EXPECT_TRUE(table.erase(""));
  EXPECT_FALSE(table.contains(""));
}

}  // namespace
}  // namespace qopt
