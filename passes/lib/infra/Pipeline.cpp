#include "qopt/pass/Pipeline.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "qopt/ir/Error.h"

namespace qopt {

void Pipeline::addPass(std::unique_ptr<Pass> pass) {
  PipelineItem item;
  item.pass = std::move(pass);
  items_.push_back(std::move(item));
}

void Pipeline::addFixpoint(std::unique_ptr<FixpointGroup> group) {
  PipelineItem item;
  item.fixpoint = std::move(group);
  items_.push_back(std::move(item));
}

void Pipeline::forEachPass(const std::function<void(const Pass&)>& fn) const {
  for (const PipelineItem& item : items_) {
    if (item.pass) fn(*item.pass);
    if (item.fixpoint) item.fixpoint->body.forEachPass(fn);
  }
}

bool Pipeline::needsOriginalModel() const {
  bool needed = false;
  forEachPass([&](const Pass& pass) { needed = needed || pass.needsOriginalModel(); });
  return needed;
}

std::string Pipeline::str() const {
  std::string out;
  for (const PipelineItem& item : items_) {
    if (!out.empty()) out += ',';
    out += item.pass ? item.pass->printPipelineItem() : item.fixpoint->str();
  }
  return out;
}

void FixpointGroup::validateOptions() const {
  if (*maxIterations < 1) failOption("max-iterations", "must be at least 1");
}

std::string FixpointGroup::str() const {
  return "fixpoint(" + body.str() + "){" + printOptions() + "}";
}

namespace {

bool isWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == ':';
}

bool isValueChar(char c) {
  switch (c) {
    case ' ':
    case '\t':
    case '\r':
    case '\n':
    case ',':
    case '=':
    case '{':
    case '}':
    case '[':
    case ']':
    case '(':
    case ')':
    case '"':
    case '#':
      return false;
    default:
      return true;
  }
}

// Deepest fixpoint(...) nesting: parsing, running and printing recurse once per level, so a
// hostile pipeline file must not choose the depth.
constexpr int kMaxFixpointNesting = 32;

class PipelineParser {
 public:
  PipelineParser(std::string_view text, const PassRegistry& registry, std::string_view source)
      : text_(text), registry_(registry), source_(source) {}

  Pipeline parse() {
    Pipeline pipeline;
    parseSequence(pipeline, /*nested=*/false);
    skipBlanks(true);
    if (!atEnd()) {
      fail(here(), peek() == ')' ? "unbalanced ')'"
                                 : fmt::format("expected ',' or a new line before '{}'", peek()));
    }
    return pipeline;
  }

 private:
  struct Location {
    size_t line;
    size_t col;
  };

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  Location here() const { return {line_, col_}; }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  std::string where(Location at) const { return fmt::format("{}:{}:{}", source_, at.line, at.col); }
  [[noreturn]] void fail(Location at, const std::string& cause) const {
    throw Error(ErrorKind::Usage, where(at), "", cause);
  }
  // Adds the location to an error raised by the registry or an option set.
  [[noreturn]] void relocate(Location at, const Error& e) const {
    throw Error(ErrorKind::Usage, where(at), e.subject(), e.cause());
  }

  // Skips blanks and comments; newlines too when `newlines`.
  void skipBlanks(bool newlines) {
    while (!atEnd()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        advance();
      } else if (c == '#') {
        while (!atEnd() && peek() != '\n') advance();
      } else {
        break;
      }
    }
  }

  std::string readWord() {
    size_t start = pos_;
    while (!atEnd() && isWordChar(peek())) advance();
    return std::string(text_.substr(start, pos_ - start));
  }

  void expect(char c, const char* what) {
    if (peek() != c) {
      fail(here(), atEnd() ? fmt::format("expected {} at the end", what)
                           : fmt::format("expected {} before '{}'", what, peek()));
    }
    advance();
  }

  void parseSequence(Pipeline& out, bool nested) {
    skipBlanks(true);
    if (atEnd() || (nested && peek() == ')')) return;
    while (true) {
      parseItem(out);
      skipBlanks(false);
      if (peek() == ',') {
        advance();
        skipBlanks(true);
        if (atEnd() || peek() == ')') fail(here(), "expected a pass after ','");
        continue;
      }
      if (peek() == '\n') {
        skipBlanks(true);
        if (atEnd() || (nested && peek() == ')')) return;
        continue;
      }
      return;
    }
  }

  void parseItem(Pipeline& out) {
    Location at = here();
    std::string name = readWord();
    if (name.empty()) {
      fail(at, atEnd() ? "expected a pass name"
                       : fmt::format("expected a pass name before '{}'", peek()));
    }
    if (name == "fixpoint") {
      if (fixpointDepth_ == kMaxFixpointNesting) {
        fail(at, fmt::format("fixpoint groups nest deeper than {} levels", kMaxFixpointNesting));
      }
      auto group = std::make_unique<FixpointGroup>();
      skipBlanks(true);
      expect('(', "'(' after fixpoint");
      ++fixpointDepth_;
      parseSequence(group->body, /*nested=*/true);
      --fixpointDepth_;
      skipBlanks(true);
      if (group->body.empty()) fail(at, "fixpoint needs at least one pass inside its parentheses");
      expect(')', "')' closing fixpoint(");
      parseOptions(*group, at);
      out.addFixpoint(std::move(group));
      return;
    }
    std::unique_ptr<Pass> pass;
    try {
      pass = registry_.create(name);
    } catch (const Error& e) {
      relocate(at, e);
    }
    parseOptions(*pass, at);
    out.addPass(std::move(pass));
  }

  void parseOptions(OptionSet& options, Location itemAt) {
    skipBlanks(false);
    if (peek() == '{') {
      advance();
      std::vector<std::string> seen;
      while (true) {
        skipBlanks(true);
        if (peek() == '}') {
          advance();
          break;
        }
        Location keyAt = here();
        std::string key = readWord();
        if (key.empty()) {
          fail(keyAt, atEnd() ? "expected an option name or '}'"
                              : fmt::format("expected an option name or '}}' before '{}'", peek()));
        }
        for (const std::string& s : seen) {
          if (s == key)
            fail(keyAt, fmt::format("{}: option '{}' given twice", options.ownerName(), key));
        }
        seen.push_back(key);
        skipBlanks(true);
        expect('=', fmt::format("'=' after option '{}'", key).c_str());
        skipBlanks(true);
        OptionValue value = parseValue();
        try {
          options.setOption(key, value);
        } catch (const Error& e) {
          relocate(keyAt, e);
        }
      }
    }
    try {
      options.validateOptions();
    } catch (const Error& e) {
      relocate(itemAt, e);
    }
  }

  OptionValue parseValue() {
    if (peek() != '[') return OptionValue::scalar(parseScalar());
    advance();
    std::vector<std::string> items;
    skipBlanks(true);
    if (peek() == ']') {
      advance();
      return OptionValue::list(std::move(items));
    }
    while (true) {
      skipBlanks(true);
      items.push_back(parseScalar());
      skipBlanks(true);
      if (peek() == ',') {
        advance();
        continue;
      }
      expect(']', "',' or ']' in a list");
      return OptionValue::list(std::move(items));
    }
  }

  std::string parseScalar() {
    Location at = here();
    if (peek() == '"') {
      advance();
      std::string out;
      while (true) {
        if (atEnd()) fail(at, "unterminated quoted value");
        char c = peek();
        advance();
        if (c == '"') return out;
        if (c == '\\') {
          if (atEnd()) fail(at, "unterminated quoted value");
          char e = peek();
          advance();
          out += e == 'n' ? '\n' : e;
        } else {
          out += c;
        }
      }
    }
    size_t start = pos_;
    while (!atEnd() && isValueChar(peek())) advance();
    if (pos_ == start) {
      fail(at, atEnd() ? "expected a value" : fmt::format("expected a value before '{}'", peek()));
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  std::string_view text_;
  const PassRegistry& registry_;
  std::string source_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t col_ = 1;
  int fixpointDepth_ = 0;
};

}  // namespace

Pipeline parsePipeline(std::string_view text, const PassRegistry& registry,
                       std::string_view sourceName) {
  return PipelineParser(text, registry, sourceName).parse();
}

Pipeline parsePipelineFile(const std::filesystem::path& file, const PassRegistry& registry) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::Usage, file.string(), "", "cannot read pipeline file");
  std::ostringstream text;
  text << in.rdbuf();
  return parsePipeline(text.str(), registry, file.string());
}

}  // namespace qopt
