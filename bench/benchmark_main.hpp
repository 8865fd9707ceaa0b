#pragma once

// The main of a Google Benchmark bench whose fixture must be built before any timed loop.

#include <benchmark/benchmark.h>

namespace deepinfer::bench {

/// Runs the registered benchmarks with `argv`'s flags after `prepare()` (loading a tokenizer,
/// building the input) so that its cost stays out of every timed loop; returns main's status.
template <class Prepare>
int run_benchmarks(int argc, char** argv, Prepare&& prepare) {
  prepare();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

} // namespace deepinfer::bench
