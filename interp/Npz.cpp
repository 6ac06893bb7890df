#include "qopt/interp/Npz.h"

#include <zip.h>

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "qopt/interp/Npy.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {

namespace {

constexpr std::string_view kSuffix = ".npy";

}  // namespace

struct NpzArchive::State {
  struct Member {
    zip_uint64_t index = 0;
    uint64_t size = 0;
    bool stored = false;
  };
  zip_t* archive = nullptr;
  std::vector<Member> members;  // parallel to names_
  std::mutex mutex;
  // The member read last, left open where the read stopped: the next rows of a compressed
  // member follow on without inflating it again from its start.
  zip_file_t* open = nullptr;
  size_t openMember = 0;
  uint64_t position = 0;

  ~State() {
    if (open != nullptr) zip_fclose(open);
    if (archive != nullptr) zip_discard(archive);
  }
};

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& subject,
                       const std::string& cause) {
  throw Error(ErrorKind::Input, path.string(), subject,
              fmt::format("not a valid .npz file: {}", cause));
}

}  // namespace

NpzArchive::NpzArchive(const std::filesystem::path& path)
    : path_(path), state_(std::make_unique<State>()) {
  int code = 0;
  state_->archive = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (state_->archive == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string cause = zip_error_strerror(&error);
    zip_error_fini(&error);
    if (code == ZIP_ER_NOENT) throw Error(ErrorKind::Input, path.string(), {}, "no such file");
    fail(path, {}, cause);
  }
  const zip_int64_t count = zip_get_num_entries(state_->archive, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(state_->archive, static_cast<zip_uint64_t>(i), 0, &st) != 0 ||
        (st.valid & ZIP_STAT_NAME) == 0 || (st.valid & ZIP_STAT_SIZE) == 0) {
      fail(path, {}, fmt::format("member {} cannot be read: {}", i, zip_strerror(state_->archive)));
    }
    std::string name = st.name;
    if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) {
      if (name.ends_with("/")) continue;  // a folder entry holds nothing
      fail(path, fmt::format("member '{}'", name), "it is not a .npy array");
    }
    if ((st.valid & ZIP_STAT_COMP_METHOD) != 0 && st.comp_method != ZIP_CM_STORE &&
        st.comp_method != ZIP_CM_DEFLATE) {
      fail(path, fmt::format("member '{}'", name),
           fmt::format("compression method {} (numpy writes stored or deflated members)",
                       st.comp_method));
    }
    names_.push_back(name.substr(0, name.size() - kSuffix.size()));
    state_->members.push_back(
        {static_cast<zip_uint64_t>(i), st.size,
         (st.valid & ZIP_STAT_COMP_METHOD) != 0 && st.comp_method == ZIP_CM_STORE});
  }
  if (names_.empty()) fail(path, {}, "it holds no arrays");
}

NpzArchive::~NpzArchive() = default;
NpzArchive::NpzArchive(NpzArchive&&) noexcept = default;
NpzArchive& NpzArchive::operator=(NpzArchive&&) noexcept = default;

bool NpzArchive::contains(const std::string& name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

namespace {

// The member's index among names, or an error naming what the archive holds.
size_t memberOf(const std::vector<std::string>& names, const std::string& name,
                const std::filesystem::path& path) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    throw Error(ErrorKind::Input, path.string(), fmt::format("array '{}'", name),
                fmt::format("the archive has no such array (it holds {})", fmt::join(names, ", ")));
  }
  return static_cast<size_t>(it - names.begin());
}

// Reads `count` bytes at `offset` of member `m` through the state's open member (the caller
// holds the state's mutex).
template <class State>
void readMember(State& s, size_t m, uint64_t offset, char* out, size_t count,
                const std::filesystem::path& path, const std::string& name) {
  auto error = [&](const std::string& cause) {
    fail(path, fmt::format("array '{}'", name), cause);
  };
  const auto& member = s.members[m];
  if (offset > member.size || count > member.size - offset) error("the member is truncated");
  if (s.open != nullptr && (s.openMember != m || s.position > offset)) {
    zip_fclose(s.open);
    s.open = nullptr;
  }
  if (s.open == nullptr) {
    s.open = zip_fopen_index(s.archive, member.index, 0);
    if (s.open == nullptr) error(zip_strerror(s.archive));
    s.openMember = m;
    s.position = 0;
  }
  if (s.position < offset && member.stored &&
      zip_fseek(s.open, static_cast<zip_int64_t>(offset), SEEK_SET) == 0) {
    s.position = offset;
  }
  std::vector<char> skip;
  while (s.position < offset) {  // inflate forward to the rows asked for
    skip.resize(static_cast<size_t>(std::min<uint64_t>(offset - s.position, 1 << 20)));
    const zip_int64_t got = zip_fread(s.open, skip.data(), skip.size());
    if (got <= 0) error(got < 0 ? zip_file_strerror(s.open) : "the member is truncated");
    s.position += static_cast<uint64_t>(got);
  }
  size_t done = 0;
  while (done < count) {
    const zip_int64_t got = zip_fread(s.open, out + done, count - done);
    if (got <= 0) error(got < 0 ? zip_file_strerror(s.open) : "the member is truncated");
    done += static_cast<size_t>(got);
  }
  s.position += count;
}

}  // namespace

Shape NpzArchive::shape(const std::string& name) const {
  const size_t m = memberOf(names_, name, path_);
  std::lock_guard lock(state_->mutex);
  const std::string display = fmt::format("{}:{}.npy", path_.string(), name);
  return readNpyShape(
      [&](uint64_t offset, char* out, size_t count) {
        readMember(*state_, m, offset, out, count, path_, name);
      },
      state_->members[m].size, display);
}

Array NpzArchive::readRows(const std::string& name, int64_t first, int64_t count) const {
  const size_t m = memberOf(names_, name, path_);
  std::lock_guard lock(state_->mutex);
  const std::string display = fmt::format("{}:{}.npy", path_.string(), name);
  return readNpyRows([&](uint64_t offset, char* out,
                         size_t bytes) { readMember(*state_, m, offset, out, bytes, path_, name); },
                     state_->members[m].size, display, first, count);
}

Array NpzArchive::read(const std::string& name) const {
  const Shape declared = shape(name);
  if (declared.empty()) {  // a scalar has no rows: read the member whole
    const size_t m = memberOf(names_, name, path_);
    std::lock_guard lock(state_->mutex);
    std::string bytes(static_cast<size_t>(state_->members[m].size), '\0');
    readMember(*state_, m, 0, bytes.data(), bytes.size(), path_, name);
    return parseNpy(bytes, fmt::format("{}:{}.npy", path_.string(), name));
  }
  return readRows(name, 0, declared[0]);
}

}  // namespace qopt::interp
