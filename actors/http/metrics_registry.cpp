#include "actors/http/metrics_registry.hpp"

#include "actors/log.hpp"
#include "recipe/base/assert.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace deepinfer::actors::http {

namespace {

/// A metric used against its registration: a bug in the caller.
[[noreturn]] void misuse(std::string_view what, std::string_view name) {
  DEEPINFER_ASSERT(false, "metrics misuse: {} name={}", what, name);
  std::abort();  // not reached
}

bool valid_name(std::string_view s, bool allow_colon) {
  auto head = [&](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (allow_colon && c == ':');
  };
  auto tail = [&](char c) { return head(c) || std::isdigit(static_cast<unsigned char>(c)); };
  return !s.empty() && head(s.front()) && std::all_of(s.begin() + 1, s.end(), tail);
}

void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v); // shortest round-trip form
    out.append(buf, ec == std::errc{} ? end : buf);
  }
}

// Label values escape backslash, double quote and newline; HELP escapes backslash and newline.
void append_escaped(std::string& out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (quote && c == '"')
      out += "\\\"";
    else
      out += c;
  }
}

// name{a="x",b="y"[,le="..."]} value
void append_sample(std::string& out, std::string_view name, const std::vector<std::string>& names,
                   const std::vector<std::string>& values, const std::string* le, double v) {
  out += name;
  if (!names.empty() || le) {
    out += '{';
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (i)
        out += ',';
      out += names[i];
      out += "=\"";
      append_escaped(out, values[i], true);
      out += '"';
    }
    if (le) {
      out += names.empty() ? "le=\"" : ",le=\"";
      out += *le;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  append_value(out, v);
  out += '\n';
}

std::string_view kind_name(metrics_registry::kind k) {
  switch (k) {
    case metrics_registry::kind::counter: return "counter";
    case metrics_registry::kind::gauge: return "gauge";
    case metrics_registry::kind::histogram: return "histogram";
  }
  return "untyped";
}

} // namespace

metrics_registry::histogram::histogram(const std::vector<double>& bounds)
  : bounds_(bounds), counts_(bounds.size() + 1, 0) {
  // nop
}

void metrics_registry::histogram::observe(double v) {
  // le is inclusive: v lands in the first bucket whose bound is >= v.
  auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  std::lock_guard guard{mutex_};
  ++counts_[i];
  sum_ += v;
  ++count_;
}

metrics_registry::histogram::snapshot metrics_registry::histogram::read() const {
  snapshot s;
  std::lock_guard guard{mutex_};
  uint64_t running = 0;
  for (auto c : counts_)
    s.cumulative.push_back(running += c);
  s.sum = sum_;
  s.count = count_;
  return s;
}

template <class Metric>
metrics_registry::family<Metric>::family(std::string name, std::vector<std::string> label_names,
                                         std::vector<double> bounds)
  : name_(std::move(name)), label_names_(std::move(label_names)), bounds_(std::move(bounds)) {
  // nop
}

template <class Metric>
Metric& metrics_registry::family<Metric>::with(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size())
    misuse("wrong number of label values", name_);
  std::lock_guard guard{mutex_};
  auto& slot = children_[label_values];
  if (!slot) {
    if constexpr (std::is_same_v<Metric, histogram>)
      slot = std::make_unique<Metric>(bounds_);
    else
      slot = std::make_unique<Metric>();
  }
  return *slot;
}

template <class Metric>
void metrics_registry::family<Metric>::render(std::string& out) const {
  std::lock_guard guard{mutex_};
  for (const auto& [values, metric] : children_) {
    if constexpr (std::is_same_v<Metric, histogram>) {
      auto snap = metric->read();
      std::string le;
      for (std::size_t i = 0; i < snap.cumulative.size(); ++i) {
        le.clear();
        append_value(le, i < bounds_.size() ? bounds_[i] : HUGE_VAL);
        append_sample(out, name_ + "_bucket", label_names_, values, &le,
                      static_cast<double>(snap.cumulative[i]));
      }
      append_sample(out, name_ + "_sum", label_names_, values, nullptr, snap.sum);
      append_sample(out, name_ + "_count", label_names_, values, nullptr, static_cast<double>(snap.count));
    } else {
      append_sample(out, name_, label_names_, values, nullptr, metric->value());
    }
  }
}

template <class Metric>
double metrics_registry::family<Metric>::total() const {
  double sum = 0.0;
  if constexpr (!std::is_same_v<Metric, histogram>) {
    std::lock_guard guard{mutex_};
    for (const auto& [values, metric] : children_)
      sum += metric->value();
  }
  return sum;
}

template class metrics_registry::family<metrics_registry::counter>;
template class metrics_registry::family<metrics_registry::gauge>;
template class metrics_registry::family<metrics_registry::histogram>;

metrics_registry::entry& metrics_registry::add(std::string name, std::string help, kind type,
                                               std::vector<std::string> labels, std::vector<double> bounds) {
  if (!valid_name(name, true))
    misuse("invalid metric name", name);
  for (const auto& l : labels)
    if (!valid_name(l, false) || l.starts_with("__") || (type == kind::histogram && l == "le"))
      misuse("invalid label name " + l, name);
  std::lock_guard guard{mutex_};
  if (auto i = entries_.find(name); i != entries_.end()) {
    if (i->second.type != type || i->second.labels != labels || !i->second.fam)
      misuse("registered twice with a different kind or labels", name);
    return i->second;
  }
  entry e{type, std::move(help), labels, nullptr, nullptr};
  switch (type) {
    case kind::counter: e.fam = std::make_unique<family<counter>>(name, labels, std::move(bounds)); break;
    case kind::gauge: e.fam = std::make_unique<family<gauge>>(name, labels, std::move(bounds)); break;
    case kind::histogram: e.fam = std::make_unique<family<histogram>>(name, labels, std::move(bounds)); break;
  }
  return entries_.emplace(std::move(name), std::move(e)).first->second;
}

metrics_registry::family<metrics_registry::counter>&
metrics_registry::add_counter(std::string name, std::string help, std::vector<std::string> labels) {
  return static_cast<family<counter>&>(*add(std::move(name), std::move(help), kind::counter, std::move(labels), {}).fam);
}

metrics_registry::family<metrics_registry::gauge>&
metrics_registry::add_gauge(std::string name, std::string help, std::vector<std::string> labels) {
  return static_cast<family<gauge>&>(*add(std::move(name), std::move(help), kind::gauge, std::move(labels), {}).fam);
}

metrics_registry::family<metrics_registry::histogram>&
metrics_registry::add_histogram(std::string name, std::string help, std::vector<std::string> labels,
                                std::vector<double> bounds) {
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  bounds.erase(std::remove_if(bounds.begin(), bounds.end(), [](double b) { return !std::isfinite(b); }),
               bounds.end());
  auto& e = add(std::move(name), std::move(help), kind::histogram, std::move(labels), std::move(bounds));
  return static_cast<family<histogram>&>(*e.fam);
}

void metrics_registry::add_collector(std::string name, std::string help, kind type,
                                     std::vector<std::string> labels, collector fn) {
  if (type == kind::histogram)
    misuse("collectors report counters or gauges only", name);
  if (!valid_name(name, true))
    misuse("invalid metric name", name);
  for (const auto& l : labels)
    if (!valid_name(l, false) || l.starts_with("__"))
      misuse("invalid label name " + l, name);
  std::lock_guard guard{mutex_};
  if (entries_.count(name))
    misuse("registered twice", name);
  entries_.emplace(std::move(name), entry{type, std::move(help), std::move(labels), nullptr, std::move(fn)});
}

std::string metrics_registry::render() const {
  // Entries are never removed and map nodes are stable, so pointers taken under the lock stay
  // valid; rendering without the lock lets collectors take their own locks freely.
  std::vector<std::pair<const std::string*, const entry*>> all;
  {
    std::lock_guard guard{mutex_};
    for (const auto& [name, e] : entries_)
      all.emplace_back(&name, &e);
  }
  std::string out;
  for (auto [name, e] : all) {
    std::string body;
    if (e->fam) {
      e->fam->render(body);
    } else {
      std::vector<sample> samples;
      try {
        samples = e->fn();
      } catch (const std::exception& ex) {
        log().warn("metrics collector failed name={} what={}", *name, ex.what());
        continue;
      }
      std::sort(samples.begin(), samples.end(),
                [](const sample& a, const sample& b) { return a.label_values < b.label_values; });
      for (const auto& s : samples) {
        if (s.label_values.size() != e->labels.size()) {
          log().warn("metrics collector sample with wrong label count name={}", *name);
          continue;
        }
        append_sample(body, *name, e->labels, s.label_values, nullptr, s.value);
      }
    }
    out += "# HELP ";
    out += *name;
    out += ' ';
    append_escaped(out, e->help, false);
    out += "\n# TYPE ";
    out += *name;
    out += ' ';
    out += kind_name(e->type);
    out += '\n';
    out += body;
  }
  return out;
}

std::vector<double> metrics_registry::default_latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

} // namespace deepinfer::actors::http
