#include "GraphRecipe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace qopt::fuzz {
namespace {

constexpr int kMaxNodes = 12;
constexpr int64_t kMaxDim = 8;
constexpr int64_t kMaxNumel = 4096;

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  bool empty() const { return pos_ >= bytes_.size(); }
  uint8_t next() { return empty() ? 0 : static_cast<uint8_t>(bytes_[pos_++]); }
  /// A number in [0, n).
  int below(int n) { return n <= 1 ? 0 : next() % n; }
  int64_t inRange(int64_t lo, int64_t hi) { return lo + below(static_cast<int>(hi - lo + 1)); }
  float value() {
    uint8_t b = next();
    if (b == 255) return std::numeric_limits<float>::quiet_NaN();
    if (b == 254) return std::numeric_limits<float>::infinity();
    if (b == 253) return -std::numeric_limits<float>::infinity();
    if (b == 252) return 1e30f;
    return (static_cast<float>(b) - 126.0f) / 16.0f;
  }
  /// Usually a small dim; now and then a huge one, for the allocation limit.
  int64_t hostileDim() {
    uint8_t b = next();
    if (b >= 250) return int64_t{1} << (20 + (b - 250) * 4);
    return 1 + b % kMaxDim;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

struct Val {
  std::string name;
  std::string type;  // float, int8, uint8, int32
  std::vector<int64_t> shape;
};

// "[2,3]", or "" for a scalar (ONNX text spells a scalar type without brackets).
std::string dimsText(const std::vector<int64_t>& shape) {
  return shape.empty() ? "" : fmt::format("[{}]", fmt::join(shape, ","));
}

// Saturates: hostile shapes multiply past int64.
int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return std::numeric_limits<int64_t>::max();
    }
    n *= d;
  }
  return n;
}

std::string literal(float v) {
  // ONNX text has no spelling for special values: clamp them here (inputs carry NaN and inf).
  if (std::isnan(v)) v = 0;
  if (std::isinf(v)) v = v > 0 ? 1e30f : -1e30f;
  return fmt::format("{:.6e}", v);
}

class Builder {
 public:
  explicit Builder(ByteReader& in) : in_(in) {}

  RecipeModel build() {
    RecipeModel model;
    int rank = in_.inRange(1, 4);
    for (int i = 0; i < rank; ++i) model.inputShape.push_back(in_.inRange(1, 6));
    values_.push_back({"x", "float", model.inputShape});
    int nodes = in_.inRange(1, kMaxNodes);
    for (int i = 0; i < nodes && !in_.empty(); ++i) addNode();
    for (int64_t i = 0; i < numel(model.inputShape); ++i) model.inputValues.push_back(in_.value());

    const Val& out = values_.back();
    std::string inits = fmt::format("{}", fmt::join(initializers_, ", "));
    model.text = fmt::format(
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "recipe (float[{}] x) => ({}{} {})\n{}{}{}\n{{\n{}}}\n",
        fmt::join(model.inputShape, ","), out.type, dimsText(out.shape), out.name,
        inits.empty() ? "" : "<", inits, inits.empty() ? "" : ">", body_);
    return model;
  }

 private:
  const Val& pick(const std::string& type = "") {
    std::vector<const Val*> candidates;
    for (const Val& v : values_) {
      // Huge values (from hostile shapes) can only be outputs: operands stay small.
      if ((type.empty() || v.type == type) && numel(v.shape) <= kMaxNumel) candidates.push_back(&v);
    }
    if (candidates.empty()) return values_.front();
    return *candidates[static_cast<size_t>(in_.below(static_cast<int>(candidates.size())))];
  }

  std::string fresh() { return fmt::format("v{}", counter_++); }

  std::string floatInit(const std::vector<int64_t>& shape, bool positive = false) {
    std::string name = fresh();
    std::vector<std::string> items;
    for (int64_t i = 0; i < numel(shape); ++i) {
      float v = positive ? static_cast<float>(in_.inRange(1, 64)) / 32.0f : in_.value();
      items.push_back(literal(v));
    }
    initializers_.push_back(
        fmt::format("float{} {} = {{{}}}", dimsText(shape), name, fmt::join(items, ", ")));
    return name;
  }

  std::string intInit(const std::string& type, const std::vector<int64_t>& values, bool scalar) {
    std::string name = fresh();
    std::string dims = scalar ? "" : fmt::format("[{}]", values.size());
    initializers_.push_back(
        fmt::format("{}{} {} = {{{}}}", type, dims, name, fmt::join(values, ", ")));
    return name;
  }

  void emit(const std::string& out, const std::string& type, std::vector<int64_t> shape,
            const std::string& call) {
    body_ += fmt::format("  {} = {}\n", out, call);
    values_.push_back({out, type, std::move(shape)});
  }

  void addNode() {
    switch (in_.below(16)) {
      case 0:
        return unary();
      case 1:
        return binary();
      case 2:
        return matmul();
      case 3:
        return conv();
      case 4:
        return reshape();
      case 5:
        return transpose();
      case 6:
        return concat();
      case 7:
        return softmax();
      case 8:
        return quantize();
      case 9:
        return dequantize();
      case 10:
        return expand();
      case 11:
        return constantOfShape();
      case 12:
        return reduce();
      case 13:
        return pool();
      case 14:
        return cast();
      default:
        return gemm();
    }
  }

  void unary() {
    static const char* kOps[] = {"Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Sqrt", "Floor"};
    const Val& x = pick("float");
    std::string out = fresh();
    emit(out, "float", x.shape, fmt::format("{}({})", kOps[in_.below(8)], x.name));
  }

  void binary() {
    static const char* kOps[] = {"Add", "Mul", "Sub", "Div", "Max", "Min"};
    const Val x = pick("float");
    // The other operand: the same shape, or a broadcast constant (a suffix with some dims 1).
    std::vector<int64_t> shape(x.shape.begin() + in_.below(static_cast<int>(x.shape.size()) + 1),
                               x.shape.end());
    for (int64_t& d : shape) {
      if (in_.below(3) == 0) d = 1;
    }
    std::string a = x.name, b = floatInit(shape);
    if (in_.below(2) == 0) std::swap(a, b);
    emit(fresh(), "float", x.shape, fmt::format("{}({}, {})", kOps[in_.below(6)], a, b));
  }

  void matmul() {
    const Val x = pick("float");
    int64_t k = x.shape.back();
    int64_t n = in_.inRange(1, 6);
    std::string w = floatInit({k, n});
    std::vector<int64_t> shape = x.shape;
    shape.back() = n;
    if (x.shape.size() == 1) shape = {n};
    emit(fresh(), "float", shape, fmt::format("MatMul({}, {})", x.name, w));
  }

  void gemm() {
    const Val x = pick("float");
    if (x.shape.size() != 2) return unary();
    int64_t n = in_.inRange(1, 6);
    bool transB = in_.below(2) == 1;
    std::string w = floatInit(transB ? std::vector<int64_t>{n, x.shape[1]}
                                     : std::vector<int64_t>{x.shape[1], n});
    std::string bias = floatInit({n});
    emit(fresh(), "float", {x.shape[0], n},
         fmt::format("Gemm <transB = {}, alpha = {}> ({}, {}, {})", transB ? 1 : 0,
                     literal(static_cast<float>(in_.inRange(1, 4)) / 2), x.name, w, bias));
  }

  void conv() {
    const Val x = pick("float");
    if (x.shape.size() != 4) return unary();
    int64_t c = x.shape[1];
    int64_t group = in_.below(2) == 0 ? 1 : c;
    int64_t m = group * in_.inRange(1, 2);
    int64_t k = in_.inRange(1, 3), stride = in_.inRange(1, 2), pad = in_.inRange(0, 1),
            dilation = in_.inRange(1, 2);
    std::vector<int64_t> out = {x.shape[0], m};
    for (int axis = 2; axis < 4; ++axis) {
      int64_t size = (x.shape[axis] + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
      if (size < 1) return unary();
      out.push_back(size);
    }
    std::string w = floatInit({m, c / group, k, k});
    std::string bias = in_.below(2) ? ", " + floatInit({m}) : "";
    emit(fresh(), "float", out,
         fmt::format("Conv <group = {}, kernel_shape = [{}, {}], strides = [{}, {}], pads = [{}, "
                     "{}, {}, {}], dilations = [{}, {}]> ({}, {}{})",
                     group, k, k, stride, stride, pad, pad, pad, pad, dilation, dilation, x.name, w,
                     bias));
  }

  void reshape() {
    const Val x = pick();
    std::vector<int64_t> target;
    switch (in_.below(4)) {
      case 0:
        target = {-1};
        break;
      case 1:
        target = {x.shape[0], -1};
        break;
      case 2:
        target.assign(x.shape.rbegin(), x.shape.rend());
        break;
      default:
        for (int i = in_.inRange(1, 3); i > 0; --i) target.push_back(in_.hostileDim());
    }
    std::vector<int64_t> shape = target;
    std::vector<int64_t> given = target;
    for (int64_t& d : given) d = d == -1 ? 1 : d;
    int64_t known = numel(given);
    for (int64_t& d : shape) {
      if (d == -1) d = numel(x.shape) / std::max<int64_t>(known, 1);
    }
    std::string s = intInit("int64", target, false);
    emit(fresh(), x.type, shape, fmt::format("Reshape({}, {})", x.name, s));
  }

  void transpose() {
    const Val x = pick();
    std::vector<int64_t> perm(x.shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[in_.below(int(i))]);
    std::vector<int64_t> shape;
    for (int64_t p : perm) shape.push_back(x.shape[static_cast<size_t>(p)]);
    emit(fresh(), x.type, shape,
         fmt::format("Transpose <perm = [{}]> ({})", fmt::join(perm, ", "), x.name));
  }

  void concat() {
    const Val x = pick();
    int64_t axis = in_.below(static_cast<int>(x.shape.size()));
    std::vector<int64_t> shape = x.shape;
    shape[static_cast<size_t>(axis)] *= 2;
    if (numel(shape) > kMaxNumel) return unary();
    emit(fresh(), x.type, shape, fmt::format("Concat <axis = {}> ({}, {})", axis, x.name, x.name));
  }

  void softmax() {
    const Val x = pick("float");
    int rank = static_cast<int>(x.shape.size());
    int axis = in_.below(2 * rank) - rank;
    emit(fresh(), "float", x.shape, fmt::format("Softmax <axis = {}> ({})", axis, x.name));
  }

  void quantize() {
    const Val x = pick("float");
    bool isSigned = in_.below(2) == 0;
    std::string type = isSigned ? "int8" : "uint8";
    bool perAxis = in_.below(3) == 0;
    int64_t axis = perAxis ? in_.below(static_cast<int>(x.shape.size())) : 0;
    std::vector<int64_t> scaleShape;
    if (perAxis) scaleShape = {x.shape[static_cast<size_t>(axis)]};
    std::string scale = floatInit(scaleShape, true);
    std::vector<int64_t> zeros(static_cast<size_t>(numel(scaleShape)));
    for (int64_t& z : zeros) z = isSigned ? in_.inRange(-2, 2) : in_.inRange(0, 255);
    std::string zero = intInit(type, zeros, !perAxis);
    emit(fresh(), type, x.shape,
         fmt::format("QuantizeLinear <axis = {}> ({}, {}, {})", axis, x.name, scale, zero));
  }

  void dequantize() {
    const Val& q = pick(in_.below(2) ? "int8" : "uint8");
    if (q.type == "float") return quantize();
    const Val x = q;
    std::string scale = floatInit({}, true);
    std::string zero = intInit(x.type, {x.type == "int8" ? 0 : in_.inRange(0, 255)}, true);
    emit(fresh(), "float", x.shape,
         fmt::format("DequantizeLinear({}, {}, {})", x.name, scale, zero));
  }

  void expand() {
    const Val x = pick();
    std::vector<int64_t> shape = x.shape;
    for (int64_t& d : shape) {
      if (d == 1) d = in_.hostileDim();
    }
    std::string s = intInit("int64", shape, false);
    emit(fresh(), x.type, shape, fmt::format("Expand({}, {})", x.name, s));
  }

  void constantOfShape() {
    std::vector<int64_t> shape;
    for (int i = in_.inRange(1, 3); i > 0; --i) shape.push_back(in_.hostileDim());
    std::string s = intInit("int64", shape, false);
    std::string out = fresh();
    body_ += fmt::format("  {} = ConstantOfShape <value = float[1] {{{}}}> ({})\n", out,
                         literal(in_.value()), s);
    values_.push_back({out, "float", shape});
  }

  void reduce() {
    static const char* kOps[] = {"ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"};
    const Val x = pick("float");
    int64_t axis = in_.below(static_cast<int>(x.shape.size()));
    std::vector<int64_t> shape = x.shape;
    shape[static_cast<size_t>(axis)] = 1;
    emit(fresh(), "float", shape,
         fmt::format("{} <axes = [{}], keepdims = 1> ({})", kOps[in_.below(4)], axis, x.name));
  }

  void pool() {
    const Val x = pick("float");
    if (x.shape.size() != 4) return unary();
    int64_t k = in_.inRange(1, 3), stride = in_.inRange(1, 2);
    std::vector<int64_t> out = {x.shape[0], x.shape[1]};
    for (int axis = 2; axis < 4; ++axis) {
      int64_t size = (x.shape[axis] - k) / stride + 1;
      if (size < 1) return unary();
      out.push_back(size);
    }
    bool average = in_.below(2) == 0;
    emit(fresh(), "float", out,
         fmt::format("{} <kernel_shape = [{}, {}], strides = [{}, {}]> ({})",
                     average ? "AveragePool" : "MaxPool", k, k, stride, stride, x.name));
  }

  void cast() {
    static const std::pair<int, const char*> kTargets[] = {
        {1, "float"}, {6, "int32"}, {3, "int8"}, {2, "uint8"}};
    const Val x = pick();
    auto [code, type] = kTargets[in_.below(4)];
    emit(fresh(), type, x.shape, fmt::format("Cast <to = {}> ({})", code, x.name));
  }

  ByteReader& in_;
  std::vector<Val> values_;
  std::vector<std::string> initializers_;
  std::string body_;
  int counter_ = 0;
};

}  // namespace

RecipeModel buildRecipeModel(std::string_view bytes) {
  ByteReader in(bytes);
  return Builder(in).build();
}

}  // namespace qopt::fuzz
