#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "recipe/base/expected.hpp"

namespace deepinfer::launcher {

/// A node's `cpus` (manifest) or `--cpus` (embedded default): the CPUs its process may run on, in
/// Linux's list syntax (`taskset -c`, `/sys/devices/system/cpu/online`): "0", "0-3", "0,2,4-5".
/// Co-located nodes kept on cores of their own share no core time, e.g. vision encoders beside a
/// prefill node on one machine, as the seeds deploy them on machines of their own.

/// The CPU numbers of `text` in ascending order, without repeats; an error saying what is wrong.
expected<std::vector<int>, std::string> parse_cpu_list(std::string_view text);

/// `cpus` as a list again ("0-3,6").
std::string cpu_list_text(const std::vector<int>& cpus);

/// Keeps this process (every thread it has, and the threads they start) on `cpus`. Each CPU must
/// be one the process may use now (its mask when called: a node started under `taskset` stays
/// within it); an error names those it may use.
expected<bool, std::string> keep_process_on(const std::vector<int>& cpus);

} // namespace deepinfer::launcher
