#include "qopt/pass/Instrumentations.h"

#include <algorithm>
#include <chrono>
#include <ostream>
#include <unordered_set>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/ir/Printer.h"
#include "qopt/ir/Verifier.h"

namespace qopt {

// ---------------------------------------------------------------------------------------------
// PassTimer

void PassTimer::passFinished(const PassRun& run, const Model&, PassContext&) {
  auto it =
      std::find_if(rows_.begin(), rows_.end(), [&](const Row& r) { return r.pass == &run.pass; });
  if (it == rows_.end()) {
    rows_.push_back({&run.pass, 0, 0});
    it = rows_.end() - 1;
  }
  it->runs += 1;
  it->seconds += run.seconds;
}

void PassTimer::pipelineFinished(const Model&, PassContext&) {
  double total = 0;
  for (const Row& row : rows_) total += row.seconds;
  out_ << "===--- qopt pass timing (wall clock) ---===\n";
  out_ << fmt::format("  {:>12}  {:>7}  {:>5}  {}\n", "seconds", "%", "runs", "pass");
  for (const Row& row : rows_) {
    double percent = total > 0 ? 100.0 * row.seconds / total : 0.0;
    out_ << fmt::format("  {:>12.6f}  {:>6.1f}%  {:>5}  {}\n", row.seconds, percent, row.runs,
                        row.pass->name());
  }
  out_ << fmt::format("  {:>12.6f}  {:>6.1f}%  {:>5}  total\n", total, 100.0, "");
  out_.flush();
}

// ---------------------------------------------------------------------------------------------
// IrPrinter

void IrPrinter::passFinished(const PassRun& run, const Model& model, PassContext&) {
  if (!passNames_.empty() &&
      std::find(passNames_.begin(), passNames_.end(), run.pass.name()) == passNames_.end()) {
    return;
  }
  out_ << "// ----- IR after " << run.pass.name();
  if (run.iteration > 0) out_ << " (fixpoint round " << run.iteration << ")";
  out_ << " -----\n";
  printModel(model, out_);
  out_.flush();
}

// ---------------------------------------------------------------------------------------------
// EachPassVerifier

namespace {

void throwFirstIssue(const Model& model, ErrorKind kind, const std::string& when) {
  std::vector<VerifyIssue> issues = verifyModel(model);
  if (issues.empty()) return;
  std::string more =
      issues.size() > 1 ? fmt::format(" (and {} more problems)", issues.size() - 1) : std::string();
  throw Error(kind, model.sourcePath, issues[0].subject,
              fmt::format("{}: {}{}", when, issues[0].message, more));
}

}  // namespace

void EachPassVerifier::pipelineStarted(const Pipeline&, const Model& model, PassContext&) {
  throwFirstIssue(model, ErrorKind::Input, "the input model is not valid");
}

void EachPassVerifier::passFinished(const PassRun& run, const Model& model, PassContext&) {
  throwFirstIssue(model, ErrorKind::Verification,
                  fmt::format("the IR is not valid after pass '{}'", run.pass.name()));
}

// ---------------------------------------------------------------------------------------------
// RemarkPrinter

void RemarkPrinter::passFinished(const PassRun& run, const Model&, PassContext&) {
  for (const Remark& remark : run.result.remarks) {
    out_ << "qopt: remark: " << run.pass.name() << ": ";
    if (!remark.subject.empty()) out_ << remark.subject << ": ";
    out_ << remarkKindName(remark.kind) << ": " << remark.message << '\n';
  }
}

// ---------------------------------------------------------------------------------------------
// ReportBuilder

namespace {

Json typedScalar(const std::string& type, const std::string& text) {
  try {
    if (type == "bool") return Json(option_detail::Traits<bool>::parse(text));
    if (type == "int") return Json(option_detail::Traits<int64_t>::parse(text));
    if (type == "float") return Json(option_detail::Traits<double>::parse(text));
  } catch (const OptionValueError&) {
  }
  return Json(text);
}

Json optionsJson(const OptionSet& options) {
  Json out = Json::object();
  for (const OptionBase* option : options.optionList()) {
    out.append(option->name(), ReportBuilder::optionJson(*option));
  }
  return out;
}

Json statisticsJson(const Statistics& statistics) {
  Json out = Json::object();
  for (const auto& [name, value] : statistics.entries()) out.append(name, Json(value));
  return out;
}

void collectNames(const Graph& graph, std::vector<std::string>& names) {
  for (const Value* v : graph.inputs()) names.push_back(v->name());
  for (const Value* v : graph.initializers()) names.push_back(v->name());
  for (const Node* n : graph.nodes()) {
    for (const Value* v : n->outputs()) {
      if (!v->isAbsent()) names.push_back(v->name());
    }
    for (const Graph* g : n->subgraphs()) collectNames(*g, names);
  }
}

}  // namespace

Json ReportBuilder::optionJson(const OptionBase& option) {
  std::string type = option.typeName();
  OptionValue value = option.value();
  if (type.starts_with("list<")) {
    std::string element = type.substr(5, type.size() - 6);
    Json items = Json::array();
    for (const std::string& item : value.items) items.push(typedScalar(element, item));
    return items;
  }
  return typedScalar(type, value.items.empty() ? std::string() : value.items[0]);
}

void ReportBuilder::pipelineStarted(const Pipeline& pipeline, const Model& model, PassContext&) {
  report_ = Json::object();
  passes_ = Json::array();
  report_["pipeline"] = pipeline.str();
  started_ = std::chrono::steady_clock::now();
  inputNames_.clear();
  collectNames(model.graph(), inputNames_);
}

void ReportBuilder::passFinished(const PassRun& run, const Model&, PassContext&) {
  Json entry = Json::object();
  entry.append("name", run.pass.name());
  entry.append("options", optionsJson(run.pass));
  entry.append("changed", run.result.changed);
  entry.append("statistics", statisticsJson(run.result.statistics));
  Json remarks = Json::array();
  for (const Remark& remark : run.result.remarks) {
    Json r = Json::object();
    r.append("kind", std::string(remarkKindName(remark.kind)));
    r.append("subject", remark.subject);
    r.append("message", remark.message);
    remarks.push(std::move(r));
  }
  entry.append("remarks", std::move(remarks));
  entry.append("wall-time-ms", run.seconds * 1000.0);
  if (run.iteration > 0) entry.append("fixpoint-round", run.iteration);
  passes_.push(std::move(entry));
}

void ReportBuilder::fixpointFinished(const FixpointRun& run, const Model&, PassContext&) {
  Json entry = Json::object();
  entry.append("name", "fixpoint");
  entry.append("pipeline", run.group.str());
  entry.append("options", optionsJson(run.group));
  entry.append("changed", run.changed);
  entry.append("statistics", statisticsJson(run.statistics));
  entry.append("remarks", Json::array());
  entry.append("wall-time-ms", run.seconds * 1000.0);
  passes_.push(std::move(entry));
}

void ReportBuilder::pipelineFinished(const Model&, PassContext& context) {
  report_["passes"] = std::move(passes_);
  passes_ = Json::array();
  report_["total-wall-time-ms"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_)
          .count();
  Json warnings = Json::array();
  for (const std::string& w : context.diagnostics().warnings()) warnings.push(w);
  report_["warnings"] = std::move(warnings);
  report_["results"] = context.results();
  std::unordered_set<std::string> inputs(inputNames_.begin(), inputNames_.end());
  Json map = Json::object();
  for (const auto& [original, now] : context.nameMap().changes()) {
    if (!inputs.contains(original)) continue;
    map.append(original, now ? Json(*now) : Json());
  }
  report_["tensor-map"] = std::move(map);
}

}  // namespace qopt
