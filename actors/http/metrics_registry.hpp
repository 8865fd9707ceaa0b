#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::actors::http {

/// Prometheus metrics (text exposition format 0.0.4): counters, gauges and histograms with
/// labels, plus collectors that produce samples at scrape time. Thread-safe throughout;
/// registration is meant for start-up, updates are lock-free (histograms take a short lock).
///
/// ```
/// auto& reqs = reg.add_counter("deepinfer_x_total", "X done.", {"kind"});
/// reqs.with({"fast"}).inc();
/// reg.add_collector("deepinfer_node_up", "1 if the node is alive.", metrics_registry::kind::gauge,
///                   {"node"}, [&] { return std::vector<metrics_registry::sample>{{{"n1"}, 1}}; });
/// std::string text = reg.render();
/// ```
/// Names must match [a-zA-Z_:][a-zA-Z0-9_:]* and label names [a-zA-Z_][a-zA-Z0-9_]*; a bad name,
/// a name registered twice with another kind or other labels, or a `with` call with the wrong
/// number of label values is a programming error and aborts.
class metrics_registry {
public:
  /// The Content-Type of `render()`'s output.
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

  /// Metric kinds, as in `# TYPE`.
  enum class kind { counter, gauge, histogram };

  /// A monotonically increasing value.
  class counter {
  public:
    /// Adds `v` (must be >= 0).
    void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
    /// The current value.
    double value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<double> value_{0.0};
  };

  /// A value that goes up and down.
  class gauge {
  public:
    /// Sets the value.
    void set(double v) { value_.store(v, std::memory_order_relaxed); }
    /// Adds `v`.
    void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
    /// Subtracts `v`.
    void dec(double v = 1.0) { value_.fetch_sub(v, std::memory_order_relaxed); }
    /// The current value.
    double value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<double> value_{0.0};
  };

  /// Observations counted in buckets with upper bounds (`le`), plus their sum and count.
  class histogram {
  public:
    /// Cumulative counts per bound (the last one is +Inf), sum and count, read consistently.
    struct snapshot {
      std::vector<uint64_t> cumulative;
      double sum = 0.0;
      uint64_t count = 0;
    };
    /// `bounds` are the finite upper bounds, ascending; they must outlive the histogram.
    explicit histogram(const std::vector<double>& bounds);
    /// Records one observation.
    void observe(double v);
    /// A consistent copy of the current state.
    snapshot read() const;

  private:
    const std::vector<double>& bounds_;
    mutable std::mutex mutex_;
    std::vector<uint64_t> counts_; // per bucket, not cumulative; last = above every bound
    double sum_ = 0.0;
    uint64_t count_ = 0;
  };

  /// One sample a collector reports: label values in the order of the family's label names.
  struct sample {
    std::vector<std::string> label_values;
    double value = 0.0;
  };

  /// Produces a family's samples at scrape time (e.g. the membership view). It runs on the
  /// scraping thread without any registry lock held; it may throw (the family is then skipped).
  using collector = std::function<std::vector<sample>()>;

  /// Internal: what every family renders through.
  class family_base {
  public:
    virtual ~family_base() = default;
    /// Appends this family's sample lines (not HELP/TYPE) to `out`.
    virtual void render(std::string& out) const = 0;
  };

  /// All metrics of one name, one per distinct combination of label values.
  template <class Metric>
  class family : public family_base {
  public:
    /// The metric for these label values (in the order of the label names), created at zero on
    /// first use. The reference stays valid for the registry's lifetime: cache it on hot paths.
    Metric& with(const std::vector<std::string>& label_values);
    /// The metric of a family without labels.
    Metric& with() { return with(std::vector<std::string>{}); }
    /// The sum of every child's value (counters and gauges; e.g. a pool's use over all ranks).
    double total() const;

    /// Internal; use `metrics_registry::add_*`.
    family(std::string name, std::vector<std::string> label_names, std::vector<double> bounds);
    void render(std::string& out) const override;

  private:
    std::string name_;
    std::vector<std::string> label_names_;
    std::vector<double> bounds_;
    mutable std::mutex mutex_;
    std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_;
  };

  /// Registers (or returns the existing) counter family `name`.
  family<counter>& add_counter(std::string name, std::string help, std::vector<std::string> labels = {});
  /// Registers (or returns the existing) gauge family `name`.
  family<gauge>& add_gauge(std::string name, std::string help, std::vector<std::string> labels = {});
  /// Registers (or returns the existing) histogram family `name` with finite upper `bounds`
  /// (sorted and deduplicated here; +Inf is implicit).
  family<histogram>& add_histogram(std::string name, std::string help, std::vector<std::string> labels,
                                   std::vector<double> bounds);
  /// Registers a family whose samples `fn` produces at each scrape; `type` is counter or gauge.
  void add_collector(std::string name, std::string help, kind type, std::vector<std::string> labels,
                     collector fn);

  /// Everything in Prometheus text format 0.0.4, families sorted by name, samples by labels.
  std::string render() const;

  /// Latency bounds in seconds from 1 ms to 120 s, fit for HTTP and LLM request latencies.
  static std::vector<double> default_latency_buckets();

private:
  struct entry {
    kind type;
    std::string help;
    std::vector<std::string> labels;
    std::unique_ptr<family_base> fam; // null for a collector
    collector fn;
  };
  entry& add(std::string name, std::string help, kind type, std::vector<std::string> labels,
             std::vector<double> bounds);

  mutable std::mutex mutex_;
  std::map<std::string, entry> entries_;
};

} // namespace deepinfer::actors::http
