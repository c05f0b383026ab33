#include "metrics/registry.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpuop::metrics {
namespace {

void AtomicAdd(std::atomic<double>& target, double delta) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.17g", v);
}

void AppendEscaped(std::string& out, absl::string_view value, bool is_help) {
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && !is_help) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

using Labels = std::vector<std::pair<std::string, std::string>>;

Labels Zip(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  Labels labels;
  labels.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) labels.emplace_back(names[i], values[i]);
  return labels;
}

}  // namespace

namespace internal {
void LabelCountMismatch(const std::string& name, size_t want, size_t got) {
  std::fprintf(stderr, "metric %s: %zu label values given for %zu label names\n", name.c_str(), got,
               want);
  std::abort();
}
}  // namespace internal

void Counter::Inc(double delta) { AtomicAdd(value_, delta); }

void Gauge::Add(double delta) { AtomicAdd(value_, delta); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, value);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s{.bounds = bounds_};
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> bounds;
  for (int i = 0; i < count; ++i, start *= factor) bounds.push_back(start);
  return bounds;
}

void TextWriter::Header(absl::string_view name, absl::string_view help, absl::string_view type) {
  absl::StrAppend(&out_, "# HELP ", name, " ");
  AppendEscaped(out_, help, /*is_help=*/true);
  absl::StrAppend(&out_, "\n# TYPE ", name, " ", type, "\n");
}

void TextWriter::Sample(absl::string_view name, const Labels& labels, double value) {
  out_.append(name.data(), name.size());
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      absl::StrAppend(&out_, labels[i].first, "=\"");
      AppendEscaped(out_, labels[i].second, /*is_help=*/false);
      out_ += '"';
    }
    out_ += '}';
  }
  absl::StrAppend(&out_, " ", FormatValue(value), "\n");
}

bool IsValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void Registry::Claim(const std::string& name) {
  if (!IsValidMetricName(name)) {
    std::fprintf(stderr, "metric name \"%s\" is invalid\n", name.c_str());
    std::abort();
  }
  for (const auto& n : names_) {
    if (n == name) {
      std::fprintf(stderr, "metric %s registered twice\n", name.c_str());
      std::abort();
    }
  }
  names_.push_back(name);
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  Claim(name);
  auto* family = new Family<Counter>(name, help, std::move(label_names),
                                     [] { return std::make_unique<Counter>(); });
  counters_.emplace_back(family);
  renderers_.push_back([family, name, help](TextWriter& w) {
    w.Header(name, help, "counter");
    absl::MutexLock l(&family->mu_);
    for (const auto& [values, c] : family->children_) {
      w.Sample(name, Zip(family->label_names_, values), c->Value());
    }
  });
  return *family;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  Claim(name);
  auto* family = new Family<Gauge>(name, help, std::move(label_names),
                                   [] { return std::make_unique<Gauge>(); });
  gauges_.emplace_back(family);
  renderers_.push_back([family, name, help](TextWriter& w) {
    w.Header(name, help, "gauge");
    absl::MutexLock l(&family->mu_);
    for (const auto& [values, g] : family->children_) {
      w.Sample(name, Zip(family->label_names_, values), g->Value());
    }
  });
  return *family;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<std::string> label_names,
                                          std::vector<double> bounds) {
  absl::MutexLock lock(&mu_);
  Claim(name);
  auto* family = new Family<Histogram>(name, help, std::move(label_names),
                                       [bounds] { return std::make_unique<Histogram>(bounds); });
  histograms_.emplace_back(family);
  renderers_.push_back([family, name, help](TextWriter& w) {
    w.Header(name, help, "histogram");
    absl::MutexLock l(&family->mu_);
    for (const auto& [values, h] : family->children_) {
      const Histogram::Snapshot s = h->Read();
      Labels labels = Zip(family->label_names_, values);
      labels.emplace_back("le", "");
      for (size_t i = 0; i <= s.bounds.size(); ++i) {
        labels.back().second = i < s.bounds.size() ? FormatValue(s.bounds[i]) : "+Inf";
        w.Sample(name + "_bucket", labels, static_cast<double>(s.cumulative[i]));
      }
      labels.pop_back();
      w.Sample(name + "_sum", labels, s.sum);
      w.Sample(name + "_count", labels, static_cast<double>(s.count));
    }
  });
  return *family;
}

void Registry::AddCollector(std::function<void(TextWriter&)> collector) {
  absl::MutexLock lock(&mu_);
  renderers_.push_back(std::move(collector));
}

std::string Registry::Render() const {
  TextWriter writer;
  absl::MutexLock lock(&mu_);
  for (const auto& render : renderers_) render(writer);
  return writer.Take();
}

}  // namespace gpuop::metrics
