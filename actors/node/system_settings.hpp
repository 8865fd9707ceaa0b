#pragma once

#include <chrono>
#include <string>

namespace deepinfer::actors {

/// The CAF actor-system settings of one node, built by launcher/ from the manifest and flags
/// (never from a CAF ini file). Heartbeat values must be identical on every node: a node that
/// expects heartbeats from a peer that sends none drops idle links (CAF 0.17 pitfall P5).
struct system_settings {
  /// Scheduler worker threads (CAF's default is max(4, cores), too many next to compute threads).
  unsigned scheduler_threads = 2;
  /// `sharing` gives ~3x lower network round trips than `stealing` on 2 cores (notes §4).
  std::string scheduler_policy = "sharing";
  /// 0 = the multiplexer thread does the I/O itself (lowest latency measured).
  unsigned middleman_workers = 0;
  /// A frozen or partitioned peer is only detected through heartbeats; both must be non-zero.
  std::chrono::milliseconds heartbeat_interval{250};
  std::chrono::milliseconds connection_timeout{1500};
  /// Every thread CAF starts (scheduler workers, detached actors such as the ranks and the engine
  /// threads they start, the middleman) runs SCHED_BATCH: it keeps its share of the CPU but no
  /// longer preempts on waking, so the HTTP I/O threads (and /health) answer at once while every
  /// core computes. false: the default Linux policy.
  bool batch_threads = true;
};

} // namespace deepinfer::actors
